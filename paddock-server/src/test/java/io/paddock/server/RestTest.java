package io.paddock.server;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;

/** The REST API end to end: a real server over a real engine, called with java.net.http. */
class RestTest {
    private static Fixture f;

    @BeforeAll
    static void start() {
        f = Fixture.start();
    }

    @AfterAll
    static void stop() {
        f.close();
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String messagePart) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = json(r).get("error");
        assertThat(e.get("code").asText()).isEqualTo(code);
        assertThat(e.get("message").asText()).contains(messagePart);
    }

    @Test
    void createGetByNameAndDelete() {
        String name = "rest-" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> r = f.post("/v1/sandboxes", Fixture.SMALL + ",\"name\":\"" + name
                + "\",\"labels\":{\"team\":\"a\"}}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        JsonNode info = json(r);
        String id = info.get("id").asText();
        assertThat(id).matches("sb-[a-z2-7]{26}");
        assertThat(r.headers().firstValue("Location")).hasValue("/v1/sandboxes/" + id);
        assertThat(info.get("state").asText()).isEqualTo("RUNNING");
        assertThat(info.get("name").asText()).isEqualTo(name);
        assertThat(info.get("labels").get("team").asText()).isEqualTo("a");
        assertThat(info.get("runtime").asText()).isEqualTo("runc");

        assertThat(json(f.get("/v1/sandboxes/" + id)).get("id").asText()).isEqualTo(id);
        assertThat(json(f.get("/v1/sandboxes/by-name/" + name)).get("id").asText()).isEqualTo(id);

        // a duplicate name is a conflict
        assertError(f.post("/v1/sandboxes", Fixture.SMALL + ",\"name\":\"" + name + "\"}"), 409, "ALREADY_EXISTS", name);

        // DELETE is idempotent; the stopped sandbox stays visible (the engine keeps stopped sandboxes 10 min)
        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isEqualTo(204);
        assertThat(f.delete("/v1/sandboxes/" + id).statusCode()).isEqualTo(204);
        JsonNode after = json(f.get("/v1/sandboxes/" + id));
        assertThat(after.get("state").asText()).isEqualTo("STOPPED");
        assertThat(after.get("stop_reason").asText()).isEqualTo("DESTROYED");
        // ...but by-name finds only live sandboxes, and operations on a stopped one are conflicts
        assertError(f.get("/v1/sandboxes/by-name/" + name), 404, "NOT_FOUND", name);
        assertError(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"true\"]}"), 409, "FAILED_PRECONDITION", id);
        assertError(f.get("/v1/sandboxes/" + id + "/files/stat?path=/tmp"), 409, "FAILED_PRECONDITION", id);
    }

    @Test
    void listFiltersAndPages() {
        String run = UUID.randomUUID().toString().substring(0, 8);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(f.createSandbox(",\"labels\":{\"run\":\"" + run + "\",\"n\":\"" + i + "\"}").get("id").asText());
        }
        JsonNode all = json(f.get("/v1/sandboxes?label=run=" + run));
        assertThat(all.get("sandboxes")).hasSize(3);
        assertThat(all.get("next_page_token").isNull()).isTrue();

        JsonNode one = json(f.get("/v1/sandboxes?label=run=" + run + "&label=n=1"));
        assertThat(one.get("sandboxes")).hasSize(1);
        assertThat(one.get("sandboxes").get(0).get("id").asText()).isEqualTo(ids.get(1));

        JsonNode p1 = json(f.get("/v1/sandboxes?label=run=" + run + "&limit=2"));
        assertThat(p1.get("sandboxes")).hasSize(2);
        String token = p1.get("next_page_token").asText();
        assertThat(token).isNotBlank();
        JsonNode p2 = json(f.get("/v1/sandboxes?label=run=" + run + "&limit=2&page_token=" + token));
        assertThat(p2.get("sandboxes")).hasSize(1);
        assertThat(p2.get("next_page_token").isNull()).isTrue();
        List<String> paged = new ArrayList<>();
        p1.get("sandboxes").forEach(s -> paged.add(s.get("id").asText()));
        p2.get("sandboxes").forEach(s -> paged.add(s.get("id").asText()));
        assertThat(paged).isEqualTo(ids); // oldest first, no gap, no repeat

        f.delete("/v1/sandboxes/" + ids.get(0));
        assertThat(json(f.get("/v1/sandboxes?label=run=" + run + "&state=RUNNING")).get("sandboxes")).hasSize(2);
        JsonNode stopped = json(f.get("/v1/sandboxes?label=run=" + run + "&state=STOPPED&state=STOPPING"));
        assertThat(stopped.get("sandboxes")).hasSize(1);
        assertThat(stopped.get("sandboxes").get(0).get("id").asText()).isEqualTo(ids.get(0));

        assertError(f.get("/v1/sandboxes?limit=0"), 400, "INVALID_ARGUMENT", "limit");
        assertError(f.get("/v1/sandboxes?limit=1001"), 400, "INVALID_ARGUMENT", "limit");
        assertError(f.get("/v1/sandboxes?state=SLEEPING"), 400, "INVALID_ARGUMENT", "state");
        assertError(f.get("/v1/sandboxes?label=novalue"), 400, "INVALID_ARGUMENT", "label");
        assertError(f.get("/v1/sandboxes?page_token=garbage"), 400, "INVALID_ARGUMENT", "page_token");
        ids.forEach(id -> f.delete("/v1/sandboxes/" + id));
    }

    @Test
    void execJson() {
        String id = f.createSandboxId();
        String stdin = Base64.getEncoder().encodeToString("from stdin".getBytes(StandardCharsets.UTF_8));
        HttpResponse<String> r = f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"sh\",\"-c\",\"cat; echo; echo oops >&2;"
                + " exit 3\"],\"env\":{\"A\":\"1\"},\"stdin\":\"" + stdin + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode res = json(r);
        assertThat(new String(Base64.getDecoder().decode(res.get("stdout").asText()), StandardCharsets.UTF_8))
                .isEqualTo("from stdin\n");
        assertThat(new String(Base64.getDecoder().decode(res.get("stderr").asText()), StandardCharsets.UTF_8))
                .isEqualTo("oops\n");
        assertThat(res.get("status").get("outcome").asText()).isEqualTo("EXITED");
        assertThat(res.get("status").get("exit_code").asInt()).isEqualTo(3);

        JsonNode timedOut = json(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"sleep\",\"10\"],\"timeout_ms\":300}"));
        assertThat(timedOut.get("status").get("outcome").asText()).isEqualTo("TIMED_OUT");
        assertThat(timedOut.get("status").get("exit_code").asInt()).isEqualTo(124);

        // bad requests name the field
        assertError(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[]}"), 400, "INVALID_ARGUMENT", "argv");
        assertError(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"true\"],\"shell\":true}"), 400,
                "INVALID_ARGUMENT", "shell");
        assertError(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":[\"true\"],\"output_limit_bytes\":1000000000}"),
                400, "INVALID_ARGUMENT", "output_limit_bytes");
        assertError(f.post("/v1/sandboxes/" + id + "/exec", "{\"argv\":"), 400, "INVALID_ARGUMENT", "body");
        assertError(f.post("/v1/sandboxes/" + id + "/exec", ""), 400, "INVALID_ARGUMENT", "body");
        f.delete("/v1/sandboxes/" + id);
    }

    @Test
    void aReusableExecSocketRunsCommandAfterCommandInAnyOfTheCallersSandboxes() throws Exception {
        String a = f.createSandboxId();
        String b = f.createSandboxId();
        WsClient ws = WsClient.connect(f.http, f.uri("/v1/exec/stream"), f.token, true);
        ws.sendText("{\"sandbox_id\":\"" + a + "\",\"argv\":[\"sh\",\"-c\",\"cat; echo a >&2; touch /tmp/in-a; exit 3\"]}");
        ws.sendStdin("one".getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"type\":\"stdin_close\"}");
        WsClient.Result first = ws.untilExit(30);
        assertThat(first.started().get("exec_id").isIntegralNumber()).isTrue();
        assertThat(first.stdoutText()).isEqualTo("one");
        assertThat(first.stderrText()).isEqualTo("a\n");
        assertThat(first.last().get("status").get("exit_code").asInt()).isEqualTo(3);
        assertThat(first.close()).as("the socket stays open after an exit").isEqualTo(-1);

        // stdin and control messages for the last command that arrive after its exit are dropped
        ws.sendStdin("late".getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"type\":\"kill\"}");
        ws.sendText("{\"sandbox_id\":\"" + b + "\",\"argv\":[\"sh\",\"-c\",\"echo $((6*7)); test -e /tmp/in-a; echo $?; cat\"]}");
        ws.sendStdin("two".getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"type\":\"stdin_close\"}");
        WsClient.Result second = ws.untilExit(30);
        assertThat(second.stdoutText()).as("the other sandbox: no /tmp/in-a there").isEqualTo("42\n1\ntwo");
        assertThat(second.last().get("status").get("exit_code").asInt()).isZero();
        assertThat(second.started().get("exec_id").asLong()).isNotEqualTo(-1L);

        // a request without its sandbox is an error naming the field, after which the server closes the socket
        ws.sendText("{\"argv\":[\"true\"]}");
        WsClient.Result missing = ws.drain(10);
        assertThat(missing.last().get("error").get("error").get("code").asText()).isEqualTo("INVALID_ARGUMENT");
        assertThat(missing.last().get("error").get("error").get("message").asText()).contains("sandbox_id");
        assertThat(missing.close()).isEqualTo(1000);
        // an unknown sandbox, and one that is not running
        WsClient unknown = WsClient.connect(f.http, f.uri("/v1/exec/stream"), f.token, true);
        unknown.sendText("{\"sandbox_id\":\"sb-aaaaaaaaaaaaaaaaaaaaaaaaaa\",\"argv\":[\"true\"]}");
        assertThat(unknown.drain(10).last().get("error").get("error").get("code").asText()).isEqualTo("NOT_FOUND");
        assertThat(f.post("/v1/sandboxes/" + b + "/pause", "").statusCode()).isEqualTo(200);
        WsClient paused = WsClient.connect(f.http, f.uri("/v1/exec/stream"), f.token, true);
        paused.sendText("{\"sandbox_id\":\"" + b + "\",\"argv\":[\"true\"]}");
        JsonNode refused = paused.drain(10).last().get("error").get("error");
        assertThat(refused.get("code").asText()).isEqualTo("FAILED_PRECONDITION");
        assertThat(refused.get("message").asText()).contains("paused");
        // closing the socket while a command runs kills it, as on a bound socket
        WsClient running = WsClient.connect(f.http, f.uri("/v1/exec/stream"), f.token, true);
        running.sendText("{\"sandbox_id\":\"" + a + "\",\"argv\":[\"sh\",\"-c\",\"echo $$ > /tmp/pid; sleep 60\"]}");
        assertThat(((JsonNode) running.next(10)).get("type").asText()).isEqualTo("started");
        running.socket.abort();
        JsonNode gone = null;
        for (int i = 0; i < 100; i++) {
            gone = json(f.post("/v1/sandboxes/" + a + "/exec", "{\"argv\":[\"sh\",\"-c\",\"kill -0 $(cat /tmp/pid)\"]}"));
            if (gone.get("status").get("exit_code").asInt() != 0) {
                break;
            }
            Thread.sleep(50);
        }
        assertThat(gone.get("status").get("exit_code").asInt()).as("the command died with its socket").isNotZero();
        f.delete("/v1/sandboxes/" + a);
        f.delete("/v1/sandboxes/" + b);
    }

    @Test
    void execStreamOverWebSocket() throws Exception {
        String id = f.createSandboxId();
        WsClient ws = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        ws.sendText("{\"argv\":[\"sh\",\"-c\",\"cat; echo done >&2; exit 7\"]}");
        ws.sendStdin("hello ".getBytes(StandardCharsets.UTF_8));
        ws.sendStdin("world".getBytes(StandardCharsets.UTF_8));
        ws.sendText("{\"type\":\"stdin_close\"}");
        WsClient.Result r = ws.drain(30);
        assertThat(r.started().get("exec_id").isIntegralNumber()).isTrue();
        assertThat(r.stdoutText()).isEqualTo("hello world");
        assertThat(r.stderrText()).isEqualTo("done\n");
        assertThat(r.last().get("type").asText()).as(r.last().toString()).isEqualTo("exit");
        assertThat(r.last().get("status").get("exit_code").asInt()).isEqualTo(7);
        assertThat(r.close()).isEqualTo(1000);

        // a terminal: one stream, its size, a resize
        WsClient tty = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        tty.sendText("{\"argv\":[\"sh\",\"-c\",\"echo err >&2; stty size; read x; stty size\"],"
                + "\"terminal\":{\"cols\":80,\"rows\":24}}");
        assertThat(((JsonNode) tty.next(10)).get("type").asText()).isEqualTo("started");
        StringBuilder seen = new StringBuilder();
        while (!seen.toString().contains("24 80\r\n")) {
            byte[] b = (byte[]) tty.next(10);
            assertThat(b[0]).as("stream byte").isEqualTo((byte) 1);
            seen.append(new String(b, 1, b.length - 1, StandardCharsets.UTF_8));
        }
        assertThat(seen.toString()).isEqualTo("err\r\n24 80\r\n");
        tty.sendText("{\"type\":\"resize\",\"rows\":30,\"cols\":100}");
        tty.sendStdin("go\n".getBytes(StandardCharsets.UTF_8));
        WsClient.Result t = tty.drain(30);
        assertThat(t.stdoutText()).isEqualTo("go\r\n30 100\r\n");
        assertThat(t.stderrText()).isEmpty();
        assertThat(t.last().get("status").get("exit_code").asInt()).isZero();
        // a resize of a command without a terminal, and a bad size, are errors naming the problem
        WsClient pipes = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        pipes.sendText("{\"argv\":[\"sleep\",\"60\"]}");
        assertThat(((JsonNode) pipes.next(10)).get("type").asText()).isEqualTo("started");
        pipes.sendText("{\"type\":\"resize\",\"rows\":30,\"cols\":100}");
        WsClient.Result p = pipes.drain(10);
        assertThat(p.last().get("error").get("error").get("code").asText()).isEqualTo("FAILED_PRECONDITION");
        assertThat(p.last().get("error").get("error").get("message").asText()).contains("without a terminal");
        WsClient zero = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        zero.sendText("{\"argv\":[\"true\"],\"terminal\":{\"cols\":0,\"rows\":24}}");
        WsClient.Result z = zero.drain(10);
        assertThat(z.last().get("error").get("error").get("message").asText()).contains("terminal.cols");

        // signals reach the command
        WsClient sig = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        sig.sendText("{\"argv\":[\"sleep\",\"60\"]}");
        assertThat(((JsonNode) sig.next(10)).get("type").asText()).isEqualTo("started");
        sig.sendText("{\"type\":\"signal\",\"signal\":15}");
        WsClient.Result s = sig.drain(10);
        assertThat(s.last().get("status").get("outcome").asText()).isEqualTo("SIGNALED");
        assertThat(s.last().get("status").get("signal").asInt()).isEqualTo(15);

        // a bad request is an error message, then the close
        WsClient bad = WsClient.connect(f.http, f.uri("/v1/sandboxes/" + id + "/exec/stream"), f.token, true);
        bad.sendText("{\"argv\":[]}");
        WsClient.Result b = bad.drain(10);
        assertThat(b.last().get("type").asText()).isEqualTo("error");
        assertThat(b.last().get("error").get("error").get("code").asText()).isEqualTo("INVALID_ARGUMENT");
        f.delete("/v1/sandboxes/" + id);
    }

    @Test
    void files() {
        String id = f.createSandboxId();
        String base = "/v1/sandboxes/" + id + "/files";
        byte[] data = new byte[300_000];
        new java.util.Random(1).nextBytes(data);
        assertThat(f.put(base + "?path=/workspace/d/e/data.bin", data).statusCode()).isEqualTo(204);
        HttpResponse<byte[]> got = sendBytes(f.request(base + "?path=/workspace/d/e/data.bin").GET().build());
        assertThat(got.statusCode()).isEqualTo(200);
        assertThat(got.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
        assertThat(got.body()).isEqualTo(data);
        // relative paths are resolved against the workdir
        assertThat(f.put(base + "?path=rel.txt", "x".getBytes(StandardCharsets.UTF_8)).statusCode()).isEqualTo(204);
        assertThat(f.get(base + "?path=/workspace/rel.txt").body()).isEqualTo("x");

        JsonNode stat = json(f.get(base + "/stat?path=/workspace/d/e/data.bin"));
        assertThat(stat.get("type").asText()).isEqualTo("FILE");
        assertThat(stat.get("size").asLong()).isEqualTo(data.length);
        assertThat(stat.get("name").asText()).isEqualTo("data.bin");

        assertThat(f.post(base + "/mkdir", "{\"path\":\"/workspace/d/f\"}").statusCode()).isEqualTo(204);
        JsonNode list = json(f.get(base + "/list?path=/workspace/d"));
        Set<String> names = new HashSet<>();
        list.get("entries").forEach(e -> names.add(e.get("name").asText()));
        assertThat(names).containsExactlyInAnyOrder("e", "f");

        assertThat(f.post(base + "/move", "{\"from\":\"/workspace/d/e/data.bin\",\"to\":\"/workspace/d/f/moved.bin\"}")
                .statusCode()).isEqualTo(204);
        assertError(f.get(base + "/stat?path=/workspace/d/e/data.bin"), 404, "NOT_FOUND", "data.bin");
        assertThat(json(f.get(base + "/stat?path=/workspace/d/f/moved.bin")).get("size").asLong()).isEqualTo(data.length);

        assertError(f.post(base + "/remove", "{\"path\":\"/workspace/d\"}"), 409, "FAILED_PRECONDITION", "");
        assertThat(f.post(base + "/remove", "{\"path\":\"/workspace/d\",\"recursive\":true}").statusCode()).isEqualTo(204);
        assertError(f.get(base + "/list?path=/workspace/d"), 404, "NOT_FOUND", "");
        assertError(f.get(base + "?path=/workspace/missing"), 404, "NOT_FOUND", "missing");

        // path validation: missing, dot-dot, pseudo filesystems
        assertError(f.get(base + "/stat"), 400, "INVALID_ARGUMENT", "path");
        assertError(f.get(base + "/stat?path=/workspace/../etc/passwd"), 400, "INVALID_ARGUMENT", "path");
        assertError(f.get(base + "?path=/proc/self/environ"), 400, "INVALID_ARGUMENT", "path");
        assertError(f.post(base + "/mkdir", "{}"), 400, "INVALID_ARGUMENT", "path");
        f.delete("/v1/sandboxes/" + id);
    }

    private static HttpResponse<byte[]> sendBytes(java.net.http.HttpRequest req) {
        try {
            return f.http.send(req, HttpResponse.BodyHandlers.ofByteArray());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void logsOfAnEntrypointAndTimeout() throws InterruptedException {
        JsonNode info = f.createSandbox(",\"entrypoint\":[\"sh\",\"-c\",\"echo started; echo warn >&2; sleep 600\"]");
        String id = info.get("id").asText();
        JsonNode logs = null;
        for (int i = 0; i < 100; i++) {
            logs = json(f.get("/v1/sandboxes/" + id + "/logs"));
            if (!logs.get("stdout").asText().isEmpty() && !logs.get("stderr").asText().isEmpty()) {
                break;
            }
            Thread.sleep(50);
        }
        assertThat(new String(Base64.getDecoder().decode(logs.get("stdout").asText()), StandardCharsets.UTF_8))
                .isEqualTo("started\n");
        assertThat(new String(Base64.getDecoder().decode(logs.get("stderr").asText()), StandardCharsets.UTF_8))
                .isEqualTo("warn\n");
        assertThat(logs.get("stdout_truncated").asBoolean()).isFalse();

        Instant before = Instant.parse(info.get("expires_at").asText());
        HttpResponse<String> r = f.post("/v1/sandboxes/" + id + "/timeout", "{\"timeout_ms\":600000}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(Instant.parse(json(r).get("expires_at").asText())).isAfter(before.plusSeconds(400));
        assertError(f.post("/v1/sandboxes/" + id + "/timeout", "{\"timeout_ms\":0}"), 400, "INVALID_ARGUMENT", "timeout_ms");
        assertError(f.post("/v1/sandboxes/" + id + "/timeout", "{}"), 400, "INVALID_ARGUMENT", "timeout_ms");
        assertError(f.post("/v1/sandboxes/" + id + "/timeout", "{\"timeout_ms\":\"soon\"}"), 400, "INVALID_ARGUMENT",
                "timeout_ms");
        f.delete("/v1/sandboxes/" + id);
    }

    @Test
    void badSpecsNameTheField() {
        assertError(f.post("/v1/sandboxes", "{\"memory\":true}"), 400, "INVALID_ARGUMENT", "memory");
        assertError(f.post("/v1/sandboxes", "{\"memory\":\"lots\"}"), 400, "INVALID_ARGUMENT", "memory");
        assertError(f.post("/v1/sandboxes", "{\"mounts\":[\"/\"]}"), 400, "INVALID_ARGUMENT", "mounts");
        assertError(f.post("/v1/sandboxes", "{\"name\":\"Bad Name!\"}"), 400, "INVALID_ARGUMENT", "name");
        assertError(f.post("/v1/sandboxes", "{\"network\":\"host\"}"), 400, "INVALID_ARGUMENT", "network");
        assertError(f.post("/v1/sandboxes", "[1,2]"), 400, "INVALID_ARGUMENT", "body");
        assertError(f.post("/v1/sandboxes", "{\"pids\":1}{}"), 400, "INVALID_ARGUMENT", "body");
    }

    @Test
    void routerErrors() {
        assertError(f.get("/v1/nothing"), 404, "NOT_FOUND", "/v1/nothing");
        HttpResponse<String> r = f.send(f.request("/v1/sandboxes").PUT(java.net.http.HttpRequest.BodyPublishers.noBody()).build());
        assertError(r, 405, "INVALID_ARGUMENT", "PUT");
        assertThat(r.headers().firstValue("Allow")).hasValue("GET, POST");
        // errors Jetty raises itself have the same shape
        HttpResponse<String> big = f.send(f.request("/v1/sandboxes").header("X-Big", "b".repeat(20_000)).GET().build());
        assertThat(big.statusCode()).isEqualTo(431);
        assertThat(json(big).get("error").get("code").asText()).isEqualTo("RESOURCE_EXHAUSTED");
        // the exec stream without an upgrade
        String id = f.createSandboxId();
        assertError(f.get("/v1/sandboxes/" + id + "/exec/stream"), 400, "INVALID_ARGUMENT", "WebSocket");
        f.delete("/v1/sandboxes/" + id);
    }

    /** A62: ids are 128-bit random; unknown ids, well-formed or not, all get the same 404. */
    @Test
    void unknownIdsAreIndistinguishable() {
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < 2; i++) {
            ids.add(f.createSandboxId());
        }
        assertThat(ids).hasSize(2).allMatch(id -> id.matches("sb-[a-z2-7]{26}"));
        String wellFormed = "sb-" + "a".repeat(26);
        String malformed = "sb-1";
        for (String path : List.of("", "/logs", "/files/stat?path=/tmp")) {
            HttpResponse<String> a = f.get("/v1/sandboxes/" + wellFormed + path);
            HttpResponse<String> b = f.get("/v1/sandboxes/" + malformed + path);
            assertError(a, 404, "NOT_FOUND", wellFormed);
            assertError(b, 404, "NOT_FOUND", malformed);
            assertThat(json(a).get("error").get("message").asText().replace(wellFormed, "X"))
                    .isEqualTo(json(b).get("error").get("message").asText().replace(malformed, "X"));
        }
        assertError(f.delete("/v1/sandboxes/" + wellFormed), 404, "NOT_FOUND", wellFormed);
        assertError(f.post("/v1/sandboxes/" + wellFormed + "/exec", "{\"argv\":[\"true\"]}"), 404, "NOT_FOUND", wellFormed);
        // latency class: both answer from memory, without touching a sandbox
        long wf = medianNanos("/v1/sandboxes/" + wellFormed);
        long mf = medianNanos("/v1/sandboxes/" + malformed);
        assertThat(Math.max(wf, mf)).isLessThan(50_000_000L);
        ids.forEach(id -> f.delete("/v1/sandboxes/" + id));
    }

    private static long medianNanos(String path) {
        long[] t = new long[21];
        for (int i = 0; i < t.length; i++) {
            long s = System.nanoTime();
            f.get(path);
            t[i] = System.nanoTime() - s;
        }
        java.util.Arrays.sort(t);
        return t[t.length / 2];
    }
}
