package io.paddock;

import java.util.regex.Pattern;

/**
 * The identifier of a sandbox: {@code sb-} followed by 26 lower-case base-32 characters (128 random bits),
 * unguessable and opaque.
 */
public record SandboxId(String value) {
    private static final Pattern FORM = Pattern.compile("sb-[a-z2-7]{26}");

    public SandboxId {
        if (value == null || !FORM.matcher(value).matches()) {
            throw SandboxException.invalid("id", "not a sandbox id: '" + abbreviate(value) + "'");
        }
    }

    public static SandboxId parse(String text) {
        return new SandboxId(text == null ? null : text.trim());
    }

    public static boolean isValid(String text) {
        return text != null && FORM.matcher(text).matches();
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "null";
        }
        return s.length() > 40 ? s.substring(0, 40) + "…" : s;
    }

    @Override
    public String toString() {
        return value;
    }
}
