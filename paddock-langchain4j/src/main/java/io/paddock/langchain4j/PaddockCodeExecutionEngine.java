package io.paddock.langchain4j;

import dev.langchain4j.code.CodeExecutionEngine;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.code.CodeRequest;
import io.paddock.langchain4j.internal.LazySandbox;
import io.paddock.langchain4j.internal.Options;
import io.paddock.langchain4j.internal.Reports;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * LangChain4j's {@link CodeExecutionEngine} on a Paddock sandbox: {@link #execute} runs the code in one
 * language (Python unless the builder says otherwise) as a new process in a sandbox created on the first
 * call and destroyed by {@link #close()}. Files persist from one call to the next; variables do not.
 *
 * <p>{@code execute} returns what the program printed, as a program's output reads: stdout, then for Python
 * the value of a final expression ({@code 6*7} gives {@code "42"}). When the code failed (an exception, a
 * compile error, a non-zero exit, a timeout) it returns a report instead, its status first
 * ({@code exited with code 1}), then stdout, stderr and the error. Paddock's own failures
 * ({@link SandboxException}: an unknown language, a stopped sandbox) are thrown. Thread-safe.
 */
public final class PaddockCodeExecutionEngine implements CodeExecutionEngine, AutoCloseable {
    private final LazySandbox sandbox;
    private final String language;
    private final Duration timeout;
    private final int maxOutputChars;

    private PaddockCodeExecutionEngine(Builder b) {
        this.sandbox = new LazySandbox(b.paddock, b.spec);
        this.language = b.language;
        this.timeout = b.timeout;
        this.maxOutputChars = b.maxOutputChars;
    }

    /** Python in a sandbox of {@code paddock} with the default spec. */
    public static PaddockCodeExecutionEngine of(Paddock paddock) {
        return builder(paddock).build();
    }

    public static Builder builder(Paddock paddock) {
        return new Builder(paddock);
    }

    @Override
    public String execute(String code) {
        return Reports.output(sandbox.interpreter().run(CodeRequest.builder().language(language).code(code)
                .timeout(timeout).build()), maxOutputChars);
    }

    /** The language {@link #execute} runs. */
    public String language() {
        return language;
    }

    /** The sandbox, once {@link #execute} created it. */
    public Optional<Sandbox> sandbox() {
        return sandbox.created();
    }

    /** Destroys the sandbox, if one was created; idempotent. */
    @Override
    public void close() {
        sandbox.close();
    }

    /** Options of {@link PaddockCodeExecutionEngine}; not thread-safe. */
    public static final class Builder {
        private final Paddock paddock;
        private SandboxSpec spec = SandboxSpec.builder().build();
        private String language = "python";
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

        /** Any language of paddock-code's table that the sandbox's image has (default {@code python}). */
        public Builder language(String language) {
            this.language = Options.language("language", language);
            return this;
        }

        /** How long one run may take (default 60 s); past it, its process tree is killed. */
        public Builder timeout(Duration timeout) {
            this.timeout = Options.timeout(timeout);
            return this;
        }

        /** The longest text of one part of the answer (stdout, stderr) before it is cut (default 20,000). */
        public Builder maxOutputChars(int maxOutputChars) {
            this.maxOutputChars = Options.maxOutputChars(maxOutputChars);
            return this;
        }

        public PaddockCodeExecutionEngine build() {
            return new PaddockCodeExecutionEngine(this);
        }
    }
}
