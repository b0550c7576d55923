package io.paddock.mcp.internal;

import io.paddock.ErrorCode;

import java.time.Duration;
import java.util.Optional;

/**
 * Hears each tool call that may change something (every tool not marked read-only) once it is answered: the
 * daemon writes it to its audit log. Only the tool's name, the sandbox it reached and the outcome: never its
 * arguments (a command, code, file contents, env values, a spec's secrets). Called on the tool's thread; must
 * not throw.
 */
@FunctionalInterface
public interface ToolAudit {
    /** Hears nothing. */
    ToolAudit NONE = (tool, sandbox, failure, took) -> {
    };

    /**
     * @param tool    the tool's name ({@code sandbox_create}, {@code run_command}, …)
     * @param sandbox the id of the sandbox it created or reached, when it got that far
     * @param failure empty when the call succeeded (a command that ran and exited non-zero succeeded); else its code
     * @param took    how long the call took
     */
    void called(String tool, Optional<String> sandbox, Optional<ErrorCode> failure, Duration took);
}
