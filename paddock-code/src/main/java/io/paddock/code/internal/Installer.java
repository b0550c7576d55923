package io.paddock.code.internal;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecRequest;
import io.paddock.ExecResult;
import io.paddock.FileInfo;
import io.paddock.SandboxException;
import io.paddock.code.InstallResult;
import io.paddock.code.Language;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * Offline package installs through the language table's package manager into a per-sandbox target under
 * the workspace ({@code /workspace/.paddock/libs/<language>}), which runs and contexts have on their path.
 * The sandbox has no network, so every install names a source inside the sandbox.
 */
final class Installer {
    private static final Pattern PACKAGE = Pattern.compile("[A-Za-z0-9@_][A-Za-z0-9@._/+=<>!~\\[\\],:-]{0,199}");
    private static final int MAX_PACKAGES = 100;
    private static final Duration MIN_TIMEOUT = Duration.ofMinutes(2);

    private final SandboxCodeInterpreter owner;
    /** language + source + package already installed by this interpreter. */
    private final Set<String> installed = ConcurrentHashMap.newKeySet();

    Installer(SandboxCodeInterpreter owner) {
        this.owner = owner;
    }

    /** Installs what this interpreter has not installed from that source yet (for {@code libraries}). */
    void ensureInstalled(Language lang, List<String> packages, String source) {
        String from = resolveSourcePath(lang, source);
        List<String> missing = packages.stream().filter(p -> !installed.contains(key(lang, from, p))).toList();
        if (!missing.isEmpty()) {
            install(lang, missing, from);
        }
    }

    InstallResult install(Language lang, List<String> packages, String source) {
        long started = System.nanoTime();
        Language.PackageManager pm = lang.packages().orElseThrow(() -> new SandboxException(ErrorCode.FAILED_PRECONDITION,
                "language '" + lang.name() + "' has no package manager in the language table; languages with one: "
                        + owner.options().languages().all().stream().filter(l -> l.packages().isPresent())
                        .map(Language::name).toList()));
        List<String> pkgs = packages == null ? List.of() : List.copyOf(packages);
        if (pkgs.size() > MAX_PACKAGES) {
            throw SandboxException.invalid("packages", "at most " + MAX_PACKAGES + " per install, got " + pkgs.size());
        }
        for (String p : pkgs) {
            if (p == null || !PACKAGE.matcher(p).matches()) {
                throw SandboxException.invalid("packages", "'" + p + "' is not a package name or requirement "
                        + "(letters, digits and @._/+=<>!~[],:- ; not starting with '-')");
            }
        }
        String from = resolveSourcePath(lang, source);
        FileInfo info;
        try {
            info = owner.sandbox().files().stat(from);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "package source '" + from
                        + "' is not reachable in the sandbox: no such file or directory. The sandbox has no network, so "
                        + pm.manager() + " installs only from files inside it; upload them (sandbox.files().write) first");
            }
            throw e;
        }
        List<String> args;
        if (Language.PackageManager.FIND_LINKS.equals(pm.sourceKind())) {
            if (!info.isDirectory()) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "package source '" + from
                        + "' must be a directory of " + pm.manager() + " packages (for pip: wheels), not a file");
            }
            if (pkgs.isEmpty()) {
                throw SandboxException.invalid("packages", "empty; name the packages to install from " + from);
            }
            args = pkgs;
        } else {
            args = resolveFiles(lang, pm, pkgs, from, info);
        }
        requireCommand(lang, pm);
        Map<String, String> vars = owner.vars(lang);
        vars.put("from", from);
        String target = SandboxCodeInterpreter.libs(lang);
        Map<String, String> env = new LinkedHashMap<>(Templates.env(lang.env(), vars));
        env.putAll(Templates.env(pm.env(), vars));
        Duration timeout = owner.options().timeout().compareTo(MIN_TIMEOUT) < 0 ? MIN_TIMEOUT : owner.options().timeout();
        ExecResult r = owner.sandbox().exec(ExecRequest.builder().argv(Templates.argv(pm.install(), vars, args))
                .env(env).timeout(timeout).outputLimit(ByteSize.kib(256)).build());
        String log = r.stdoutText() + r.stderrText();
        if (!r.success()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, pm.manager() + " could not install "
                    + (pkgs.isEmpty() ? from : pkgs) + " from " + from + " (" + r.status().describe() + "): "
                    + summary(log));
        }
        for (String p : pkgs) {
            installed.add(key(lang, from, p));
        }
        return new InstallResult(lang.name(), pm.manager(), pkgs, from, target, Outputs.cap(log, 64 * 1024),
                SandboxCodeInterpreter.since(started));
    }

    private String resolveSourcePath(Language lang, String source) {
        String from = source != null ? source : owner.options().packageSource().orElse(null);
        if (from == null || from.isBlank()) {
            String manager = lang.packages().map(Language.PackageManager::manager).orElse("the package manager");
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "no package source given for " + manager
                    + ": the sandbox has no network, so packages install only from a directory or archive inside it "
                    + "(for pip a wheel directory, used with --no-index --find-links; for npm a tarball or package "
                    + "directory). Upload them with sandbox.files() and pass that path as the source, or set "
                    + "CodeOptions.packageSource");
        }
        if (!from.startsWith("/")) {
            from = "/workspace/" + from;
        }
        return from;
    }

    private List<String> resolveFiles(Language lang, Language.PackageManager pm, List<String> pkgs, String from,
                                      FileInfo info) {
        if (info.isFile()) {
            return List.of(from);
        }
        if (!info.isDirectory()) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "package source '" + from + "' is neither a file nor a directory");
        }
        if (!pm.manifest().isEmpty() && owner.sandbox().files().exists(from + "/" + pm.manifest())) {
            return List.of(from); // an unpacked package
        }
        if (pkgs.isEmpty()) {
            throw SandboxException.invalid("packages", "empty; name the packages to install from the directory " + from);
        }
        List<FileInfo> entries = owner.sandbox().files().list(from);
        List<String> out = new ArrayList<>();
        for (String p : pkgs) {
            String[] nameVersion = splitVersion(p);
            String base = nameVersion[0].replaceFirst("^@", "").replace('/', '-');
            String prefix = base + "-" + (nameVersion[1] == null ? "" : nameVersion[1]);
            FileInfo best = entries.stream().filter(FileInfo::isFile)
                    .filter(f -> f.name().startsWith(prefix) && pm.extensions().stream().anyMatch(f.name()::endsWith))
                    .filter(f -> nameVersion[1] == null ? Character.isDigit(at(f.name(), base.length() + 1))
                            : pm.extensions().stream().anyMatch(ext -> f.name().equals(prefix + ext)))
                    .max(Comparator.comparing(FileInfo::name)).orElse(null);
            if (best == null) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "package '" + p + "' is not in the package source "
                        + from + " (looked for " + prefix + (nameVersion[1] == null ? "*" : "") + String.join("|", pm.extensions())
                        + "); the sandbox has no network, so " + pm.manager() + " installs only what is there");
            }
            out.add(from + "/" + best.name());
        }
        return out;
    }

    private static char at(String s, int i) {
        return i < s.length() ? s.charAt(i) : ' ';
    }

    /** {name, version or null} of {@code name@1.2.3}, {@code @scope/name@1.2.3} or {@code name==1.2.3}. */
    private static String[] splitVersion(String p) {
        int eq = p.indexOf("==");
        if (eq > 0) {
            return new String[] {p.substring(0, eq), p.substring(eq + 2)};
        }
        int at = p.lastIndexOf('@');
        if (at > 0) {
            return new String[] {p.substring(0, at), p.substring(at + 1)};
        }
        return new String[] {p, null};
    }

    private void requireCommand(Language lang, Language.PackageManager pm) {
        owner.requireCommand(lang, Templates.command(pm.install()));
    }

    private static String key(Language lang, String from, String pkg) {
        return lang.name() + "\0" + from + "\0" + pkg.toLowerCase(Locale.ROOT);
    }

    /** The manager's error lines, or its last lines. */
    private static String summary(String log) {
        List<String> lines = log.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        List<String> errors = lines.stream().filter(l -> l.startsWith("ERROR") || l.startsWith("npm ERR")
                || l.startsWith("npm error") || l.toLowerCase(Locale.ROOT).startsWith("error")).toList();
        List<String> pick = errors.isEmpty() ? lines.subList(Math.max(0, lines.size() - 8), lines.size())
                : errors.subList(0, Math.min(errors.size(), 8));
        return Outputs.cap(String.join(" | ", pick), 4000);
    }
}
