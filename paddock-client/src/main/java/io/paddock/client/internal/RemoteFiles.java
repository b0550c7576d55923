package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.wire.Wire;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/**
 * {@link SandboxFiles} over the daemon's {@code /files} endpoints. File contents travel as raw bodies and
 * are streamed both ways ({@link #openRead}, {@link #write(String, InputStream)}); paths travel as a
 * percent-encoded query parameter and are checked and resolved by the daemon, inside the sandbox.
 */
final class RemoteFiles implements SandboxFiles {
    private final Http http;
    private final String path;

    RemoteFiles(Http http, String sandboxPath) {
        this.http = http;
        this.path = sandboxPath + "/files";
    }

    private static Http.Query at(String file) {
        return new Http.Query().add("path", Objects.requireNonNull(file, "path"));
    }

    @Override
    public byte[] read(String file) {
        HttpResponse<byte[]> r = http.send(http.request(http.uri(path, at(file)), null).GET().build(),
                HttpResponse.BodyHandlers.ofByteArray(), "GET " + path);
        if (r.statusCode() / 100 != 2) {
            throw Wire.exception(r.statusCode(), r.body() == null ? new byte[0] : r.body());
        }
        return r.body();
    }

    @Override
    public String readString(String file) {
        return new String(read(file), StandardCharsets.UTF_8);
    }

    @Override
    public InputStream openRead(String file) {
        HttpResponse<InputStream> r = http.send(http.request(http.uri(path, at(file)), null).GET().build(),
                HttpResponse.BodyHandlers.ofInputStream(), "GET " + path);
        Http.check(r);
        return new FilterInputStream(r.body()) {
            @Override
            public int read() throws IOException {
                try {
                    return super.read();
                } catch (IOException e) {
                    throw broken(e);
                }
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                try {
                    return super.read(b, off, len);
                } catch (IOException e) {
                    throw broken(e);
                }
            }

            private IOException broken(IOException e) {
                return new IOException("reading " + file + " from the daemon at " + http.base() + " failed: "
                        + e.getMessage(), e);
            }
        };
    }

    @Override
    public void write(String file, byte[] data) {
        Objects.requireNonNull(data, "data");
        put(file, HttpRequest.BodyPublishers.ofByteArray(data), null);
    }

    @Override
    public void writeString(String file, String text) {
        write(file, text.getBytes(StandardCharsets.UTF_8));
    }

    /** Streams {@code data} as the request body (chunked); it is read to its end and not closed. */
    @Override
    public void write(String file, InputStream data) {
        Objects.requireNonNull(data, "data");
        Source source = new Source(data);
        put(file, HttpRequest.BodyPublishers.ofInputStream(() -> source), source);
    }

    private void put(String file, HttpRequest.BodyPublisher body, Source source) {
        HttpRequest req = http.request(http.uri(path, at(file)), null)
                .header("Content-Type", "application/octet-stream").PUT(body).build();
        HttpResponse<byte[]> r;
        try {
            r = http.send(req, HttpResponse.BodyHandlers.ofByteArray(), "PUT " + path);
        } catch (SandboxException e) {
            if (source != null && source.failure != null) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                        file + ": reading the data to write failed: " + source.failure.getMessage(), source.failure);
            }
            throw e;
        }
        Http.json(r, "PUT " + path);
    }

    @Override
    public List<FileInfo> list(String directory) {
        return Wire.fileList(http.call("GET", path + "/list", at(directory), null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public FileInfo stat(String file) {
        return Wire.fileInfo(http.call("GET", path + "/stat", at(file), null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public boolean exists(String file) {
        try {
            stat(file);
            return true;
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    @Override
    public void mkdir(String directory) {
        post("/mkdir", Wire.object().put("path", Objects.requireNonNull(directory, "path")));
    }

    @Override
    public void remove(String file) {
        post("/remove", Wire.object().put("path", Objects.requireNonNull(file, "path")).put("recursive", false));
    }

    @Override
    public void removeRecursive(String file) {
        post("/remove", Wire.object().put("path", Objects.requireNonNull(file, "path")).put("recursive", true));
    }

    @Override
    public void move(String from, String to) {
        post("/move", Wire.object().put("from", Objects.requireNonNull(from, "from"))
                .put("to", Objects.requireNonNull(to, "to")));
    }

    private JsonNode post(String sub, JsonNode body) {
        return http.call("POST", path + sub, null, body, Http.CONTROL_TIMEOUT);
    }

    /**
     * The caller's stream as the upload reads it: never closed (the caller owns it), and its own read
     * failures remembered, so that they are reported as such rather than as a transport failure.
     */
    private static final class Source extends FilterInputStream {
        volatile IOException failure;

        Source(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            try {
                return super.read();
            } catch (IOException e) {
                failure = e;
                throw e;
            } catch (UncheckedIOException e) {
                failure = e.getCause();
                throw e;
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                return super.read(b, off, len);
            } catch (IOException e) {
                failure = e;
                throw e;
            } catch (UncheckedIOException e) {
                failure = e.getCause();
                throw e;
            }
        }

        @Override
        public void close() {
            // the caller's stream stays open
        }
    }
}
