package io.paddock.cli;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.internal.Printable;
import picocli.CommandLine;

import java.io.PrintWriter;

/**
 * The one place where outcomes become process exit codes. A command's own exit code passes through;
 * 124 means it timed out, 137 that it ran out of memory (as with GNU timeout and the kernel's SIGKILL);
 * 125 means Paddock itself failed (like {@code docker run}), 2 a usage error.
 */
final class ExitCodes {
    static final int USAGE = 2;
    static final int PADDOCK_FAILED = 125;
    static final int TIMED_OUT = 124;
    static final int OOM = 137;

    private ExitCodes() {
    }

    static int of(ExitStatus status) {
        return switch (status.outcome()) {
            case EXITED -> status.exitCode();
            case SIGNALED -> 128 + status.signal();
            case TIMED_OUT -> TIMED_OUT;
            case OOM_KILLED -> OOM;
        };
    }

    static int of(SandboxException e) {
        return e.code() == ErrorCode.INVALID_ARGUMENT ? USAGE : PADDOCK_FAILED;
    }

    /** Turns exceptions from commands into one line on stderr and an exit code; no stack traces for users. */
    static final class ErrorHandler implements CommandLine.IExecutionExceptionHandler {
        @Override
        public int handleExecutionException(Exception ex, CommandLine cli, CommandLine.ParseResult parsed) {
            PrintWriter err = cli.getErr();
            if (ex instanceof SandboxException se) {
                err.println("paddock: " + Printable.text(se.getMessage()));
                err.flush();
                return of(se);
            }
            err.println("paddock: internal error: " + Printable.text(String.valueOf(ex)));
            if (System.getenv("PADDOCK_DEBUG") != null) {
                ex.printStackTrace(err);
            } else {
                err.println("paddock: set PADDOCK_DEBUG=1 for the stack trace");
            }
            err.flush();
            return PADDOCK_FAILED;
        }
    }

    static final class UsageHandler implements CommandLine.IParameterExceptionHandler {
        @Override
        public int handleParseException(CommandLine.ParameterException ex, String[] args) {
            PrintWriter err = ex.getCommandLine().getErr();
            err.println("paddock: " + ex.getMessage());
            CommandLine.UnmatchedArgumentException.printSuggestions(ex, err);
            err.println("Try '" + ex.getCommandLine().getCommandSpec().qualifiedName() + " --help' for usage.");
            err.flush();
            return USAGE;
        }
    }
}
