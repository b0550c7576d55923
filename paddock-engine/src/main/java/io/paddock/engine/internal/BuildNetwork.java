package io.paddock.engine.internal;

import io.paddock.LocalOptions;
import io.paddock.NetworkPolicy;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The network policy of image builds' RUN steps ({@link LocalOptions#buildAllow()}): what the operator said, else
 * {@code $PADDOCK_BUILD_ALLOW}, else the host names of this host's own apt sources, so that a build can install
 * the packages the host itself installs from and reach nothing else unless the operator names it. Decided once,
 * when the engine starts; the policy is enforced as any sandbox's (the resolver, the deny list).
 */
final class BuildNetwork {
    static final String ENV = "PADDOCK_BUILD_ALLOW";

    private BuildNetwork() {
    }

    /** The policy for {@code options}, with {@code env} as the environment and {@code aptDir} for {@code /etc/apt}. */
    static NetworkPolicy of(LocalOptions options, Map<String, String> env, Path aptDir) {
        List<String> words = options.buildAllow();
        if (words.isEmpty()) {
            String fromEnv = env.get(ENV);
            words = fromEnv == null || fromEnv.isBlank() ? List.of(LocalOptions.APT_SOURCES)
                    : LocalOptions.Builder.parseBuildAllow(fromEnv, ENV);
        }
        if (words.equals(List.of("none"))) {
            return NetworkPolicy.none();
        }
        if (words.equals(List.of("open"))) {
            return NetworkPolicy.open();
        }
        Set<String> entries = new LinkedHashSet<>();
        for (String w : words) {
            if (w.equals(LocalOptions.APT_SOURCES)) {
                entries.addAll(aptHosts(aptDir));
            } else {
                entries.add(w);
            }
        }
        return NetworkPolicy.allow(List.copyOf(entries).subList(0, Math.min(entries.size(), NetworkPolicy.MAX_ENTRIES)));
    }

    /**
     * The host names (or addresses) of the network sources in {@code aptDir}'s {@code sources.list},
     * {@code sources.list.d/*.list} (one-line {@code deb}/{@code deb-src} entries) and {@code *.sources} (deb822
     * {@code URIs:} fields), in the order found; {@code file:}, {@code cdrom:} and unparsable URIs are skipped.
     */
    static List<String> aptHosts(Path aptDir) {
        List<Path> files = new ArrayList<>();
        files.add(aptDir.resolve("sources.list"));
        Path d = aptDir.resolve("sources.list.d");
        if (Files.isDirectory(d)) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(d)) {
                s.forEach(files::add);
            } catch (IOException e) {
                // unreadable: no sources from it
            }
        }
        files.sort(null);
        Set<String> hosts = new LinkedHashSet<>();
        for (Path f : files) {
            String name = f.getFileName().toString();
            if (!Files.isRegularFile(f) || !(name.endsWith(".list") || name.endsWith(".sources"))) {
                continue;
            }
            List<String> lines;
            try {
                lines = Files.readAllLines(f, StandardCharsets.UTF_8);
            } catch (IOException e) {
                continue;
            }
            for (String raw : lines) {
                String line = raw.replaceFirst("#.*", "").strip();
                for (String uri : name.endsWith(".sources") ? deb822Uris(line) : oneLineUri(line)) {
                    host(uri).ifPresent(hosts::add);
                }
            }
        }
        return List.copyOf(hosts);
    }

    /** The URI of a one-line entry: {@code deb [options] URI suite [component...]}. */
    private static List<String> oneLineUri(String line) {
        String[] t = line.replaceFirst("\\[[^]]*]", " ").trim().split("\\s+");
        return t.length >= 2 && (t[0].equals("deb") || t[0].equals("deb-src")) ? List.of(t[1]) : List.of();
    }

    /** The URIs of a deb822 {@code URIs:} field line (continuation lines are not used for URIs by apt's writers). */
    private static List<String> deb822Uris(String line) {
        if (!line.regionMatches(true, 0, "URIs:", 0, 5)) {
            return List.of();
        }
        return List.of(line.substring(5).trim().split("\\s+"));
    }

    /** The host of an http(s)/ftp URI, as an allowlist entry (a name, or an address as its /32), if it is one. */
    private static Optional<String> host(String uri) {
        try {
            String u = uri.replaceFirst("^[a-z0-9]+\\+(?=[a-z]+://)", ""); // mirror+http://, tor+https://
            URI parsed = new URI(u);
            String scheme = parsed.getScheme() == null ? "" : parsed.getScheme().toLowerCase(Locale.ROOT);
            if (!Set.of("http", "https", "ftp").contains(scheme) || parsed.getHost() == null) {
                return Optional.empty();
            }
            return Optional.of(NetworkPolicy.allow(parsed.getHost()).entries().get(0));
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty();
        }
    }
}
