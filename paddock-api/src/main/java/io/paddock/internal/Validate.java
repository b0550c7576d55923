package io.paddock.internal;

import io.paddock.SandboxException;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Validation shared by the embedded engine, the server and the SDK builders, so that bad input fails the
 * same way wherever it enters. Every failure is {@code INVALID_ARGUMENT} naming the field.
 */
public final class Validate {
    /** Sandbox names: a DNS label (lower-case letters, digits, '-'), 1 to 63 characters. */
    private static final Pattern NAME = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
    /** Label keys: optional DNS-subdomain prefix and '/', then a name of up to 63 characters. */
    private static final Pattern LABEL_NAME = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?");
    private static final Pattern LABEL_PREFIX =
            Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*");
    private static final Pattern ENV_KEY = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,255}");

    public static final int MAX_LABELS = 64;
    public static final int MAX_ENV = 1024;
    public static final int MAX_ENV_BYTES = 256 * 1024;
    public static final int MAX_ARGV = 4096;
    public static final int MAX_ARGV_BYTES = 1024 * 1024;
    public static final int MAX_PATH_BYTES = 4096;
    public static final int MAX_COMPONENT_BYTES = 255;

    private Validate() {
    }

    public static String name(String field, String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw SandboxException.invalid(field, "'" + shorten(name)
                    + "' is not a valid name (1-63 lower-case letters, digits or '-', starting and ending"
                    + " with a letter or digit)");
        }
        return name;
    }

    public static void labels(String field, Map<String, String> labels) {
        if (labels.size() > MAX_LABELS) {
            throw SandboxException.invalid(field, "at most " + MAX_LABELS + " labels, got " + labels.size());
        }
        labels.forEach((k, v) -> label(field, k, v));
    }

    public static void label(String field, String key, String value) {
        if (key == null || key.length() > 253 + 1 + 63) {
            throw SandboxException.invalid(field, "label key '" + shorten(key) + "' is too long or missing");
        }
        int slash = key.indexOf('/');
        String prefix = slash >= 0 ? key.substring(0, slash) : null;
        String name = slash >= 0 ? key.substring(slash + 1) : key;
        if ((prefix != null && (prefix.length() > 253 || !LABEL_PREFIX.matcher(prefix).matches()))
                || !LABEL_NAME.matcher(name).matches()) {
            throw SandboxException.invalid(field, "label key '" + shorten(key)
                    + "' is not valid (an optional DNS prefix and '/', then 1-63 letters, digits, '.', '_' or '-')");
        }
        if (value == null || (!value.isEmpty() && !LABEL_NAME.matcher(value).matches())) {
            throw SandboxException.invalid(field, "label value for '" + key + "' is not valid"
                    + " (empty, or 1-63 letters, digits, '.', '_' or '-', starting and ending alphanumeric)");
        }
    }

    public static void env(String field, Map<String, String> env) {
        if (env.size() > MAX_ENV) {
            throw SandboxException.invalid(field, "at most " + MAX_ENV + " variables, got " + env.size());
        }
        long total = 0;
        for (Map.Entry<String, String> e : env.entrySet()) {
            envKey(field, e.getKey());
            String v = e.getValue();
            if (v == null) {
                throw SandboxException.invalid(field, "variable " + e.getKey() + " has no value");
            }
            if (v.indexOf('\0') >= 0) {
                throw SandboxException.invalid(field, "variable " + e.getKey() + " contains a NUL byte");
            }
            total += e.getKey().length() + 1 + v.getBytes(StandardCharsets.UTF_8).length;
        }
        if (total > MAX_ENV_BYTES) {
            throw SandboxException.invalid(field, "variables total " + total + " bytes, more than " + MAX_ENV_BYTES);
        }
    }

    public static String envKey(String field, String key) {
        if (key == null || !ENV_KEY.matcher(key).matches()) {
            throw SandboxException.invalid(field, "'" + shorten(key)
                    + "' is not a valid variable name (letters, digits and '_', not starting with a digit)");
        }
        return key;
    }

    public static void argv(String field, List<String> argv) {
        if (argv.isEmpty()) {
            throw SandboxException.invalid(field, "the command is empty");
        }
        if (argv.size() > MAX_ARGV) {
            throw SandboxException.invalid(field, "at most " + MAX_ARGV + " arguments, got " + argv.size());
        }
        long total = 0;
        for (int i = 0; i < argv.size(); i++) {
            String a = argv.get(i);
            if (a == null) {
                throw SandboxException.invalid(field, "argument " + i + " is null");
            }
            if (a.indexOf('\0') >= 0) {
                throw SandboxException.invalid(field, "argument " + i + " contains a NUL byte");
            }
            total += a.getBytes(StandardCharsets.UTF_8).length + 1;
        }
        if (argv.get(0).isEmpty()) {
            throw SandboxException.invalid(field, "the program name is empty");
        }
        if (total > MAX_ARGV_BYTES) {
            throw SandboxException.invalid(field, "arguments total " + total + " bytes, more than " + MAX_ARGV_BYTES);
        }
    }

    /**
     * A path inside the sandbox: absolute, or relative to the working directory. Must not contain NUL,
     * empty, '.' or '..' components, and stays within the kernel's length limits. Returns the path with
     * duplicate and trailing slashes removed.
     */
    public static String sandboxPath(String field, String path) {
        if (path == null || path.isEmpty()) {
            throw SandboxException.invalid(field, "the path is empty");
        }
        if (path.indexOf('\0') >= 0) {
            throw SandboxException.invalid(field, "the path contains a NUL byte");
        }
        if (path.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw SandboxException.invalid(field, "the path is longer than " + MAX_PATH_BYTES + " bytes");
        }
        StringBuilder clean = new StringBuilder(path.length());
        if (path.startsWith("/")) {
            clean.append('/');
        }
        for (String part : path.split("/")) {
            if (part.isEmpty()) {
                continue;
            }
            if (part.equals(".") || part.equals("..")) {
                throw SandboxException.invalid(field, "'" + shorten(path)
                        + "' contains a '" + part + "' component; give a plain absolute or relative path");
            }
            if (part.getBytes(StandardCharsets.UTF_8).length > MAX_COMPONENT_BYTES) {
                throw SandboxException.invalid(field, "a component of the path is longer than "
                        + MAX_COMPONENT_BYTES + " bytes");
            }
            if (clean.length() > 0 && clean.charAt(clean.length() - 1) != '/') {
                clean.append('/');
            }
            clean.append(part);
        }
        if (clean.length() == 0) {
            throw SandboxException.invalid(field, "the path is empty");
        }
        return clean.toString();
    }

    /** An absolute path that is not inside a kernel pseudo filesystem (used for cwd and workdir). */
    public static String absoluteDir(String field, String path) {
        String clean = sandboxPath(field, path);
        if (!clean.startsWith("/")) {
            throw SandboxException.invalid(field, "'" + shorten(path) + "' is not an absolute path");
        }
        for (String pseudo : List.of("/proc", "/sys", "/dev")) {
            if (clean.equals(pseudo) || clean.startsWith(pseudo + "/")) {
                throw SandboxException.invalid(field, "'" + shorten(path) + "' is inside " + pseudo
                        + ", which is not allowed as a working directory");
            }
        }
        return clean;
    }

    public static String shorten(String s) {
        if (s == null) {
            return "null";
        }
        String printable = s.replaceAll("\\p{Cntrl}", "?");
        return printable.length() > 80 ? printable.substring(0, 80) + "…" : printable;
    }
}
