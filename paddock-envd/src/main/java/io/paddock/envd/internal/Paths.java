package io.paddock.envd.internal;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * E2B's paths onto Paddock's: Paddock takes absolute paths, or paths relative to the sandbox's workdir (the sandbox
 * user's home, as E2B's relative paths are relative to the user's home), without {@code .} or {@code ..}
 * components. E2B's are cleaned lexically first, as Go's {@code filepath.Clean} does: {@code /a/./b/../c} is
 * {@code /a/c}, {@code ..} above {@code /} stays at {@code /}; {@code ~} and {@code ~/x} name the home directory.
 * The init still resolves every symlink inside the sandbox, so cleaning can only name places in it.
 */
public final class Paths {
    private Paths() {
    }

    /** The cleaned path; {@code invalid_argument} naming {@code field} when it is empty or climbs out of the home. */
    public static String clean(String path, String field) {
        if (path.isEmpty()) {
            throw ConnectException.invalid(field + ": empty path");
        }
        if (path.indexOf('\0') >= 0) {
            throw ConnectException.invalid(field + ": contains a NUL byte");
        }
        String p = path;
        if (p.equals("~")) {
            p = "";
        } else if (p.startsWith("~/")) {
            p = p.substring(2);
        }
        boolean absolute = p.startsWith("/");
        Deque<String> parts = new ArrayDeque<>();
        for (String part : p.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty()) {
                    parts.removeLast();
                } else if (!absolute) {
                    throw ConnectException.invalid(field + ": \"" + path + "\" climbs above the home directory; "
                            + "give an absolute path");
                }
                continue;
            }
            parts.addLast(part);
        }
        String joined = String.join("/", parts);
        if (absolute) {
            return "/" + joined;
        }
        if (joined.isEmpty()) {
            throw ConnectException.invalid(field + ": \"" + path + "\" names the home directory itself; Paddock needs "
                    + "its absolute path (the sandbox's workdir, /workspace unless the spec says otherwise)");
        }
        return joined;
    }

    /** {@code dir} joined with a relative name. */
    public static String join(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }
}
