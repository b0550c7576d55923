package io.paddock;

/**
 * The size of a command's pseudo-terminal, in character cells: see {@link ExecRequest.Builder#terminal}.
 *
 * @param columns 1 to {@value #MAX}
 * @param rows    1 to {@value #MAX}
 */
public record TerminalSize(int columns, int rows) {
    /** The largest size a side may have: far above any screen, small enough for every terminal program. */
    public static final int MAX = 4096;
    /** The size a terminal has when none is given: the classic 80 × 24. */
    public static final TerminalSize DEFAULT = new TerminalSize(80, 24);

    public TerminalSize {
        if (columns < 1 || columns > MAX) {
            throw SandboxException.invalid("columns", "must be between 1 and " + MAX + ", got " + columns);
        }
        if (rows < 1 || rows > MAX) {
            throw SandboxException.invalid("rows", "must be between 1 and " + MAX + ", got " + rows);
        }
    }

    @Override
    public String toString() {
        return columns + "x" + rows;
    }
}
