package io.paddock.image.internal;

import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Debian base image Paddock builds itself with {@code mmdebstrap} from Debian's packages, instead of
 * pulling it: {@code debian:<suite>} and {@code debian:<suite>-slim} (documentation, manual pages and
 * translations left out), for every suite the mirror serves ({@code bookworm}, {@code trixie}, {@code
 * stable}, {@code sid}, …). {@code debian} alone is {@code debian:stable}.
 *
 * @param suite    the Debian suite or codename
 * @param slim     whether documentation is left out
 * @param packages extra packages, for Paddock's own prepared images
 */
public record DebianBase(String suite, boolean slim, List<String> packages) {
    private static final Pattern REF = Pattern.compile("(?:docker\\.io/)?(?:library/)?debian(?::([a-z]+)(-slim)?)?");
    private static final Pattern SUITE = Pattern.compile("[a-z]{2,32}");

    public DebianBase {
        if (!SUITE.matcher(suite).matches()) {
            throw SandboxException.invalid("image", "'" + suite + "' is not a Debian suite name");
        }
        packages = List.copyOf(packages);
    }

    /** The base a reference names, if it names one: {@code debian}, {@code debian:bookworm}, {@code debian:trixie-slim}. */
    public static Optional<DebianBase> parse(String reference) {
        Matcher m = REF.matcher(reference);
        if (!m.matches()) {
            return Optional.empty();
        }
        String suite = m.group(1) == null || m.group(1).equals("latest") ? "stable" : m.group(1);
        return Optional.of(new DebianBase(suite, m.group(2) != null, List.of()));
    }

    /** The name it is stored under: {@code debian:bookworm}, {@code debian:bookworm-slim}. */
    public String name() {
        return "debian:" + suite + (slim ? "-slim" : "");
    }

    /**
     * The Debian mirror the host's apt uses (its deb822 {@code .sources} or one-line {@code sources.list}),
     * so that images come from where the host's packages come from; empty to let mmdebstrap use its default.
     */
    static Optional<String> hostMirror(Path etcApt) {
        try {
            Path d = etcApt.resolve("sources.list.d");
            if (Files.isDirectory(d)) {
                try (var s = Files.list(d)) {
                    for (Path p : s.filter(f -> f.toString().endsWith(".sources")).sorted().toList()) {
                        for (String line : Files.readAllLines(p)) {
                            String t = line.trim();
                            if (t.startsWith("URIs:")) {
                                for (String uri : t.substring(5).trim().split("\\s+")) {
                                    if (isMainArchive(uri)) {
                                        return Optional.of(uri);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Path list = etcApt.resolve("sources.list");
            if (Files.isRegularFile(list)) {
                for (String line : Files.readAllLines(list)) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length >= 3 && f[0].equals("deb")) {
                        String uri = f[1].startsWith("[") ? (f.length >= 4 ? f[2] : "") : f[1];
                        if (isMainArchive(uri)) {
                            return Optional.of(uri);
                        }
                    }
                }
            }
        } catch (IOException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }

    private static boolean isMainArchive(String uri) {
        return uri.matches("https?://[^\\s]+") && !uri.contains("security") && uri.replaceAll("/+$", "").endsWith("/debian");
    }
}
