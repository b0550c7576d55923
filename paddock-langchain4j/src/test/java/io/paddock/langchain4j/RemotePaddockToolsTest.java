package io.paddock.langchain4j;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.service.AiServices;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxId;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.UUID;

import static io.paddock.langchain4j.PaddockToolsTest.call;
import static io.paddock.langchain4j.PaddockToolsTest.toolResults;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same tools over {@code Paddock.connect(url, token)}: a real daemon on loopback over the embedded engine
 * (runc), so the interpreter and the shell live in the daemon; closing the tools destroys the sandbox there.
 */
class RemotePaddockToolsTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Paddock engine;
    static PaddockServer server;
    static Paddock remote;

    @BeforeAll
    static void start() {
        String token = "test-" + UUID.randomUUID();
        engine = Paddock.local();
        server = PaddockServer.start(ServerOptions.builder().host("127.0.0.1").port(0).token(token).build(), engine);
        remote = Paddock.connect(server.url(), token);
    }

    @AfterAll
    static void stop() {
        try (Paddock e = engine; PaddockServer s = server; Paddock r = remote) {
            // closed in reverse order: the client, the daemon, the engine
        }
    }

    @Test
    void theModelUsesASandboxOfADaemon() {
        ScriptedChatModel model = new ScriptedChatModel()
                .then(r -> call("write_file", "{\"path\": \"n.txt\", \"content\": \"41\"}"))
                .then(r -> call("run_code", "{\"code\": \"print(int(open('n.txt').read()) + 1)\"}"))
                .then(r -> call("run_shell_command", "{\"command\": \"cd /tmp && export A=b\"}"))
                .then(r -> call("run_shell_command", "{\"command\": \"echo $PWD $A\"}"))
                .then(r -> AiMessage.from(String.join("\n---\n", toolResults(r))));
        SandboxId id;
        try (PaddockTools tools = PaddockTools.of(remote)) {
            PaddockToolsTest.Assistant assistant = AiServices.builder(PaddockToolsTest.Assistant.class)
                    .chatModel(model).tools(tools).build();

            String[] results = assistant.chat("Add one.").split("\n---\n");

            assertThat(results).containsExactly("wrote 2 bytes to n.txt", "exited with code 0\nstdout:\n42\n",
                    "exited with code 0\n", "exited with code 0\nstdout:\n/tmp b\n");
            id = tools.sandbox().orElseThrow().id();
            assertThat(engine.list()).extracting(i -> i.id()).contains(id);
        }
        assertThat(PaddockToolsTest.goneIn(engine, id)).as("closing the tools destroyed the daemon's sandbox").isTrue();
    }
}
