package io.paddock;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A non-negative number of bytes. Parsed from human forms such as {@code 256m}, {@code 1g}, {@code 512Ki},
 * {@code 2GiB} or a plain byte count; all unit prefixes are binary (k = 1024).
 */
public record ByteSize(long bytes) implements Comparable<ByteSize> {
    private static final Pattern FORM =
            Pattern.compile("(\\d{1,19})\\s*([kmgt]?)(i?b?)", Pattern.CASE_INSENSITIVE);

    public ByteSize {
        if (bytes < 0) {
            throw new IllegalArgumentException("byte size must not be negative: " + bytes);
        }
    }

    public static ByteSize bytes(long n) {
        return new ByteSize(n);
    }

    public static ByteSize kib(long n) {
        return new ByteSize(Math.multiplyExact(n, 1024L));
    }

    public static ByteSize mib(long n) {
        return new ByteSize(Math.multiplyExact(n, 1024L * 1024));
    }

    public static ByteSize gib(long n) {
        return new ByteSize(Math.multiplyExact(n, 1024L * 1024 * 1024));
    }

    /**
     * Parses {@code 1024}, {@code 64k}, {@code 256m}, {@code 256MiB}, {@code 1g}, {@code 1G}, {@code 2t}.
     *
     * @throws IllegalArgumentException if the text is not a size
     */
    public static ByteSize parse(String text) {
        Matcher m = FORM.matcher(text == null ? "" : text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a size: '" + text + "' (examples: 512k, 256m, 1g)");
        }
        long n = Long.parseLong(m.group(1));
        int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            case "t" -> 40;
            default -> 0;
        };
        if (shift > 0 && n > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("size too large: '" + text + "'");
        }
        return new ByteSize(n << shift);
    }

    public long toMib() {
        return bytes >> 20;
    }

    @Override
    public int compareTo(ByteSize o) {
        return Long.compare(bytes, o.bytes);
    }

    /** The shortest exact form: {@code 256m}, {@code 1g}, {@code 1536k} or a byte count. */
    @Override
    public String toString() {
        String[] units = {"t", "g", "m", "k"};
        int[] shifts = {40, 30, 20, 10};
        for (int i = 0; i < units.length; i++) {
            long unit = 1L << shifts[i];
            if (bytes != 0 && bytes % unit == 0) {
                return (bytes / unit) + units[i];
            }
        }
        return Long.toString(bytes);
    }
}
