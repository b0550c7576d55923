package io.paddock;

/**
 * One path a sandbox changed in its codebase. {@link #toString} is a line for a person: the path, which the
 * sandbox chose, is quoted if it holds a newline, a control character or bytes that were not UTF-8.
 *
 * @param path     relative to the codebase's root
 * @param kind     what happened to it
 * @param writable whether the sandbox's rules make the path writable, so that a commit applies it
 */
public record CodebaseChange(String path, Kind kind, boolean writable) {
    public enum Kind { ADDED, MODIFIED, DELETED }

    @Override
    public String toString() {
        return switch (kind) {
            case ADDED -> "A";
            case MODIFIED -> "M";
            case DELETED -> "D";
        } + " " + io.paddock.internal.Printable.name(path) + (writable ? "" : "  (not writable by the rules: never committed)");
    }
}
