package io.paddock;

import java.util.Locale;
import java.util.Objects;

/**
 * What a sandbox may do with a path of its workspace. The levels are ordered: each allows everything the one
 * before it allows. They are enforced by the kernel's view of the workspace inside the sandbox (what is mounted
 * and how), never by checks a process inside could bypass.
 *
 * <p>On a directory, {@link #VIEW} and {@link #READ} both let a process list it (it sees the children whose
 * level is at least {@code VIEW}); {@link #WRITE} also lets it create, rename and delete entries in it.
 */
public enum Permission {
    /** Absent: not listed in its parent, {@code stat} fails with ENOENT. */
    NONE,
    /** Listed with its metadata (name, type, size, times), but opening a file fails with EACCES. */
    VIEW,
    /** Readable, not writable. */
    READ,
    /** Full access, including creating, renaming and deleting entries inside a directory. */
    WRITE;

    /** The level's name as rules write it: {@code none}, {@code view}, {@code read} or {@code write}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Whether this level allows at least what {@code other} allows. */
    public boolean atLeast(Permission other) {
        return compareTo(Objects.requireNonNull(other, "other")) >= 0;
    }

    /** Parses {@code none}, {@code view}, {@code read} or {@code write} (any case). */
    public static Permission parse(String text) {
        Objects.requireNonNull(text, "text");
        for (Permission p : values()) {
            if (p.label().equalsIgnoreCase(text.trim())) {
                return p;
            }
        }
        throw SandboxException.invalid("permission", "unknown level '" + text + "' (none, view, read, write)");
    }

    @Override
    public String toString() {
        return label();
    }
}
