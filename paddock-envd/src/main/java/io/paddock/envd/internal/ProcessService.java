package io.paddock.envd.internal;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.SandboxException;
import io.paddock.Signal;
import io.paddock.TerminalSize;
import io.paddock.envd.internal.proto.ProcessProto.CloseStdinRequest;
import io.paddock.envd.internal.proto.ProcessProto.CloseStdinResponse;
import io.paddock.envd.internal.proto.ProcessProto.ConnectRequest;
import io.paddock.envd.internal.proto.ProcessProto.ConnectResponse;
import io.paddock.envd.internal.proto.ProcessProto.ListRequest;
import io.paddock.envd.internal.proto.ProcessProto.ListResponse;
import io.paddock.envd.internal.proto.ProcessProto.PTY;
import io.paddock.envd.internal.proto.ProcessProto.ProcessConfig;
import io.paddock.envd.internal.proto.ProcessProto.ProcessEvent;
import io.paddock.envd.internal.proto.ProcessProto.ProcessInfo;
import io.paddock.envd.internal.proto.ProcessProto.ProcessInput;
import io.paddock.envd.internal.proto.ProcessProto.ProcessSelector;
import io.paddock.envd.internal.proto.ProcessProto.SendInputRequest;
import io.paddock.envd.internal.proto.ProcessProto.SendInputResponse;
import io.paddock.envd.internal.proto.ProcessProto.SendSignalRequest;
import io.paddock.envd.internal.proto.ProcessProto.SendSignalResponse;
import io.paddock.envd.internal.proto.ProcessProto.StartRequest;
import io.paddock.envd.internal.proto.ProcessProto.StartResponse;
import io.paddock.envd.internal.proto.ProcessProto.StreamInputRequest;
import io.paddock.envd.internal.proto.ProcessProto.StreamInputResponse;
import io.paddock.envd.internal.proto.ProcessProto.UpdateRequest;
import io.paddock.envd.internal.proto.ProcessProto.UpdateResponse;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * E2B's {@code process.Process} service on a Paddock sandbox: commands are Paddock execs, as the sandbox user, with
 * the sandbox's environment plus the call's {@code envs}; a {@code pty} in the Start request runs the command on a
 * pseudo-terminal ({@link ExecRequest.Builder#terminal}), whose output is the {@code pty} data event, whose input is
 * {@code pty} input and whose size {@code Update} changes. A process's {@code pid} is its Paddock exec id
 * ({@link ExecProcess#id()}), unique among the sandbox's commands; Paddock's API does not expose kernel pids.
 */
public final class ProcessService {
    /** A Start's stream outlives its deadline by this much at most, while the init kills the command's tree. */
    private static final Duration END_GRACE = Duration.ofSeconds(10);
    /**
     * The most processes started through envd that a sandbox runs at once (each holds two daemon threads reading its
     * output); the sandbox's own {@code pids} limit bounds what they start in turn.
     */
    public static final int MAX_PROCESSES = 256;

    private final Tables tables;
    private final ExecutorService pumps;

    public ProcessService(Tables tables, ExecutorService pumps) {
        this.tables = tables;
        this.pumps = pumps;
    }

    public Message list(Call c, ListRequest r) {
        c.checkUser();
        ListResponse.Builder b = ListResponse.newBuilder();
        Tables.PerSandbox t = tables.peek(c.sandbox().id());
        if (t != null) {
            List<ProcessEntry> live = new ArrayList<>(t.processes.values());
            live.sort(Comparator.comparingLong(e -> e.pid));
            for (ProcessEntry e : live) {
                if (e.ended()) {
                    continue;
                }
                ProcessInfo.Builder i = ProcessInfo.newBuilder().setPid((int) e.pid).setConfig(e.config);
                e.tag.ifPresent(i::setTag);
                b.addProcesses(i);
            }
        }
        return b.build();
    }

    public void start(Call c, StartRequest r, StreamOut out) throws IOException {
        c.checkUser();
        ProcessConfig cfg = r.getProcess();
        if (cfg.getCmd().isEmpty()) {
            throw ConnectException.invalid("process.cmd: empty");
        }
        TerminalSize terminal = r.hasPty() ? size(r.getPty(), "pty.size") : null;
        ExecRequest.Builder req = ExecRequest.builder().outputLimit(ExecRequest.UNLIMITED).terminal(terminal);
        List<String> argv = new ArrayList<>();
        argv.add(cfg.getCmd());
        argv.addAll(cfg.getArgsList());
        req.argv(argv).env(cfg.getEnvsMap());
        if (cfg.hasCwd() && !cfg.getCwd().isEmpty()) {
            String cwd = Paths.clean(cfg.getCwd(), "process.cwd");
            checkDirectory(c, cwd);
            req.cwd(cwd);
        }
        if (c.timeout() != null) {
            // E2B ends a command whose Start call's deadline passes; the init's timeout kills its whole tree
            req.timeout(c.timeout().isZero() ? Duration.ofMillis(1) : c.timeout());
        }
        // A terminal is always the command's input, whatever `stdin` says (as envd's): closing it would type Ctrl-D.
        boolean stdin = terminal != null || !r.hasStdin() || r.getStdin();
        ExecProcess exec = c.sandbox().start(req.build());
        if (!stdin) {
            exec.closeStdin();
        }
        long pid = exec.id();
        if (pid <= 0 || pid > 0xFFFF_FFFFL) {
            exec.close();
            throw new ConnectException(ConnectCode.INTERNAL, "exec id " + pid + " does not fit E2B's uint32 pid");
        }
        ProcessEntry entry = new ProcessEntry(pid, exec, cfg, r.hasTag() ? Optional.of(r.getTag()) : Optional.empty(),
                stdin, terminal != null, c.timeout() != null);
        ProcessEntry.Subscriber sub = entry.subscribe();
        String refused = tables.with(c.sandbox(), t -> {
            if (t.processes.size() >= MAX_PROCESSES) {
                return "this sandbox already runs " + MAX_PROCESSES + " processes started through envd; wait for some "
                        + "to end or kill them";
            }
            return t.processes.putIfAbsent(pid, entry) == null ? null : "exec id " + pid + " is already in use";
        });
        if (refused != null) {
            exec.kill();
            exec.close();
            throw new ConnectException(refused.startsWith("exec id") ? ConnectCode.INTERNAL : ConnectCode.RESOURCE_EXHAUSTED,
                    refused);
        }
        AtomicInteger open = new AtomicInteger(2);
        pumps.execute(() -> pump(c, entry, exec.stdout(), false, open));
        pumps.execute(() -> pump(c, entry, exec.stderr(), true, open));
        long deadline = c.deadlineNanos() == 0 ? 0 : c.deadlineNanos() + END_GRACE.toNanos();
        follow(c, entry, sub, out, ev -> StartResponse.newBuilder().setEvent(ev).build(), deadline);
    }

    public void connect(Call c, ConnectRequest r, StreamOut out) throws IOException {
        c.checkUser();
        ProcessEntry entry = find(c, r.getProcess());
        ProcessEntry.Subscriber sub = entry.subscribe();
        follow(c, entry, sub, out, ev -> ConnectResponse.newBuilder().setEvent(ev).build(), c.deadlineNanos());
    }

    /** Resizes a process's terminal (the kernel sends its foreground process group {@code SIGWINCH}). */
    public Message update(Call c, UpdateRequest r) {
        c.checkUser();
        ProcessEntry entry = find(c, r.getProcess());
        if (r.hasPty()) {
            TerminalSize size = size(r.getPty(), "pty.size");
            if (!entry.pty) {
                throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "error resizing tty: tty not assigned to "
                        + "process " + entry.pid + " (it was started without a pty)");
            }
            entry.exec.resize(size);
        }
        return UpdateResponse.getDefaultInstance();
    }

    public Message sendInput(Call c, SendInputRequest r) {
        c.checkUser();
        ProcessEntry entry = find(c, r.getProcess());
        write(entry, r.getInput());
        return SendInputResponse.getDefaultInstance();
    }

    /** Client streaming: a start naming the process, then data; answered once the body ends. */
    public Message streamInput(Call c, List<StreamInputRequest> messages) {
        c.checkUser();
        ProcessEntry entry = null;
        for (StreamInputRequest m : messages) {
            switch (m.getEventCase()) {
                case START -> entry = find(c, m.getStart().getProcess());
                case DATA -> {
                    if (entry == null) {
                        throw ConnectException.invalid("process.Process/StreamInput: data before the start event");
                    }
                    write(entry, m.getData().getInput());
                }
                default -> {
                }
            }
        }
        return StreamInputResponse.getDefaultInstance();
    }

    public Message closeStdin(Call c, CloseStdinRequest r) {
        c.checkUser();
        ProcessEntry entry = find(c, r.getProcess());
        if (entry.pty) {
            throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "cannot close stdin for PTY process "
                    + entry.pid + " — send Ctrl+D (0x04) as pty input instead");
        }
        if (!entry.stdinOpen) {
            throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "process " + entry.pid
                    + " was started without stdin (StartRequest.stdin false)");
        }
        synchronized (entry.stdinLock) {
            entry.exec.closeStdin();
        }
        return CloseStdinResponse.getDefaultInstance();
    }

    public Message sendSignal(Call c, SendSignalRequest r) {
        c.checkUser();
        ProcessEntry entry = find(c, r.getProcess());
        switch (r.getSignal()) {
            case SIGNAL_SIGKILL -> entry.exec.kill();
            case SIGNAL_SIGTERM -> entry.exec.signal(Signal.SIGTERM);
            default -> throw ConnectException.invalid("signal: " + r.getSignalValue()
                    + " is not one of SIGNAL_SIGTERM (15), SIGNAL_SIGKILL (9)");
        }
        return SendSignalResponse.getDefaultInstance();
    }

    // ------------------------------------------------------------------ internals

    private ProcessEntry find(Call c, ProcessSelector s) {
        Tables.PerSandbox t = tables.peek(c.sandbox().id());
        switch (s.getSelectorCase()) {
            case PID -> {
                long pid = Integer.toUnsignedLong(s.getPid());
                ProcessEntry e = t == null ? null : t.processes.get(pid);
                if (e == null || e.ended()) {
                    throw new ConnectException(ConnectCode.NOT_FOUND, "process with pid " + pid + " not found");
                }
                return e;
            }
            case TAG -> {
                if (t != null) {
                    for (ProcessEntry e : t.processes.values()) {
                        if (!e.ended() && e.tag.isPresent() && e.tag.get().equals(s.getTag())) {
                            return e;
                        }
                    }
                }
                throw new ConnectException(ConnectCode.NOT_FOUND, "process with tag \"" + s.getTag() + "\" not found");
            }
            default -> throw ConnectException.invalid("process: no pid or tag given");
        }
    }

    /** The size in a PTY message: each side 1 to {@link TerminalSize#MAX} (envd takes a 0, a size programs ignore). */
    private static TerminalSize size(PTY pty, String field) {
        if (!pty.hasSize()) {
            throw ConnectException.invalid(field + ": missing");
        }
        long cols = Integer.toUnsignedLong(pty.getSize().getCols());
        long rows = Integer.toUnsignedLong(pty.getSize().getRows());
        if (cols < 1 || cols > TerminalSize.MAX || rows < 1 || rows > TerminalSize.MAX) {
            throw ConnectException.invalid(field + ": cols and rows must each be between 1 and " + TerminalSize.MAX
                    + ", got " + cols + " cols, " + rows + " rows");
        }
        return new TerminalSize((int) cols, (int) rows);
    }

    /**
     * Input goes where the process reads it: {@code pty} input to a terminal (typed, so echoed by it), {@code stdin}
     * to a pipe. The other way round is {@code failed_precondition}, with envd's wording.
     */
    private static void write(ProcessEntry entry, ProcessInput in) {
        ByteString bytes;
        switch (in.getInputCase()) {
            case STDIN -> {
                if (entry.pty) {
                    throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "tty assigned to process " + entry.pid
                            + " — input should be written to the pty, not the stdin");
                }
                if (!entry.stdinOpen) {
                    throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "process " + entry.pid
                            + " was started without stdin (StartRequest.stdin false)");
                }
                bytes = in.getStdin();
            }
            case PTY -> {
                if (!entry.pty) {
                    throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "tty not assigned to process " + entry.pid
                            + " — input should be written to the stdin, not the tty");
                }
                bytes = in.getPty();
            }
            default -> throw ConnectException.invalid("input: neither stdin nor pty given");
        }
        synchronized (entry.stdinLock) {
            try {
                OutputStream o = entry.exec.stdin();
                bytes.writeTo(o);
                o.flush();
            } catch (IOException e) {
                throw new ConnectException(ConnectCode.FAILED_PRECONDITION, "process " + entry.pid
                        + ": its " + (entry.pty ? "terminal" : "stdin") + " is closed (" + e.getMessage() + ")");
            }
        }
    }

    private void checkDirectory(Call c, String dir) {
        FileInfo f;
        try {
            f = c.sandbox().files().stat(dir);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw ConnectException.invalid("process.cwd: " + dir + " does not exist");
            }
            throw e;
        }
        if (!f.isDirectory() && f.type() != io.paddock.FileType.SYMLINK) {
            throw ConnectException.invalid("process.cwd: " + dir + " is not a directory");
        }
    }

    /** Reads one of the command's streams to its end, handing chunks to the subscribers; the last one ends it. */
    private void pump(Call c, ProcessEntry entry, InputStream in, boolean stderr, AtomicInteger open) {
        byte[] buf = new byte[32 * 1024];
        try (in) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (n == 0) {
                    continue;
                }
                ProcessEvent.DataEvent.Builder d = ProcessEvent.DataEvent.newBuilder();
                ByteString bytes = ByteString.copyFrom(buf, 0, n);
                if (stderr) {
                    d.setStderr(bytes); // never for a terminal: it merges stderr into its output
                } else if (entry.pty) {
                    d.setPty(bytes);
                } else {
                    d.setStdout(bytes);
                }
                entry.broadcast(ProcessEntry.Item.of(ProcessEvent.newBuilder().setData(d).build()));
            }
        } catch (IOException | RuntimeException e) {
            // the sandbox went or the exec was closed: its exit (or failure) below says which
        } finally {
            if (open.decrementAndGet() == 0) {
                finish(c, entry);
            }
        }
    }

    private void finish(Call c, ProcessEntry entry) {
        ProcessEntry.Item last;
        try {
            last = endOf(entry, entry.exec.onExit().get());
        } catch (ExecutionException e) {
            last = new ProcessEntry.Item(null, ConnectException.of(e.getCause()), true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            last = new ProcessEntry.Item(null, new ConnectException(ConnectCode.CANCELED, "envd is shutting down"), true);
        }
        tables.removeProcess(c.sandbox().id(), entry.pid, entry);
        entry.broadcast(last);
        try {
            entry.exec.close();
        } catch (RuntimeException e) {
            // it has ended; nothing is left to release that its sandbox does not release
        }
    }

    /** envd's end event: Go's {@code ProcessState} wording ({@code exit status 1}, {@code signal: killed}). */
    static ProcessEntry.Item endOf(ProcessEntry entry, ExitStatus s) {
        ProcessEvent.EndEvent.Builder end = ProcessEvent.EndEvent.newBuilder();
        switch (s.outcome()) {
            case EXITED -> {
                String status = "exit status " + s.exitCode();
                end.setExited(true).setExitCode(s.exitCode()).setStatus(status);
                if (s.exitCode() != 0) {
                    end.setError(status);
                }
            }
            case SIGNALED -> {
                String status = "signal: " + signalName(s.signal());
                end.setExited(false).setExitCode(-1).setStatus(status).setError(status);
            }
            case OOM_KILLED -> end.setExited(false).setExitCode(-1).setStatus("signal: killed")
                    .setError("signal: killed (out of memory: the sandbox's memory limit was reached)");
            case TIMED_OUT -> {
                if (entry.timeoutIsDeadline) {
                    return new ProcessEntry.Item(null, new ConnectException(ConnectCode.DEADLINE_EXCEEDED,
                            "the command ran past the call's timeout (Connect-Timeout-Ms); its process tree was killed"), true);
                }
                end.setExited(false).setExitCode(-1).setStatus("signal: killed").setError("signal: killed (timed out)");
            }
        }
        return new ProcessEntry.Item(ProcessEvent.newBuilder().setEnd(end).build(), null, true);
    }

    private static final String[] SIGNAL_NAMES = {null, "hangup", "interrupt", "quit", "illegal instruction",
            "trace/breakpoint trap", "aborted", "bus error", "floating point exception", "killed", "user defined signal 1",
            "segmentation fault", "user defined signal 2", "broken pipe", "alarm clock", "terminated"};

    static String signalName(int sig) {
        return sig > 0 && sig < SIGNAL_NAMES.length ? SIGNAL_NAMES[sig] : "signal " + sig;
    }

    /**
     * Writes a process's events to one stream: the start event, then what the pumps hand over, keepalives while
     * quiet, until the end event, an error, the stream's deadline, or the client going away (a failed write: the
     * process runs on, as envd's does when a client disconnects).
     */
    private static void follow(Call c, ProcessEntry entry, ProcessEntry.Subscriber sub, StreamOut out,
                               Function<ProcessEvent, Message> wrap, long deadline) throws IOException {
        try {
            out.send(wrap.apply(ProcessEvent.newBuilder()
                    .setStart(ProcessEvent.StartEvent.newBuilder().setPid((int) entry.pid)).build()));
            long keepalive = c.keepalive().toNanos();
            long nextPing = System.nanoTime() + keepalive;
            while (true) {
                long now = System.nanoTime();
                long wait = nextPing - now;
                if (deadline != 0) {
                    wait = Math.min(wait, deadline - now);
                }
                ProcessEntry.Item item = wait > 0 ? sub.queue.poll(wait, TimeUnit.NANOSECONDS) : null;
                if (item == null) {
                    if (deadline != 0 && System.nanoTime() - deadline >= 0) {
                        out.end(new ConnectException(ConnectCode.DEADLINE_EXCEEDED, "the call's timeout "
                                + "(Connect-Timeout-Ms) passed"));
                        return;
                    }
                    if (System.nanoTime() - nextPing >= 0) {
                        out.send(wrap.apply(ProcessEvent.newBuilder()
                                .setKeepalive(ProcessEvent.KeepAlive.getDefaultInstance()).build()));
                        nextPing = System.nanoTime() + keepalive;
                    }
                    continue;
                }
                if (item.error() != null) {
                    out.end(item.error());
                    return;
                }
                out.send(wrap.apply(item.event()));
                if (item.last()) {
                    out.end(null);
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.end(new ConnectException(ConnectCode.CANCELED, "envd is shutting down"));
        } finally {
            entry.unsubscribe(sub);
        }
    }
}
