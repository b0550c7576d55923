package io.paddock.langchain4j.internal;

import io.paddock.SandboxException;

import java.time.Duration;

/** The checks both builders (the engine's and the tools') make of their options. */
public final class Options {
    private Options() {
    }

    /** A language name, stripped; INVALID_ARGUMENT naming {@code field} when empty. */
    public static String language(String field, String language) {
        if (language == null || language.isBlank()) {
            throw SandboxException.invalid(field, "must not be empty");
        }
        return language.strip();
    }

    public static Duration timeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
        }
        return timeout;
    }

    public static int maxOutputChars(int maxOutputChars) {
        if (maxOutputChars < 100) {
            throw SandboxException.invalid("maxOutputChars", "must be at least 100, got " + maxOutputChars);
        }
        return maxOutputChars;
    }
}
