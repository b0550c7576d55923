package io.paddock.mcp.internal;

import io.paddock.SandboxException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A tool call's arguments, read with the field named in every error. The SDK checks them against the tool's
 * JSON schema first; these checks are what a schema cannot say (and a second line should a client skip it).
 */
final class Args {
    private final Map<String, Object> args;
    /** The id of the sandbox the call created or reached, once it has (for the audit). */
    private String sandbox;

    Args(Map<String, Object> args) {
        this.args = args == null ? Map.of() : args;
    }

    Map<String, Object> raw() {
        return args;
    }

    void reached(io.paddock.SandboxId id) {
        this.sandbox = id.value();
    }

    Optional<String> reached() {
        return Optional.ofNullable(sandbox);
    }

    String string(String field) {
        return optString(field).orElseThrow(() -> SandboxException.invalid(field, "is required"));
    }

    Optional<String> optString(String field) {
        Object v = args.get(field);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof String s)) {
            throw SandboxException.invalid(field, "a string is expected");
        }
        return Optional.of(s);
    }

    Optional<Boolean> optBoolean(String field) {
        Object v = args.get(field);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof Boolean b)) {
            throw SandboxException.invalid(field, "true or false is expected");
        }
        return Optional.of(b);
    }

    /** A positive number of seconds (fractions allowed), at most {@code max}. */
    Optional<Duration> optSeconds(String field, Duration max) {
        Object v = args.get(field);
        if (v == null) {
            return Optional.empty();
        }
        if (!(v instanceof Number n) || !(n.doubleValue() > 0)) {
            throw SandboxException.invalid(field, "a positive number of seconds is expected");
        }
        Duration d = Duration.ofMillis(Math.max(1, Math.round(n.doubleValue() * 1000)));
        if (d.compareTo(max) > 0) {
            throw SandboxException.invalid(field, "must be at most " + max.toSeconds() + " seconds, got " + n);
        }
        return Optional.of(d);
    }

    /** A non-empty list of strings: an argv. */
    List<String> strings(String field) {
        Object v = args.get(field);
        if (v == null) {
            throw SandboxException.invalid(field, "is required");
        }
        if (!(v instanceof List<?> list) || list.isEmpty()) {
            throw SandboxException.invalid(field, "a non-empty array of strings is expected, for example [\"ls\", \"-l\"]");
        }
        List<String> out = new ArrayList<>(list.size());
        for (Object o : list) {
            if (!(o instanceof String s)) {
                throw SandboxException.invalid(field, "every element must be a string");
            }
            out.add(s);
        }
        return out;
    }

    Map<String, String> stringMap(String field) {
        Object v = args.get(field);
        if (v == null) {
            return Map.of();
        }
        if (!(v instanceof Map<?, ?> map)) {
            throw SandboxException.invalid(field, "an object of string values is expected");
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw SandboxException.invalid(field, "the value of '" + e.getKey() + "' must be a string");
            }
            out.put(String.valueOf(e.getKey()), s);
        }
        return out;
    }
}
