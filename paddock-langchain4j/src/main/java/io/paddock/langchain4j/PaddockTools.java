package io.paddock.langchain4j;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.code.CodeRequest;
import io.paddock.langchain4j.internal.LazySandbox;
import io.paddock.langchain4j.internal.Options;
import io.paddock.langchain4j.internal.Reports;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * LangChain4j tools over one Paddock sandbox: run code, run shell commands, read, write and list files.
 * Give an instance to {@code AiServices.builder(…).tools(tools)}. The sandbox is created from the spec on
 * the first tool call (from {@code Paddock.local()} or {@code Paddock.connect(url, token)}, whichever
 * {@code paddock} is) and destroyed by {@link #close()}; the {@code Paddock} itself stays the caller's.
 *
 * <p>Every call's answer is text for the model: the exit status first, then the output, each part capped at
 * {@code maxOutputChars} with the cut said. Failures the model can act on (an unknown language, a missing
 * file, a command past its timeout) come back as text ({@code error: NOT_FOUND: …}) rather than exceptions;
 * only {@code INTERNAL} failures, bugs, are thrown. Thread-safe; tool calls run one after another in the
 * same sandbox, so files persist from one call to the next, and so do the working directory and variables
 * of {@link #runShellCommand}'s shell.
 */
public final class PaddockTools implements AutoCloseable {
    private final LazySandbox sandbox;
    private final String workdir;
    private final String defaultLanguage;
    private final Duration timeout;
    private final int maxOutputChars;

    private PaddockTools(Builder b) {
        this.sandbox = new LazySandbox(b.paddock, b.spec);
        this.workdir = b.spec.workdir();
        this.defaultLanguage = b.defaultLanguage;
        this.timeout = b.timeout;
        this.maxOutputChars = b.maxOutputChars;
    }

    /** Tools on a sandbox of {@code paddock} with the default spec, Python as the default language. */
    public static PaddockTools of(Paddock paddock) {
        return builder(paddock).build();
    }

    public static Builder builder(Paddock paddock) {
        return new Builder(paddock);
    }

    @Tool(name = "run_code", value = "Runs a program in an isolated Linux sandbox and returns its exit "
            + "status, standard output and standard error; for Python also the value of the last expression. Each run "
            + "is a new process: variables do not carry over, files in /workspace do.")
    public String runCode(@P("the complete source code of the program") String code,
                          @P(value = "the language: python (the default), javascript, bash, java, c, cpp or perl",
                                  required = false) String language) {
        String lang = language == null || language.isBlank() ? defaultLanguage : language.strip();
        return answer(() -> Reports.code(sandbox.interpreter().run(CodeRequest.builder().language(lang)
                .code(given("code", code)).timeout(timeout).build()), maxOutputChars));
    }

    @Tool(name = "run_shell_command", value = "Runs a bash command line in an isolated Linux sandbox and "
            + "returns its exit status, standard output and standard error. The shell persists between calls: cd, "
            + "export and background processes carry over. Starts in the working directory (/workspace).")
    public String runShellCommand(@P("the command line, in bash syntax") String command) {
        return answer(() -> Reports.shell(sandbox.shell().exec(given("command", command), timeout), maxOutputChars));
    }

    @Tool(name = "read_file", value = "Returns the text of a file in the sandbox.")
    public String readFile(@P("the file's path: absolute, or relative to the working directory (/workspace)") String path) {
        return answer(() -> Reports.cap(sandbox.sandbox().files().readString(given("path", path)), maxOutputChars));
    }

    @Tool(name = "write_file", value = "Creates or replaces a file in the sandbox with the given text, creating "
            + "missing parent directories.")
    public String writeFile(@P("the file's path: absolute, or relative to the working directory (/workspace)") String path,
                            @P("the file's whole new content") String content) {
        return answer(() -> {
            sandbox.sandbox().files().writeString(given("path", path), given("content", content));
            return "wrote " + content.getBytes(StandardCharsets.UTF_8).length + " bytes to " + path;
        });
    }

    @Tool(name = "list_files", value = "Lists a directory of the sandbox: names, types and sizes.")
    public String listFiles(@P(value = "the directory: absolute, or relative to the working directory (/workspace), which is the default",
            required = false) String directory) {
        String dir = directory == null || directory.isBlank() ? workdir : directory.strip();
        return answer(() -> Reports.listing(dir, sandbox.sandbox().files().list(dir), maxOutputChars));
    }

    /** The sandbox, once a tool call created it; for the application (to fetch results, say), not the model. */
    public Optional<Sandbox> sandbox() {
        return sandbox.created();
    }

    /** Ends the shell and destroys the sandbox, if one was created; idempotent. */
    @Override
    public void close() {
        sandbox.close();
    }

    /** A required argument; a model that left it out is told so. */
    private static String given(String name, String value) {
        if (value == null) {
            throw SandboxException.invalid(name, "missing; this argument is required");
        }
        return value;
    }

    private static String answer(Supplier<String> call) {
        try {
            return call.get();
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.INTERNAL) {
                throw e;
            }
            return Reports.failure(e);
        }
    }

    /** Options of {@link PaddockTools}; not thread-safe. */
    public static final class Builder {
        private final Paddock paddock;
        private SandboxSpec spec = SandboxSpec.builder().build();
        private String defaultLanguage = "python";
        private Duration timeout = Duration.ofSeconds(60);
        private int maxOutputChars = 20_000;

        private Builder(Paddock paddock) {
            this.paddock = Objects.requireNonNull(paddock, "paddock");
        }

        /** The sandbox to create (its image, limits, network, lifetime); Paddock's defaults if not set. */
        public Builder spec(SandboxSpec spec) {
            this.spec = Objects.requireNonNull(spec, "spec");
            return this;
        }

        /** The language of {@code run_code} when the model names none (default {@code python}). */
        public Builder defaultLanguage(String language) {
            this.defaultLanguage = Options.language("defaultLanguage", language);
            return this;
        }

        /** How long one code run or shell command may take (default 60 s); past it, it is stopped. */
        public Builder timeout(Duration timeout) {
            this.timeout = Options.timeout(timeout);
            return this;
        }

        /** The longest text of one part of an answer (stdout, stderr, a file) before it is cut (default 20,000). */
        public Builder maxOutputChars(int maxOutputChars) {
            this.maxOutputChars = Options.maxOutputChars(maxOutputChars);
            return this;
        }

        public PaddockTools build() {
            return new PaddockTools(this);
        }
    }
}
