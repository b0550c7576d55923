package io.paddock.cli;

import io.paddock.ExecProcess;
import io.paddock.SandboxException;
import io.paddock.TerminalSize;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The terminal this CLI runs in, for {@code exec -t}: its size, raw mode while a remote terminal is attached
 * (so that keys such as Ctrl-C and Ctrl-D reach the command instead of acting here), and its size changes
 * ({@code SIGWINCH}) passed on. Everything goes through {@code stty} on {@code /dev/tty}; without a terminal
 * (output piped) the size is {@code $COLUMNS} × {@code $LINES} or 80 × 24 and nothing is changed.
 */
final class LocalTerminal implements AutoCloseable {
    private static final File TTY = new File("/dev/tty");

    private final boolean attached;
    private String saved;

    private LocalTerminal(boolean attached) {
        this.attached = attached;
    }

    /** This process's terminal when both its stdin and stdout are one, else a detached stand-in. */
    static LocalTerminal current() {
        return new LocalTerminal(System.console() != null && TTY.canRead());
    }

    boolean attached() {
        return attached;
    }

    TerminalSize size() {
        if (attached) {
            String[] rc = stty("size").trim().split("\\s+");
            if (rc.length == 2) {
                try {
                    int rows = Integer.parseInt(rc[0]);
                    int cols = Integer.parseInt(rc[1]);
                    if (rows > 0 && cols > 0) {
                        return new TerminalSize(Math.min(cols, TerminalSize.MAX), Math.min(rows, TerminalSize.MAX));
                    }
                } catch (NumberFormatException e) {
                    // fall through to the environment
                }
            }
        }
        int cols = positive(System.getenv("COLUMNS"), TerminalSize.DEFAULT.columns());
        int rows = positive(System.getenv("LINES"), TerminalSize.DEFAULT.rows());
        return new TerminalSize(cols, rows);
    }

    /** Raw mode until {@link #close()}, and size changes passed on to {@code process}. */
    void attach(ExecProcess process) {
        if (!attached) {
            return;
        }
        saved = stty("-g").trim();
        stty("raw", "-echo");
        Runtime.getRuntime().addShutdownHook(new Thread(this::restore, "paddock-cli-tty-restore"));
        try {
            sun.misc.Signal.handle(new sun.misc.Signal("WINCH"), s -> {
                try {
                    process.resize(size());
                } catch (SandboxException e) {
                    // the command ended meanwhile
                }
            });
        } catch (IllegalArgumentException e) {
            // no SIGWINCH here: the size stays as it was at the start
        }
    }

    @Override
    public void close() {
        restore();
    }

    private synchronized void restore() {
        if (saved != null && !saved.isEmpty()) {
            stty(saved);
            saved = null;
        }
    }

    private static int positive(String v, int fallback) {
        try {
            int n = v == null ? fallback : Integer.parseInt(v.trim());
            return n > 0 && n <= TerminalSize.MAX ? n : fallback;
        } catch (NumberFormatException e) {
            return fallback;
        }
    }

    private static String stty(String... args) {
        String[] cmd = new String[args.length + 1];
        cmd[0] = "stty";
        System.arraycopy(args, 0, cmd, 1, args.length);
        try {
            Process p = new ProcessBuilder(cmd).redirectInput(TTY).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(5, TimeUnit.SECONDS);
            return out;
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }
}
