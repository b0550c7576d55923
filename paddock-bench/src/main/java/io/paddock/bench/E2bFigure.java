package io.paddock.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.Report.Figure;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeResult;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;

/**
 * P15, the E2B-compatible API (docs/COMPAT.md) beside Paddock's own remote API, both on a daemon on loopback in
 * this JVM: cold create → first stdout byte of {@code sh -c 'echo hi'} (E2B: {@code POST /sandboxes}, then envd's
 * {@code process.Process/Start} as the SDK sends it, Connect JSON streaming, until the first {@code data} event;
 * Paddock: {@code remote.create} then {@code start}, until the first byte), and a code round trip in a warm Python
 * context ({@code runCode('1 + 1')}: {@code POST /execute} to its {@code end_of_execution} line, beside the remote
 * code API's {@code context.run}). Samples interleaved. The requests are made here with java.net.http exactly as
 * the npm SDK makes them (headers, bodies, framing), so the figure measures the daemon, not Node.
 */
final class E2bFigure {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Report report;
    private final PrintStream out;
    private final SandboxSpec spec;
    private final int creates;
    private final int runs;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    E2bFigure(Report report, PrintStream out, SandboxSpec spec, int creates, int runs) {
        this.report = report;
        this.out = out;
        this.spec = spec;
        this.creates = creates;
        this.runs = runs;
    }

    void run(Paddock plain) throws Exception {
        Figure f = report.figure("P15", "E2B-compatible API beside Paddock's remote API (daemon on loopback)",
                "E2B create -> first byte and runCode round trip each <= Paddock remote + 5 ms (p50)");
        String token = "bench-" + HexFormat.of().formatHex(new SecureRandom().generateSeed(16));
        try (PaddockServer server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token)
                .e2b("127.0.0.1", 0).e2bTemplate("code-interpreter-v1", "host").build(), plain);
             Paddock remote = Paddock.connect(server.url(), token)) {
            URI e2b = server.e2bUrl().orElseThrow();
            List<Long> e2bCreate = new ArrayList<>();
            List<Long> remoteCreate = new ArrayList<>();
            for (int i = 0; i < creates + 2; i++) {
                long a = e2bCreateFirstByte(e2b, token);
                long b = remoteCreateFirstByte(remote);
                if (i >= 2) { // two warm-ups each
                    e2bCreate.add(a);
                    remoteCreate.add(b);
                }
            }
            List<Long> e2bRun = new ArrayList<>();
            List<Long> remoteRun = new ArrayList<>();
            String id = createE2b(e2b, token, "code-interpreter-v1");
            try (Sandbox sb = remote.create(spec); CodeInterpreter code = CodeInterpreter.of(sb);
                 CodeContext ctx = code.createContext("python")) {
                for (int i = 0; i < runs + 3; i++) {
                    long a = runCode(e2b, token, id);
                    long t0 = System.nanoTime();
                    CodeResult r = ctx.run("1 + 1");
                    long b = System.nanoTime() - t0;
                    if (!r.value().map(v -> v.text().equals("2")).orElse(false)) {
                        throw new IllegalStateException("remote context answered " + r);
                    }
                    if (i >= 3) {
                        e2bRun.add(a);
                        remoteRun.add(b);
                    }
                }
            } finally {
                kill(e2b, token, id);
            }
            Stats ec = Stats.of(e2bCreate);
            Stats rc = Stats.of(remoteCreate);
            Stats er = Stats.of(e2bRun);
            Stats rr = Stats.of(remoteRun);
            f.paddock.put("cold create -> first byte, E2B API", ec);
            f.paddock.put("cold create -> first byte, Paddock remote API", rc);
            f.paddock.put("runCode('1 + 1') round trip, E2B API", er);
            f.paddock.put("context.run('1 + 1') round trip, Paddock remote API", rr);
            f.ratio("create -> first byte, E2B / remote (p50)", ec.p50() / rc.p50());
            f.ratio("code round trip, E2B / remote (p50)", er.p50() / rr.p50());
            f.check("E2B create -> first byte p50 <= remote + 5 ms", ec.p50() - rc.p50() <= 5000,
                    String.format(Locale.ROOT, "%+.3f ms", (ec.p50() - rc.p50()) / 1000));
            f.check("E2B runCode p50 <= remote + 5 ms", er.p50() - rr.p50() <= 5000,
                    String.format(Locale.ROOT, "%+.3f ms", (er.p50() - rr.p50()) / 1000));
            f.notes.add("E2B side: POST /sandboxes (X-API-Key), then process.Process/Start with application/connect+json"
                    + " through the listener's router (E2b-Sandbox-Id, X-Access-Token), timed to the first data event;"
                    + " the E2B SDK's own overhead (Node) is not included; the E2B sandbox is destroyed outside the timing");
            f.notes.add("code: the E2B default Python context and a remote context, both warm (three runs first)");
            out.printf(Locale.ROOT, "  P15 create->first byte p50 E2B %.3f ms, remote %.3f ms; code p50 E2B %.3f ms, remote %.3f ms%n",
                    ec.p50() / 1000, rc.p50() / 1000, er.p50() / 1000, rr.p50() / 1000);
        }
    }

    private long remoteCreateFirstByte(Paddock remote) throws Exception {
        long t0 = System.nanoTime();
        try (Sandbox sb = remote.create(spec);
             ExecProcess p = sb.start(ExecRequest.builder().argv("/bin/sh", "-c", "echo hi").build())) {
            p.closeStdin();
            if (p.stdout().read() < 0) {
                throw new IllegalStateException("no output");
            }
            long t = System.nanoTime() - t0;
            p.awaitExit(Duration.ofSeconds(10));
            return t;
        }
    }

    private long e2bCreateFirstByte(URI e2b, String key) throws Exception {
        long t0 = System.nanoTime();
        JsonNode created = post(e2b, "/sandboxes", key, "{\"templateID\":\"base\",\"timeout\":120}");
        String id = created.get("sandboxID").asText();
        String access = created.get("envdAccessToken").asText();
        try {
            byte[] msg = "{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"echo hi\"],\"envs\":{}},\"stdin\":false}"
                    .getBytes(StandardCharsets.UTF_8);
            ByteBuffer env = ByteBuffer.allocate(5 + msg.length).put((byte) 0).putInt(msg.length).put(msg);
            HttpRequest req = HttpRequest.newBuilder(e2b.resolve("/process.Process/Start")).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/connect+json").header("Connect-Protocol-Version", "1")
                    .header("E2b-Sandbox-Id", id).header("E2b-Sandbox-Port", "49983").header("X-Access-Token", access)
                    .header("Keepalive-Ping-Interval", "50")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(env.array())).build();
            HttpResponse<InputStream> res = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
            if (res.statusCode() != 200) {
                throw new IllegalStateException("Start answered " + res.statusCode() + ": "
                        + new String(res.body().readAllBytes(), StandardCharsets.UTF_8));
            }
            long t;
            try (DataInputStream in = new DataInputStream(res.body())) {
                while (true) {
                    int flags = in.readUnsignedByte();
                    byte[] body = new byte[in.readInt()];
                    in.readFully(body);
                    if ((flags & 2) != 0) {
                        throw new IllegalStateException("the stream ended before any output: " + new String(body, StandardCharsets.UTF_8));
                    }
                    if (JSON.readTree(body).path("event").has("data")) {
                        t = System.nanoTime() - t0;
                        break;
                    }
                }
                in.readAllBytes(); // to the end of the command
            }
            return t;
        } finally {
            kill(e2b, key, id);
        }
    }

    private String createE2b(URI e2b, String key, String template) throws Exception {
        return post(e2b, "/sandboxes", key, "{\"templateID\":\"" + template + "\",\"timeout\":600}").get("sandboxID").asText();
    }

    private long runCode(URI e2b, String key, String id) throws Exception {
        JsonNode info = get(e2b, "/sandboxes/" + id, key);
        String access = info.get("envdAccessToken").asText();
        long t0 = System.nanoTime();
        HttpRequest req = HttpRequest.newBuilder(e2b.resolve("/execute")).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json").header("E2b-Sandbox-Id", id).header("E2b-Sandbox-Port", "49999")
                .header("X-Access-Token", access).header("E2B-Traffic-Access-Token", access)
                .POST(HttpRequest.BodyPublishers.ofString("{\"code\":\"1 + 1\",\"language\":\"python\"}")).build();
        HttpResponse<String> res = http.send(req, HttpResponse.BodyHandlers.ofString());
        long t = System.nanoTime() - t0;
        if (res.statusCode() != 200 || !res.body().contains("\"text\":\"2\"") || !res.body().contains("end_of_execution")) {
            throw new IllegalStateException("/execute answered " + res.statusCode() + ": " + res.body());
        }
        return t;
    }

    private JsonNode post(URI e2b, String path, String apiKey, String body) throws IOException, InterruptedException {
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(e2b.resolve(path)).timeout(Duration.ofSeconds(60))
                .header("X-API-Key", apiKey).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        if (res.statusCode() / 100 != 2) {
            throw new IllegalStateException("POST " + path + " answered " + res.statusCode() + ": " + res.body());
        }
        return JSON.readTree(res.body());
    }

    private JsonNode get(URI e2b, String path, String key) throws IOException, InterruptedException {
        HttpResponse<String> res = http.send(HttpRequest.newBuilder(e2b.resolve(path)).timeout(Duration.ofSeconds(60))
                .header("X-API-Key", key).build(), HttpResponse.BodyHandlers.ofString());
        if (res.statusCode() != 200) {
            throw new IllegalStateException("GET " + path + " answered " + res.statusCode() + ": " + res.body());
        }
        return JSON.readTree(res.body());
    }

    private void kill(URI e2b, String apiKey, String id) throws IOException, InterruptedException {
        http.send(HttpRequest.newBuilder(e2b.resolve("/sandboxes/" + id)).timeout(Duration.ofSeconds(60))
                .header("X-API-Key", apiKey).DELETE().build(), HttpResponse.BodyHandlers.discarding());
    }
}
