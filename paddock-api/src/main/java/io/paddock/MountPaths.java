package io.paddock;

import io.paddock.internal.Validate;

import java.util.List;

/** Where a codebase or a volume may appear in a sandbox. */
final class MountPaths {
    /** Paddock's own and the kernel's: nothing may be mounted on or under these. */
    static final List<String> RESERVED = List.of("/proc", "/sys", "/dev", "/.paddock", "/etc/hosts", "/etc/hostname",
            "/etc/resolv.conf", "/tmp", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc");

    private MountPaths() {
    }

    static void check(String field, String path) {
        if (path == null || !path.startsWith("/") || path.length() > 1024 || path.indexOf('\0') >= 0
                || path.chars().anyMatch(c -> c < 0x20 || c == ':' || c == ',' || c == '\\')) {
            throw SandboxException.invalid(field, "'" + Validate.shorten(path) + "' is not an absolute path (no ':', ',',"
                    + " '\\' or control characters)");
        }
        if (path.equals("/") || !java.nio.file.Path.of(path).normalize().toString().equals(path)) {
            throw SandboxException.invalid(field, "'" + Validate.shorten(path) + "' must be a normal path other than /"
                    + " (no '.', '..', '//' or trailing '/')");
        }
        for (String r : RESERVED) {
            if (overlaps(path, r)) {
                throw SandboxException.invalid(field, path + " is reserved (" + r + "); choose a path such as /workspace,"
                        + " /data or /mnt/NAME");
            }
        }
    }

    /** Whether one of the two paths is the other or under it. */
    static boolean overlaps(String a, String b) {
        return a.equals(b) || a.startsWith(b + "/") || b.startsWith(a + "/");
    }
}
