package io.paddock.cli;

import io.paddock.ExecProcess;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.time.Duration;

/** Connects a running command's streams to this process's stdio, as {@code run} and {@code exec} do. */
final class Streaming {
    private Streaming() {
    }

    /**
     * Streams stdout and stderr live (and stdin when {@code interactive}), waits for the command and
     * explains a timeout, an OOM kill or a signal on stderr. Returns the exit code to exit with.
     */
    static int attach(ExecProcess process, boolean interactive, Duration timeout, String memory) throws InterruptedException {
        Thread out = copier("stdout", process.stdout(), new FileOutputStream(FileDescriptor.out));
        Thread err = copier("stderr", process.stderr(), new FileOutputStream(FileDescriptor.err));
        Thread in = interactive ? stdinForwarder(process) : null;
        if (!interactive) {
            process.closeStdin();
        }
        ExitStatus status = process.awaitExit();
        out.join();
        err.join();
        if (in != null) {
            in.interrupt();
        }
        explain(status, timeout, memory);
        return ExitCodes.of(status);
    }

    /**
     * As {@link #attach}, for a command started on a terminal of {@code here}'s size: {@code here} is in raw mode
     * meanwhile, passes its size changes on, and stdin is forwarded whenever it is a terminal.
     */
    static int attachTerminal(ExecProcess process, LocalTerminal here, boolean interactive, Duration timeout,
                              String memory) throws InterruptedException {
        try (here) {
            here.attach(process);
            return attach(process, interactive || here.attached(), timeout, memory);
        }
    }

    static void explain(ExitStatus status, Duration limit, String memory) {
        PrintStream err = System.err;
        switch (status.outcome()) {
            case TIMED_OUT -> err.println("paddock: timed out" + (limit == null ? "" : " after " + SpecOptionsFormat.duration(limit))
                    + "; the command's process tree was killed");
            case OOM_KILLED -> err.println("paddock: out of memory: the command exceeded the sandbox's "
                    + (memory == null ? "" : memory + " ") + "memory limit and was killed");
            case SIGNALED -> err.println("paddock: the command was killed by signal " + status.signal());
            default -> {
            }
        }
        err.flush();
    }

    private static Thread copier(String name, InputStream from, OutputStream to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[65536];
            try (from) {
                int n;
                while ((n = from.read(buf)) > 0) {
                    to.write(buf, 0, n);
                    to.flush();
                }
            } catch (IOException | SandboxException e) {
                // the stream ends with the command or the sandbox
            }
        }, "paddock-cli-" + name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static Thread stdinForwarder(ExecProcess process) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[4096];
            try (InputStream in = System.in; OutputStream to = process.stdin()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    to.write(buf, 0, n);
                    to.flush();
                }
            } catch (IOException | SandboxException e) {
                // the command closed its stdin or ended
            }
            try {
                process.closeStdin();
            } catch (SandboxException e) {
                // already ended
            }
        }, "paddock-cli-stdin");
        t.setDaemon(true);
        t.start();
        return t;
    }
}
