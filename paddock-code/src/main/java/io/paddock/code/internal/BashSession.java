package io.paddock.code.internal;

import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.SandboxException;
import io.paddock.Signal;
import io.paddock.code.ShellResult;
import io.paddock.code.ShellSession;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A persistent bash process driven over its stdin. Each command is sent as one ANSI-C quoted string to a
 * small function that evals it with stdin from /dev/null, then prints a fresh random marker and the exit
 * code on stdout and the marker on stderr; the command's output is everything before the markers (found
 * anywhere, so output without a final newline is fine). The function's SIGINT trap returns from it, so
 * an interrupt at the timeout ends the whole command line (loops included) and the shell lives on.
 */
final class BashSession implements ShellSession {
    private static final String FN = "__paddock_run";
    private static final String PRELUDE = "trap ':' INT\n"
            + FN + "() { trap 'trap : INT; return 130' INT; eval \"$1\"; }\n";
    private static final int MAX_COMMAND = 1 << 20;

    private final SandboxCodeInterpreter owner;
    private final Map<String, String> env;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    // @GuardedBy("lock") from here
    private ExecProcess process;
    private int generation;
    private Stream out;
    private Stream err;
    private boolean ended;
    private volatile boolean closed;

    BashSession(SandboxCodeInterpreter owner, Map<String, String> env) {
        this.owner = owner;
        this.env = Map.copyOf(env);
        env.keySet().forEach(k -> {
            if (!k.matches("[A-Za-z_][A-Za-z0-9_]*")) {
                throw SandboxException.invalid("env", "bad variable name '" + k + "'");
            }
        });
    }

    @Override
    public Map<String, String> env() {
        return env;
    }

    void start() {
        lock.lock();
        try {
            startLocked();
        } finally {
            lock.unlock();
        }
    }

    private void startLocked() {
        long cap = owner.options().outputLimit().bytes();
        ExecProcess p = owner.sandbox().start(ExecRequest.builder().argv("bash", "--noprofile", "--norc")
                .env(env).outputLimit(ExecRequest.UNLIMITED).build());
        generation++;
        int gen = generation;
        process = p;
        ended = false;
        out = new Stream(cap);
        err = new Stream(cap);
        Stream o = out;
        Stream e = err;
        owner.threads().submit(() -> pump(p.stdout(), o, gen));
        owner.threads().submit(() -> pump(p.stderr(), e, gen));
        write(PRELUDE);
    }

    private void pump(InputStream in, Stream s, int gen) {
        byte[] buf = new byte[16 * 1024];
        try (in) {
            int n;
            while ((n = in.read(buf)) > 0) {
                lock.lock();
                try {
                    s.add(buf, n);
                    changed.signalAll();
                } finally {
                    lock.unlock();
                }
            }
        } catch (IOException | SandboxException ex) {
            // the shell ended
        }
        lock.lock();
        try {
            if (generation == gen) {
                ended = true;
            }
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public ShellResult exec(String command) {
        return exec(command, owner.options().timeout());
    }

    @Override
    public ShellResult exec(String command, Duration timeout) {
        if (command == null || command.isBlank()) {
            throw SandboxException.invalid("command", "empty");
        }
        if (command.getBytes(StandardCharsets.UTF_8).length > MAX_COMMAND || command.indexOf('\0') >= 0) {
            throw SandboxException.invalid("command", "over " + MAX_COMMAND + " bytes or contains NUL");
        }
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw SandboxException.invalid("timeout", "must be positive, got " + timeout);
        }
        owner.enforceShellPolicy(command);
        lock.lock();
        try {
            if (closed) {
                throw new SandboxException(ErrorCode.NOT_FOUND, "this shell session was closed");
            }
            boolean restarted = false;
            if (ended) {
                killLocked();
                startLocked();
                restarted = true;
            }
            long started = System.nanoTime();
            String marker = "__PADDOCK_" + SandboxCodeInterpreter.newId() + "__";
            byte[] mark = marker.getBytes(StandardCharsets.US_ASCII);
            out.reset();
            err.reset();
            write(FN + " " + ansiC(command) + " </dev/null; __paddock_rc=$?; printf '%s %d\\n' '" + marker
                    + "' \"$__paddock_rc\"; printf '%s\\n' '" + marker + "' >&2\n");
            long deadline = started + timeout.toNanos();
            boolean interrupted = false;
            while (true) {
                int o = out.find(mark);
                int e = err.find(mark);
                if (o >= 0 && e >= 0) {
                    int code = out.exitCodeAfter(o + mark.length);
                    ExitStatus status = interrupted
                            ? new ExitStatus(ExitStatus.Outcome.TIMED_OUT, 124, 2, out.truncated, err.truncated, since(started))
                            : new ExitStatus(ExitStatus.Outcome.EXITED, code, 0, out.truncated, err.truncated, since(started));
                    return new ShellResult(status, out.text(o), err.text(e), restarted);
                }
                if (ended) {
                    // the command ended the shell (exit, exec, a fatal error): report what it left
                    ExitStatus exit = process.awaitExit(Duration.ofSeconds(2)).orElse(null);
                    ExitStatus status = interrupted
                            ? new ExitStatus(ExitStatus.Outcome.TIMED_OUT, 124, 0, out.truncated, err.truncated, since(started))
                            : exit != null ? new ExitStatus(exit.outcome(), exit.exitCode(), exit.signal(), out.truncated,
                            err.truncated, since(started))
                            : new ExitStatus(ExitStatus.Outcome.SIGNALED, 137, 9, out.truncated, err.truncated, since(started));
                    String stderr = err.text(-1) + "paddock: the shell ended (" + (exit == null ? "gone" : exit.describe())
                            + "); the next command starts a new one\n";
                    return new ShellResult(status, out.text(-1), stderr, restarted);
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    if (!interrupted) {
                        interrupted = true;
                        try {
                            process.signal(Signal.SIGINT);
                        } catch (SandboxException ex) {
                            // gone: reported as ended
                        }
                        deadline = System.nanoTime() + owner.options().interruptGrace().toNanos();
                        continue;
                    }
                    String so = out.text(-1);
                    String se = err.text(-1) + "paddock: the command did not stop within "
                            + owner.options().interruptGrace().toMillis() + " ms of its interrupt; the shell was restarted "
                            + "(its directory, variables and background jobs are gone)\n";
                    boolean to = out.truncated;
                    boolean te = err.truncated;
                    killLocked();
                    startLocked();
                    return new ShellResult(new ExitStatus(ExitStatus.Outcome.TIMED_OUT, 124, 9, to, te, since(started)),
                            so, se, true);
                }
                try {
                    changed.awaitNanos(left);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    throw new SandboxException(ErrorCode.UNAVAILABLE, "interrupted");
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void write(String text) {
        try {
            process.stdin().write(text.getBytes(StandardCharsets.UTF_8));
            process.stdin().flush();
        } catch (IOException | SandboxException e) {
            ended = true;
        }
    }

    /** Bash's $'…' quoting: every byte that is not plainly printable is escaped. */
    static String ansiC(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 16).append("$'");
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if (c == '\\' || c == '\'') {
                sb.append('\\').append((char) c);
            } else if (c >= 0x20 && c < 0x7f) {
                sb.append((char) c);
            } else {
                sb.append(String.format("\\x%02x", c));
            }
        }
        return sb.append('\'').toString();
    }

    private static Duration since(long started) {
        return SandboxCodeInterpreter.since(started);
    }

    private void killLocked() {
        if (process != null) {
            try {
                process.kill();
                process.close();
            } catch (SandboxException e) {
                // gone
            }
        }
        generation++;
    }

    @Override
    public boolean isAlive() {
        lock.lock();
        try {
            return !closed && !ended && process != null && process.isAlive();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        owner.forget(this);
        ExecProcess p = process;
        if (p != null) {
            try {
                p.kill();
                p.close();
            } catch (SandboxException e) {
                // gone
            }
        }
    }

    /** One output stream of the shell: kept up to the cap (plus the tail where the marker will be). */
    private static final class Stream {
        private final long cap;
        private byte[] data = new byte[4096];
        private int size;
        private int searched;
        boolean truncated;

        Stream(long cap) {
            this.cap = cap;
        }

        void reset() {
            size = 0;
            searched = 0;
            truncated = false;
        }

        void add(byte[] b, int n) {
            if (size + n > data.length) {
                data = Arrays.copyOf(data, Math.max(data.length * 2, size + n));
            }
            System.arraycopy(b, 0, data, size, n);
            size += n;
            long keep = cap + 4096;
            if (size > keep) {
                // drop the middle: keep the first cap bytes and a tail long enough to hold the marker
                int tail = 1024;
                System.arraycopy(data, size - tail, data, (int) cap, tail);
                size = (int) cap + tail;
                searched = Math.min(searched, (int) cap);
                truncated = true;
            }
        }

        int find(byte[] mark) {
            int from = Math.max(0, searched - mark.length);
            for (int i = from; i + mark.length <= size; i++) {
                if (data[i] == mark[0] && Arrays.equals(data, i, i + mark.length, mark, 0, mark.length)) {
                    return i;
                }
            }
            searched = size;
            return -1;
        }

        int exitCodeAfter(int at) {
            int i = at;
            while (i < size && data[i] == ' ') {
                i++;
            }
            int code = 0;
            boolean any = false;
            while (i < size && data[i] >= '0' && data[i] <= '9' && code < 1000) {
                code = code * 10 + (data[i++] - '0');
                any = true;
            }
            return any ? code : 1;
        }

        /** The text before {@code end} ({@code -1}: all of it), capped. */
        String text(int end) {
            int n = end < 0 ? size : end;
            if (n > cap) {
                n = (int) cap;
                truncated = true;
            }
            return new String(data, 0, n, StandardCharsets.UTF_8);
        }
    }
}
