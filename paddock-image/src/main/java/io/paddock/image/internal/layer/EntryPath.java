package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A tar entry name reduced to the components of a path below the layer root. Leading {@code /} and
 * {@code ./}, empty and {@code .} components are dropped and {@code ..} removes the component before it,
 * lexically: the extractor never follows a symlink, so no component's meaning depends on what is on disk.
 * A {@code ..} with nothing left to remove escapes the root and is refused.
 */
record EntryPath(List<String> parts) {
    /** Linux's {@code NAME_MAX} and {@code PATH_MAX}, in bytes. */
    static final int MAX_COMPONENT_BYTES = 255;
    static final int MAX_PATH_BYTES = 4095;

    static final EntryPath ROOT = new EntryPath(List.of());

    EntryPath {
        parts = List.copyOf(parts);
    }

    /** Normalises an entry's name; INVALID_ARGUMENT when it escapes the root or cannot be a Linux path. */
    static EntryPath parse(String raw) {
        return parse(raw, subject(raw));
    }

    /** Normalises a hard link's target name, with messages that name the entry. */
    static EntryPath parseLinkTarget(String entry, String target) {
        return parse(target, subject(entry) + " links to '" + display(target) + "', which");
    }

    private static EntryPath parse(String raw, String subject) {
        if (raw.indexOf('\0') >= 0) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, subject + " contains a NUL byte");
        }
        if (raw.getBytes(StandardCharsets.UTF_8).length > MAX_PATH_BYTES) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, subject + " is longer than " + MAX_PATH_BYTES + " bytes");
        }
        List<String> parts = new ArrayList<>();
        for (String part : raw.split("/", -1)) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (parts.isEmpty()) {
                    throw new SandboxException(ErrorCode.INVALID_ARGUMENT, subject + " escapes the root");
                }
                parts.remove(parts.size() - 1);
                continue;
            }
            if (part.getBytes(StandardCharsets.UTF_8).length > MAX_COMPONENT_BYTES) {
                throw new SandboxException(ErrorCode.INVALID_ARGUMENT,
                        subject + " has a component longer than " + MAX_COMPONENT_BYTES + " bytes");
            }
            parts.add(part);
        }
        return new EntryPath(parts);
    }

    static SandboxException invalid(String raw, String problem) {
        return new SandboxException(ErrorCode.INVALID_ARGUMENT, subject(raw) + " " + problem);
    }

    /** How messages name an entry: {@code layer entry 'NAME'}. */
    static String subject(String raw) {
        return "layer entry '" + display(raw) + "'";
    }

    /** A name as it may appear in a message: at most 200 characters, control characters escaped. */
    static String display(String raw) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < raw.length() && sb.length() < 200; i++) {
            char c = raw.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                sb.append(String.format("\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.length() < raw.length() ? sb + "…" : sb.toString();
    }

    boolean isRoot() {
        return parts.isEmpty();
    }

    /** The last component; the root has none. */
    String name() {
        return parts.get(parts.size() - 1);
    }

    EntryPath parent() {
        return new EntryPath(parts.subList(0, parts.size() - 1));
    }

    EntryPath child(String name) {
        List<String> p = new ArrayList<>(parts);
        p.add(name);
        return new EntryPath(p);
    }

    /** This path under {@code root}; only ever a lexical join. */
    Path under(Path root) {
        Path p = root;
        for (String part : parts) {
            p = p.resolve(part);
        }
        return p;
    }

    @Override
    public String toString() {
        return String.join("/", parts);
    }
}
