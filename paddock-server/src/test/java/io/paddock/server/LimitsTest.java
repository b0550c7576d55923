package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.wire.Wire;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** A57–A60: quotas, body limits, slow clients and slow stream consumers. */
class LimitsTest {
    private static final long MAX_UPLOAD = 1 << 20;
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start(b -> b.maxUploadBytes(MAX_UPLOAD).idleTimeout(Duration.ofSeconds(2)), 2);
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static String errorCode(String body) {
        return Wire.parse(body.getBytes(StandardCharsets.UTF_8)).get("error").get("code").asText();
    }

    private static String auth() {
        return "Authorization: Bearer " + f.token;
    }

    /** A57: past the engine's maximum, creates get 429 with Retry-After; the running sandboxes are untouched. */
    @Test
    void tooManySandboxes() throws Exception {
        String a = f.createSandboxId();
        String b = f.createSandboxId();
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<HttpResponse<String>>> burst = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                burst.add(pool.submit(() -> f.post("/v1/sandboxes", Fixture.SMALL + "}")));
            }
            for (Future<HttpResponse<String>> r : burst) {
                HttpResponse<String> resp = r.get();
                assertThat(resp.statusCode()).as(resp.body()).isEqualTo(429);
                assertThat(resp.headers().firstValue("Retry-After")).hasValue("1");
                assertThat(errorCode(resp.body())).isEqualTo("RESOURCE_EXHAUSTED");
            }
        } finally {
            pool.shutdownNow();
        }
        for (String id : List.of(a, b)) {
            HttpResponse<String> r = f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"echo\",\"alive\"]}");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(json(r).get("status").get("exit_code").asInt()).isZero();
        }
        f.delete("/v1/sandboxes/" + a);
        f.delete("/v1/sandboxes/" + b);
    }

    /** A58: a 10 MB JSON body is refused from its Content-Length, before it is read. */
    @Test
    void hugeJsonBodyIsRefusedEarly() throws IOException {
        long[] sent = new long[1];
        long start = System.nanoTime();
        RawHttp.Reply r = RawHttp.exchange(f.server.url(), "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n" + auth()
                + "\r\nContent-Type: application/json\r\nContent-Length: " + (10 << 20), out -> {
                    byte[] chunk = new byte[64 * 1024];
                    for (int i = 0; i < 160; i++) {
                        out.write(chunk);
                        sent[0] += chunk.length;
                    }
                }, 10_000);
        assertThat(r.status()).isEqualTo(413);
        assertThat(errorCode(r.body())).isEqualTo("RESOURCE_EXHAUSTED");
        assertThat(System.nanoTime() - start).isLessThan(5_000_000_000L);
    }

    /** A58: a chunked JSON body has no length: it is cut off while streaming, just past the limit. */
    @Test
    void endlessChunkedJsonIsCutOff() throws IOException {
        RawHttp.Reply r = RawHttp.exchange(f.server.url(), "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n" + auth()
                + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked", out -> {
                    byte[] chunk = ("10000\r\n" + " ".repeat(0x10000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
                    for (int i = 0; i < 10_000; i++) { // 640 MB unless the server stops it
                        out.write(chunk);
                    }
                }, 10_000);
        assertThat(r.status()).isEqualTo(413);
        assertThat(errorCode(r.body())).isEqualTo("RESOURCE_EXHAUSTED");
    }

    /** A58: nesting depth is capped by the shared JSON mapper. */
    @Test
    void deeplyNestedJsonIsRefused() {
        HttpResponse<String> r = f.post("/v1/sandboxes", "{\"labels\":" + "[".repeat(5000) + "]".repeat(5000) + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(errorCode(r.body())).isEqualTo("INVALID_ARGUMENT");
        assertThat(json(r).get("error").get("message").asText()).containsIgnoringCase("depth");
    }

    /** A58: uploads past the limit get 413, whether announced or chunked, and leave no file behind. */
    @Test
    void oversizedUploadLeavesNothing() throws Exception {
        String id = f.createSandboxId();
        String files = "/v1/sandboxes/" + id + "/files";
        try {
            RawHttp.Reply announced = RawHttp.exchange(f.server.url(), "PUT " + files + "?path=/workspace/up/a.bin HTTP/1.1\r\n"
                    + "Host: x\r\n" + auth() + "\r\nContent-Length: " + (2 * MAX_UPLOAD), out -> out.write(new byte[4096]), 10_000);
            assertThat(announced.status()).isEqualTo(413);
            assertThat(errorCode(announced.body())).isEqualTo("RESOURCE_EXHAUSTED");

            RawHttp.Reply chunked = RawHttp.exchange(f.server.url(), "PUT " + files + "?path=/workspace/up/b.bin HTTP/1.1\r\n"
                    + "Host: x\r\n" + auth() + "\r\nTransfer-Encoding: chunked", out -> {
                        byte[] chunk = ("8000\r\n" + "y".repeat(0x8000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
                        for (int i = 0; i < 1000; i++) { // 32 MiB unless the server stops it
                            out.write(chunk);
                        }
                    }, 20_000);
            assertThat(chunked.status()).as(chunked.body()).isEqualTo(413);
            assertThat(errorCode(chunked.body())).isEqualTo("RESOURCE_EXHAUSTED");

            assertThat(f.get(files + "/stat?path=/workspace/up/a.bin").statusCode()).isEqualTo(404);
            assertThat(f.get(files + "/stat?path=/workspace/up/b.bin").statusCode()).isEqualTo(404);
            HttpResponse<String> dir = f.get(files + "/list?path=/workspace/up");
            if (dir.statusCode() == 200) { // the parent may have been created; it must hold no partial file
                assertThat(json(dir).get("entries")).as(dir.body()).isEmpty();
            } else {
                assertThat(dir.statusCode()).isEqualTo(404);
            }
            // exactly the limit is fine
            assertThat(f.put(files + "?path=/workspace/up/ok.bin", new byte[(int) MAX_UPLOAD]).statusCode()).isEqualTo(204);
        } finally {
            f.delete("/v1/sandboxes/" + id);
        }
    }

    /**
     * A58: a client that writes its whole body before it reads (Python's http.client, most simple clients) still
     * gets the 413, not a reset connection: the daemon answers at once, then reads and drops the rest of the body
     * (within a bound) before it closes, as nginx's lingering close does.
     */
    @Test
    void aClientThatWritesTheWholeBodyBeforeReadingStillGetsThe413() throws Exception {
        String id = f.createSandboxId();
        String files = "/v1/sandboxes/" + id + "/files";
        try {
            byte[] body = new byte[16 << 20];
            RawHttp.Reply announced = RawHttp.writeThenRead(f.server.url(), "PUT " + files
                    + "?path=/workspace/whole.bin HTTP/1.1\r\nHost: x\r\n" + auth() + "\r\nContent-Length: " + body.length,
                    body, 20_000);
            assertThat(announced.status()).as(announced.body()).isEqualTo(413);
            assertThat(errorCode(announced.body())).isEqualTo("RESOURCE_EXHAUSTED");
            assertThat(announced.headers()).containsEntry("connection", "close");

            byte[] json = ("{\"labels\":{\"a\":\"" + "x".repeat(16 << 20) + "\"}}").getBytes(StandardCharsets.UTF_8);
            RawHttp.Reply create = RawHttp.writeThenRead(f.server.url(), "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
                    + auth() + "\r\nContent-Type: application/json\r\nContent-Length: " + json.length, json, 20_000);
            assertThat(create.status()).as(create.body()).isEqualTo(413);

            ByteArrayOutputStream chunks = new ByteArrayOutputStream();
            byte[] chunk = ("8000\r\n" + "y".repeat(0x8000) + "\r\n").getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < 512; i++) { // 16 MiB
                chunks.write(chunk);
            }
            chunks.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            RawHttp.Reply chunked = RawHttp.writeThenRead(f.server.url(), "PUT " + files
                    + "?path=/workspace/whole.bin HTTP/1.1\r\nHost: x\r\n" + auth() + "\r\nTransfer-Encoding: chunked",
                    chunks.toByteArray(), 20_000);
            assertThat(chunked.status()).as(chunked.body()).isEqualTo(413);
            assertThat(f.get(files + "/stat?path=/workspace/whole.bin").statusCode()).isEqualTo(404);
        } finally {
            f.delete("/v1/sandboxes/" + id);
        }
    }

    /**
     * A58: uploads stream into the sandbox as they arrive; the daemon never holds the body. Shown by pausing
     * an upload part-way and finding its bytes already in the sandbox's (memory-backed) workspace.
     */
    @Test
    void uploadsStreamIntoTheSandbox() throws Exception {
        try (PaddockServer big = PaddockServer.start(ServerOptions.builder().port(0).token(f.token).build(), f.paddock)) {
            JsonNode info = json(f.post("/v1/sandboxes", "{\"memory\":\"256m\",\"disk\":\"200m\",\"pids\":64,"
                    + "\"timeout_ms\":120000}"));
            String id = info.get("id").asText();
            try {
                long total = 96L << 20;
                long pauseAt = 64L << 20;
                java.util.concurrent.CountDownLatch paused = new java.util.concurrent.CountDownLatch(1);
                java.util.concurrent.CountDownLatch resume = new java.util.concurrent.CountDownLatch(1);
                InputStream body = new InputStream() {
                    long sent;

                    @Override
                    public int read() {
                        throw new UnsupportedOperationException();
                    }

                    @Override
                    public int read(byte[] b, int off, int len) {
                        if (sent == total) {
                            return -1;
                        }
                        if (sent == pauseAt) {
                            paused.countDown();
                            try {
                                resume.await();
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                                return -1;
                            }
                        }
                        int n = (int) Math.min(len, Math.min(total, sent < pauseAt ? pauseAt : total) - sent);
                        java.util.Arrays.fill(b, off, off + n, (byte) 'z');
                        sent += n;
                        return n;
                    }
                };
                java.util.concurrent.CompletableFuture<HttpResponse<String>> upload = f.http.sendAsync(
                        java.net.http.HttpRequest.newBuilder(java.net.URI.create(big.url() + "/v1/sandboxes/" + id
                                + "/files?path=/workspace/big.bin")).header("Authorization", "Bearer " + f.token)
                                .PUT(java.net.http.HttpRequest.BodyPublishers.ofInputStream(() -> body)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(paused.await(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                long usedKib = 0;
                for (int i = 0; i < 100 && usedKib < 60 * 1024; i++) {
                    JsonNode df = json(f.post("/v1/sandboxes/" + id + "/exec",
                            "{\"argv\":[\"sh\",\"-c\",\"df -k /workspace | tail -1\"]}"));
                    String line = new String(java.util.Base64.getDecoder().decode(df.get("stdout").asText()),
                            StandardCharsets.UTF_8).trim();
                    usedKib = Long.parseLong(line.split("\\s+")[2]);
                    Thread.sleep(100);
                }
                assertThat(usedKib).as("KiB already in the sandbox while the upload is paused").isGreaterThan(60 * 1024);
                assertThat(f.get("/v1/sandboxes/" + id + "/files/stat?path=/workspace/big.bin").statusCode())
                        .as("not visible under its name before it is complete").isEqualTo(404);
                resume.countDown();
                HttpResponse<String> done = upload.get(60, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(done.statusCode()).as(done.body()).isEqualTo(204);
                assertThat(json(f.get("/v1/sandboxes/" + id + "/files/stat?path=/workspace/big.bin")).get("size").asLong())
                        .isEqualTo(total);
            } finally {
                f.delete("/v1/sandboxes/" + id);
            }
        }
    }

    /**
     * A streamed run quiet for longer than the idle timeout (2 s here), before its first event and after it,
     * is kept alive by heartbeats (blank lines) and ends with its {@code done} event; nothing is cut.
     */
    @Test
    void aQuietStreamedRunIsKeptAliveByHeartbeats() {
        String id = f.createSandboxId();
        try {
            long start = System.nanoTime();
            HttpResponse<String> r = f.send(f.request("/v1/sandboxes/" + id + "/code/run")
                    .header("Content-Type", "application/json").header("Accept", "application/x-ndjson")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"language\":\"python\",\"code\":\"import time\\n"
                            + "time.sleep(4)\\nprint('a', flush=True)\\ntime.sleep(4)\\nprint('b')\"}")).build());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(System.nanoTime() - start).isGreaterThan(Duration.ofSeconds(8).toNanos());
            List<String> lines = List.of(r.body().split("\n", -1));
            List<String> events = lines.stream().filter(l -> !l.isEmpty()).toList();
            // a heartbeat about every 2/3 s of silence: before the first event, and between the two
            assertThat(lines.subList(0, lines.indexOf(events.get(0))).size()).as(r.body()).isGreaterThanOrEqualTo(3);
            assertThat(lines.indexOf(events.get(1)) - lines.indexOf(events.get(0)) - 1).as(r.body()).isGreaterThanOrEqualTo(3);
            JsonNode done = Wire.parse(events.get(events.size() - 1).getBytes(StandardCharsets.UTF_8));
            assertThat(done.get("type").asText()).isEqualTo("done");
            assertThat(done.get("result").get("stdout").asText()).isEqualTo("a\nb\n");
        } finally {
            f.delete("/v1/sandboxes/" + id);
        }
    }

    /** A59: a client that sends its headers a byte a second is cut off at the header deadline; others are served. */
    @Test
    void slowlorisIsDisconnected() throws Exception {
        try (Socket s = new Socket(f.server.url().getHost(), f.server.url().getPort())) {
            s.setSoTimeout(200);
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            byte[] head = ("GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: " + "a".repeat(100) + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII);
            long start = System.nanoTime();
            boolean closed = false;
            for (int i = 0; i < head.length && !closed; i++) {
                try {
                    out.write(head[i]);
                    out.flush();
                } catch (IOException e) {
                    closed = true;
                    break;
                }
                // meanwhile, another client is served promptly
                if (i == 1) {
                    assertThat(f.get("/v1/sandboxes").statusCode()).isEqualTo(200);
                }
                long until = System.nanoTime() + 1_000_000_000L;
                while (System.nanoTime() < until && !closed) {
                    try {
                        closed = in.read() < 0;
                    } catch (java.net.SocketTimeoutException e) {
                        // still open
                    } catch (IOException e) {
                        closed = true;
                    }
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            assertThat(closed).as("closed by the server").isTrue();
            assertThat(seconds).isBetween(1.5, 5.0);
        }
    }

    /** A59: a JSON body trickling in a byte a second is refused at the body deadline. */
    @Test
    void slowBodyIsRefused() throws IOException {
        long start = System.nanoTime();
        RawHttp.Reply r = RawHttp.exchange(f.server.url(), "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n" + auth()
                + "\r\nContent-Type: application/json\r\nContent-Length: 100", out -> {
                    for (int i = 0; i < 100; i++) {
                        out.write(' ');
                        out.flush();
                        try {
                            Thread.sleep(500);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }, 10_000);
        assertThat(r.status()).isEqualTo(408);
        assertThat(errorCode(r.body())).isEqualTo("DEADLINE_EXCEEDED");
        assertThat((System.nanoTime() - start) / 1e9).isLessThan(5.0);
    }

    /**
     * A60: an exec stream whose client never reads stops the command (its output is not buffered in the
     * daemon), and closing the socket kills it.
     */
    @Test
    void execStreamClientThatNeverReads() throws Exception {
        // default idle timeout here, so the stalled socket is not closed while we look
        try (PaddockServer patient = PaddockServer.start(ServerOptions.builder().port(0).token(f.token).build(), f.paddock)) {
            String id = f.createSandboxId();
            try {
                long heapBefore = usedHeapAfterGc();
                WsClient ws = WsClient.connect(f.http, java.net.URI.create(patient.url() + "/v1/sandboxes/" + id
                        + "/exec/stream"), f.token, false);
                ws.sendText("{\"argv\":[\"sh\",\"-c\",\"yes | head -c 200000000; touch /tmp/done\"],"
                        + "\"output_limit_bytes\":1000000000}");
                Thread.sleep(4000); // unblocked, 200 MB of yes takes well under a second
                JsonNode done = json(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"test\",\"-e\",\"/tmp/done\"]}"));
                assertThat(done.get("status").get("exit_code").asInt()).as("the producer is blocked").isEqualTo(1);
                assertThat(running(id, "yes")).isTrue();
                long growth = usedHeapAfterGc() - heapBefore;
                assertThat(growth).as("heap growth").isLessThan(64L << 20);

                ws.socket.abort(); // the client goes away
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (running(id, "yes") && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                assertThat(running(id, "yes")).as("the command was killed").isFalse();
            } finally {
                f.delete("/v1/sandboxes/" + id);
            }
        }
    }

    /** A60: a stream whose client reads nothing is closed after the idle timeout (2 s here), killing the command. */
    @Test
    void stalledExecStreamIsClosedAfterTheIdleTimeout() throws Exception {
        String id = f.createSandboxId();
        try {
            WsClient ws = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, false);
            ws.sendText("{\"argv\":[\"yes\"]}");
            long deadline = System.nanoTime() + 1_000_000_000L;
            while (!running(id, "yes") && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(running(id, "yes")).as("started").isTrue();
            deadline = System.nanoTime() + 10_000_000_000L;
            while (running(id, "yes") && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            assertThat(running(id, "yes")).as("killed when the stalled socket idled out").isFalse();
            ws.socket.abort();
        } finally {
            f.delete("/v1/sandboxes/" + id);
        }
    }

    private static boolean running(String id, String comm) {
        JsonNode r = json(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"sh\",\"-c\","
                + "\"cat /proc/[0-9]*/comm 2>/dev/null\"]}"));
        String out = new String(java.util.Base64.getDecoder().decode(r.get("stdout").asText()), StandardCharsets.UTF_8);
        return out.lines().anyMatch(comm::equals);
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return rt.totalMemory() - rt.freeMemory();
    }
}
