package io.paddock.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.wire.Wire;
import io.paddock.internal.Printable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;

/** {@code paddock audit}: the daemon's audit log, read through {@code GET /v1/audit}. */
@Command(name = "audit", sortOptions = false,
        description = {"Print the daemon's audit log: one entry for each call that changed something (create, destroy, "
                + "exec, file writes, code runs, pause, resume, fork, snapshot, images, codebases, volumes...), with "
                + "who made it, on what, and its outcome.",
                "Never secrets, environment values, commands or file contents. The operator's token reads every "
                + "entry; a tenant's token reads only that tenant's own."},
        footer = {"", "Examples:", "  paddock audit --since 1h", "  paddock audit --sandbox sb-... --json | jq .action",
                "  paddock audit --tenant alice --action create_sandbox --limit 20"})
final class AuditCommand implements Callable<Integer> {
    private static final Pattern DURATION = Pattern.compile("\\d+(\\.\\d+)?(ms|s|m|h|d)?");

    @Mixin
    Connection connection;

    @Option(names = "--tenant", paramLabel = "NAME", description = "Only this tenant's entries.")
    String tenant;

    @Option(names = "--action", paramLabel = "ACTION", description = "Only this action (create_sandbox, delete_sandbox,"
            + " exec, exec_stream, write_file, ...).")
    String action;

    @Option(names = "--sandbox", paramLabel = "ID", description = "Only entries about this sandbox id.")
    String sandbox;

    @Option(names = "--since", paramLabel = "DURATION|TIME", description = "Only entries from this long ago (30m, 2h,"
            + " 7d) or from this time on (2025-01-31T12:00:00Z).")
    String since;

    @Option(names = "--limit", paramLabel = "N", description = "At most this many entries, the newest (default: 100,"
            + " at most 10000).")
    Integer limit;

    @Option(names = "--json", description = "Print each entry as it is logged: one JSON object per line, oldest first.")
    boolean json;

    @Override
    public Integer call() throws IOException {
        List<String> query = new ArrayList<>();
        add(query, "tenant", tenant);
        add(query, "action", action);
        add(query, "sandbox", sandbox);
        add(query, "since", since == null ? null : since(since, Instant.now()).toString());
        add(query, "limit", limit == null ? null : limit.toString());
        JsonNode page = get("/v1/audit" + (query.isEmpty() ? "" : "?" + String.join("&", query)));
        JsonNode entries = page.path("entries");
        if (json) {
            StringBuilder out = new StringBuilder();
            for (JsonNode e : entries) {
                out.append(Wire.JSON.writeValueAsString(e)).append('\n');
            }
            System.out.print(out);
            return 0;
        }
        String format = "%-24s  %-10s  %-16s  %-29s  %-19s  %7s  %s%n";
        System.out.printf(format, "TIME", "CALLER", "ACTION", "SANDBOX", "OUTCOME", "MS", "DETAIL");
        for (JsonNode e : entries) {
            System.out.printf(format, e.path("time").asText(), e.has("tenant") ? e.get("tenant").asText() : "(operator)",
                    e.path("action").asText(), e.path("sandbox").asText("-"), e.path("outcome").asText(),
                    e.path("duration_ms").asText(), detail(e));
        }
        return 0;
    }

    /** What else names the call's object, as {@code key=value} words. */
    private static String detail(JsonNode e) {
        List<String> words = new ArrayList<>();
        for (String k : List.of("path", "to", "name", "context", "shell", "port", "image", "target", "tags", "forks")) {
            JsonNode v = e.get(k);
            if (v != null) {
                words.add(k + "=" + Printable.name(v.isArray() ? join(v) : v.asText()));
            }
        }
        return words.isEmpty() ? "" : String.join(" ", words);
    }

    private static String join(JsonNode array) {
        List<String> parts = new ArrayList<>();
        array.forEach(n -> parts.add(n.asText()));
        return String.join(",", parts);
    }

    private static void add(List<String> query, String name, String value) {
        if (value != null) {
            query.add(name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8));
        }
    }

    /** {@code --since}: a duration before {@code now}, or a time (RFC 3339, with an offset or Z). */
    static Instant since(String text, Instant now) {
        String t = text.trim();
        if (DURATION.matcher(t.toLowerCase(java.util.Locale.ROOT)).matches()) {
            Duration d = SpecOptions.duration("since", t);
            return now.minus(d);
        }
        try {
            return OffsetDateTime.parse(t).toInstant();
        } catch (DateTimeParseException e) {
            throw SandboxException.invalid("since", "neither a duration (30m, 2h, 7d) nor a time (2025-01-31T12:00:00Z):"
                    + " '" + text + "'");
        }
    }

    /** GETs a path of the daemon's API with the token; an error answer becomes its SandboxException. */
    private JsonNode get(String pathAndQuery) throws IOException {
        String base = connection.url();
        URI uri;
        try {
            uri = URI.create(base.replaceAll("/+$", "") + pathAndQuery);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid("url", "not a URL: '" + base + "'");
        }
        if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getRawUserInfo() != null) {
            throw SandboxException.invalid("url", "an http or https URL without credentials is expected, got '" + base + "'");
        }
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
                .followRedirects(HttpClient.Redirect.NEVER).build();
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(2))
                .header("Authorization", "Bearer " + connection.token()).header("Accept", "application/json").GET().build();
        HttpResponse<byte[]> r;
        try {
            r = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "cannot reach the Paddock daemon at " + base + ": "
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted while reading the audit log");
        }
        if (r.statusCode() != 200) {
            throw Wire.exception(r.statusCode(), r.body());
        }
        return Wire.parse(r.body());
    }
}
