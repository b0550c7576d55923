package io.paddock.workspace.internal;

import io.paddock.SandboxException;

import java.util.List;

/** Workspace paths: relative, {@code /}-separated, normalised; the root is the empty string. */
final class Paths {
    private Paths() {
    }

    /** Refuses a path that is absolute, has an empty, {@code .} or {@code ..} segment, or a NUL. */
    static String check(String path) {
        if (path == null) {
            throw SandboxException.invalid("path", "null");
        }
        if (path.isEmpty()) {
            return path;
        }
        if (path.indexOf('\0') >= 0) {
            throw SandboxException.invalid("path", "'" + path.replace('\0', '?') + "' contains a NUL");
        }
        for (String s : path.split("/", -1)) {
            if (s.isEmpty() || s.equals(".") || s.equals("..")) {
                throw SandboxException.invalid("path", "'" + path + "' is not a normalised relative path");
            }
        }
        return path;
    }

    static List<String> segments(String path) {
        return path.isEmpty() ? List.of() : List.of(path.split("/"));
    }

    static String parent(String path) {
        int slash = path.lastIndexOf('/');
        return slash < 0 ? "" : path.substring(0, slash);
    }

    static String name(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    static String child(String dir, String name) {
        return dir.isEmpty() ? name : dir + "/" + name;
    }
}
