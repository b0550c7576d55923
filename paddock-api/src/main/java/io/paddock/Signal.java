package io.paddock;

/** The POSIX signals a caller may send to a process in a sandbox (Linux numbering). */
public enum Signal {
    SIGHUP(1), SIGINT(2), SIGQUIT(3), SIGKILL(9), SIGUSR1(10), SIGUSR2(12), SIGTERM(15), SIGCONT(18), SIGSTOP(19);

    private final int number;

    Signal(int number) {
        this.number = number;
    }

    public int number() {
        return number;
    }

    /** The signal with this Linux number. */
    public static Signal of(int number) {
        for (Signal s : values()) {
            if (s.number == number) {
                return s;
            }
        }
        throw SandboxException.invalid("signal", "unsupported signal number " + number);
    }
}
