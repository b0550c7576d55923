package io.paddock.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.service.AiServices;
import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tools through LangChain4j's own AiServices, with a scripted chat model in place of an LLM: the model asks
 * for tools with arguments, AiServices calls them, real sandboxes (runc, the embedded engine) do the work, and
 * the model's final answer quotes the results. Needs root and runc, as the engine's other tests.
 */
class PaddockToolsTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Paddock paddock;

    interface Assistant {
        String chat(String message);
    }

    @BeforeAll
    static void start() {
        paddock = Paddock.local();
    }

    @AfterAll
    static void stop() {
        if (paddock != null) {
            paddock.close();
        }
    }

    static PaddockTools tools() {
        return PaddockTools.builder(paddock)
                .spec(SandboxSpec.builder().memory(ByteSize.mib(512)).timeout(Duration.ofMinutes(5)).build())
                .timeout(Duration.ofSeconds(30)).build();
    }

    static AiMessage call(String name, String argumentsJson) {
        return AiMessage.from(ToolExecutionRequest.builder().id("call-" + name).name(name).arguments(argumentsJson).build());
    }

    /** The results of the tool calls in the request's last turn, in order. */
    static List<String> toolResults(ChatRequest request) {
        List<ChatMessage> messages = request.messages();
        return messages.stream().filter(m -> m instanceof ToolExecutionResultMessage)
                .map(m -> ((ToolExecutionResultMessage) m).text()).toList();
    }

    @Test
    void theModelRunsPythonInARealSandboxAndAnswersWithItsOutput() {
        ScriptedChatModel model = new ScriptedChatModel()
                .then(r -> call("run_code", "{\"code\": \"import math, os\\nprint(math.factorial(20), os.getuid() != 0)\"}"))
                .then(r -> AiMessage.from("The sandbox answered: " + toolResults(r).get(0)));
        try (PaddockTools tools = tools()) {
            assertThat(tools.sandbox()).as("created lazily").isEmpty();
            Assistant assistant = AiServices.builder(Assistant.class).chatModel(model).tools(tools).build();

            String answer = assistant.chat("What is 20 factorial?");

            assertThat(answer).startsWith("The sandbox answered: exited with code 0\n")
                    .contains("stdout:\n2432902008176640000 True\n");
            assertThat(tools.sandbox()).isPresent();
            // the model was offered the tools, with run_code's language optional
            List<ToolSpecification> offered = model.requests.get(0).toolSpecifications();
            assertThat(offered).extracting(ToolSpecification::name)
                    .containsExactlyInAnyOrder("run_code", "run_shell_command", "read_file", "write_file", "list_files");
            ToolSpecification runCode = offered.stream().filter(t -> t.name().equals("run_code")).findFirst().orElseThrow();
            assertThat(runCode.parameters().properties()).containsKeys("code", "language");
            assertThat(runCode.parameters().required()).containsExactly("code");
        }
    }

    @Test
    void filesAndTheShellPersistAcrossCallsAndTheSandboxEndsWithTheTools() {
        ScriptedChatModel model = new ScriptedChatModel()
                .then(r -> call("write_file", "{\"path\": \"data/in.txt\", \"content\": \"one\\ntwo\\n\"}"))
                .then(r -> call("run_shell_command", "{\"command\": \"cd data && export N=$(wc -l < in.txt)\"}"))
                .then(r -> call("run_shell_command", "{\"command\": \"echo lines=$N in $PWD; ls /nowhere\"}"))
                .then(r -> call("run_code", "{\"code\": \"console.log(require('fs').readFileSync('data/in.txt', 'utf8').length)\", "
                        + "\"language\": \"javascript\"}"))
                .then(r -> call("read_file", "{\"path\": \"data/missing.txt\"}"))
                .then(r -> AiMessage.from(String.join("\n---\n", toolResults(r))));
        SandboxId id;
        try (PaddockTools tools = tools()) {
            Assistant assistant = AiServices.builder(Assistant.class).chatModel(model).tools(tools).build();

            String[] results = assistant.chat("Count the lines.").split("\n---\n");

            assertThat(results[0]).isEqualTo("wrote 8 bytes to data/in.txt");
            assertThat(results[1]).isEqualTo("exited with code 0\n");
            assertThat(results[2]).startsWith("exited with code 2\n")
                    .contains("stdout:\nlines=2 in /workspace/data\n").contains("stderr:\n").contains("/nowhere");
            assertThat(results[3]).isEqualTo("exited with code 0\nstdout:\n8\n");
            assertThat(results[4]).startsWith("error: NOT_FOUND: ");
            assertThat(tools.listFiles("data")).isEqualTo("data: 1 entry\n  in.txt (8 bytes)\n");
            id = tools.sandbox().orElseThrow().id();
        }
        assertThat(goneIn(paddock, id)).as("closing the tools destroyed the sandbox").isTrue();
    }

    static boolean goneIn(Paddock paddock, SandboxId id) {
        try {
            return paddock.get(id).state() != SandboxState.RUNNING;
        } catch (SandboxException e) {
            return e.code() == ErrorCode.NOT_FOUND;
        }
    }

    @Test
    void aRunPastItsTimeoutIsStoppedAndSaysSo() {
        try (PaddockTools tools = PaddockTools.builder(paddock).timeout(Duration.ofSeconds(2)).build()) {
            assertThat(tools.runCode("import time\nprint('started', flush=True)\ntime.sleep(60)", null))
                    .startsWith("timed out after").contains("stdout:\nstarted\n");
            assertThat(tools.runCode("print('x')", "cobol")).startsWith("error: INVALID_ARGUMENT: ").contains("cobol");
        }
    }
}
