package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.CodebaseOptions;
import io.paddock.Codebases;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.workspace.internal.Tree;
import io.paddock.workspace.internal.TreeWalk;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@link Codebases} of a daemon. An upload is walked here, where the directory is, with the same rules as the
 * daemon's (ignore files, size limit, no link followed or leading out), and sent as a tar of exactly what
 * the walk kept; the daemon treats the tar as hostile and walks what it unpacked again.
 */
final class RemoteCodebases implements Codebases {
    /** How long an upload may take in all. */
    private static final Duration UPLOAD_LIMIT = Duration.ofMinutes(30);
    private final Http http;

    RemoteCodebases(Http http) {
        this.http = http;
    }

    @Override
    public CodebaseInfo create(String name, Path dir, CodebaseOptions options) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(options, "options");
        Path root;
        TreeWalk.Result walked;
        try {
            root = Objects.requireNonNull(dir, "dir").toRealPath(); // the caller named it: a link is followed, once
            walked = TreeWalk.walk(root, new TreeWalk.Options(options.maxFileSize().bytes(), options.ignore()));
        } catch (IOException e) {
            throw SandboxException.invalid("from", "'" + dir + "' cannot be read: " + e.getMessage());
        }
        TarStream.Builder tar = TarStream.builder();
        for (Tree.Entry e : walked.tree().entries()) {
            tar.entry(e.path(), root.resolve(e.path()));
        }
        Http.Query q = new Http.Query();
        options.ignore().forEach(p -> q.add("ignore", p));
        q.add("max_file_size", Long.toString(options.maxFileSize().bytes()));
        String path = "/v1/codebases/" + Http.encode(name);
        AtomicReference<TarStream> opened = new AtomicReference<>();
        HttpRequest req = http.request(http.uri(path, q), UPLOAD_LIMIT).header("Content-Type", "application/x-tar")
                .header("Accept", "application/json").POST(HttpRequest.BodyPublishers.ofInputStream(() -> {
                    TarStream s = tar.open();
                    opened.set(s);
                    return s;
                })).build();
        JsonNode answer;
        try {
            HttpResponse<byte[]> r = http.send(req, HttpResponse.BodyHandlers.ofByteArray(), "POST " + path);
            answer = Http.json(r, "POST " + path);
        } catch (SandboxException e) {
            TarStream s = opened.get();
            if (s != null && s.failure() != null) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "from: " + s.failure().getMessage(), s.failure());
            }
            throw e;
        } finally {
            TarStream s = opened.get();
            if (s != null) {
                s.close();
            }
        }
        CodebaseInfo sent = info(answer);
        // What this walk left out, then what the daemon's walk of the upload left out (normally nothing more).
        List<CodebaseInfo.Skipped> skipped = new ArrayList<>();
        walked.skipped().forEach(s -> skipped.add(new CodebaseInfo.Skipped(s.path(), s.reason().name()
                .toLowerCase(Locale.ROOT).replace('_', '-') + (s.detail().isEmpty() ? "" : ": " + s.detail()))));
        skipped.addAll(sent.skipped());
        return new CodebaseInfo(sent.name(), sent.revision(), sent.files(), sent.bytes(), sent.updated(), skipped);
    }

    @Override
    public List<CodebaseInfo> list() {
        List<CodebaseInfo> out = new ArrayList<>();
        http.call("GET", "/v1/codebases", null, null, Http.CONTROL_TIMEOUT).get("codebases").forEach(c -> out.add(info(c)));
        return out;
    }

    @Override
    public CodebaseInfo get(String name) {
        return info(http.call("GET", "/v1/codebases/" + Http.encode(Objects.requireNonNull(name, "name")), null, null,
                Http.CONTROL_TIMEOUT));
    }

    @Override
    public void remove(String name) {
        http.call("DELETE", "/v1/codebases/" + Http.encode(Objects.requireNonNull(name, "name")), null, null,
                Http.CONTROL_TIMEOUT);
    }

    @Override
    public List<CodebaseChange> diff(SandboxId sandbox) {
        JsonNode o = http.call("GET", "/v1/sandboxes/" + Objects.requireNonNull(sandbox, "sandbox").value()
                + "/codebase/diff", null, null, Http.CONTROL_TIMEOUT);
        List<CodebaseChange> out = new ArrayList<>();
        o.get("changes").forEach(c -> out.add(new CodebaseChange(c.get("path").asText(),
                CodebaseChange.Kind.valueOf(c.get("kind").asText().toUpperCase(Locale.ROOT)), c.get("writable").asBoolean())));
        return out;
    }

    @Override
    public CodebaseInfo commit(SandboxId sandbox) {
        return info(http.call("POST", "/v1/sandboxes/" + Objects.requireNonNull(sandbox, "sandbox").value()
                + "/codebase/commit", null, null, UPLOAD_LIMIT));
    }

    private static CodebaseInfo info(JsonNode o) {
        List<CodebaseInfo.Skipped> skipped = new ArrayList<>();
        if (o.has("skipped")) {
            o.get("skipped").forEach(s -> skipped.add(new CodebaseInfo.Skipped(s.get("path").asText(), s.get("reason").asText())));
        }
        return new CodebaseInfo(o.get("name").asText(), o.get("revision").asInt(), o.get("files").asLong(),
                o.get("bytes").asLong(), Instant.parse(o.get("updated").asText()), skipped);
    }
}
