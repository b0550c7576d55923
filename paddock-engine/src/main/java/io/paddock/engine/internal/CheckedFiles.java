package io.paddock.engine.internal;

import io.paddock.FileInfo;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.internal.Validate;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/**
 * The file API of a sandbox as callers see it: validates every path (no NUL, no {@code .}/{@code ..}
 * components, no pseudo filesystems), requires a running sandbox, then hands the operation to the init,
 * which performs it inside the sandbox as the sandbox user.
 */
final class CheckedFiles implements SandboxFiles {
    private static final List<String> PSEUDO = List.of("/proc", "/sys", "/dev");

    private final ManagedSandbox sandbox;

    CheckedFiles(ManagedSandbox sandbox) {
        this.sandbox = sandbox;
    }

    private SandboxFiles init() {
        return sandbox.client().files();
    }

    static String path(String field, String path) {
        String clean = Validate.sandboxPath(field, path);
        for (String p : PSEUDO) {
            if (clean.equals(p) || clean.startsWith(p + "/")) {
                throw SandboxException.invalid(field, "'" + Validate.shorten(path) + "' is inside " + p
                        + ", a kernel pseudo filesystem; read it with exec instead");
            }
        }
        return clean;
    }

    @Override
    public byte[] read(String path) {
        return init().read(path("path", path));
    }

    @Override
    public String readString(String path) {
        return new String(read(path), StandardCharsets.UTF_8);
    }

    @Override
    public InputStream openRead(String path) {
        return init().openRead(path("path", path));
    }

    @Override
    public void write(String path, byte[] data) {
        Objects.requireNonNull(data, "data");
        init().write(path("path", path), data);
    }

    @Override
    public void writeString(String path, String text) {
        write(path, text.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void write(String path, InputStream data) {
        Objects.requireNonNull(data, "data");
        init().write(path("path", path), data);
    }

    @Override
    public List<FileInfo> list(String directory) {
        return init().list(path("path", directory));
    }

    @Override
    public FileInfo stat(String path) {
        return init().stat(path("path", path));
    }

    @Override
    public boolean exists(String path) {
        return init().exists(path("path", path));
    }

    @Override
    public void mkdir(String path) {
        init().mkdir(path("path", path));
    }

    @Override
    public void remove(String path) {
        init().remove(path("path", path));
    }

    @Override
    public void removeRecursive(String path) {
        init().removeRecursive(path("path", path));
    }

    @Override
    public void move(String from, String to) {
        init().move(path("from", from), path("to", to));
    }
}
