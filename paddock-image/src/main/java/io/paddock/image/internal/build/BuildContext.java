package io.paddock.image.internal.build;

import io.paddock.ErrorCode;
import io.paddock.FileType;
import io.paddock.ImageStep;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.Digest;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * The files a build's {@code COPY} and {@code ADD} steps read: a context directory with its
 * {@link DockerIgnore} (for a Dockerfile), or the local sources of an {@link io.paddock.Image}.
 *
 * <p>{@link #resolve} finds a step's sources, {@link #entries} lists what is under one, and
 * {@link #inputsHash} hashes all of it for the layer cache. Docker's semantics, with the escapes closed:
 * <ul>
 *   <li>sources are relative to the context's root (a leading {@code /} too); wildcards {@code * ? [...]}
 *       match one path component each, as Go's {@code filepath.Match} does, and may match dot files;</li>
 *   <li>paths the {@code .dockerignore} leaves out do not exist for the build (an ignored directory with
 *       an exception inside it keeps only what the exception lets in);</li>
 *   <li>a source is refused if it, or any directory on the way to it, is a symlink that leads outside the
 *       context; a source that is a symlink inside the context is followed (Docker follows it too); a
 *       symlink <em>under</em> a copied directory is copied as a symlink, whatever it points to, and is
 *       never followed;</li>
 *   <li>special files (FIFOs, sockets, devices) under a source are refused: they cannot be hashed or
 *       copied.</li>
 * </ul>
 *
 * <p>The context must not change while a build reads it (the server builds from its own extracted copy);
 * the executor copies {@link ContextEntry#path()}s without following symlinks. Immutable and thread-safe;
 * every method reads the file system.
 */
public final class BuildContext {
    /** The version of {@link #inputsHash}'s canonical form; a change of form must change it. */
    private static final String HASH_FORM = "paddock copy inputs v1\n";

    /** The context's real path; null for local sources. */
    private final Path root;
    private final DockerIgnore ignore;
    private final Map<String, Path> localSources;

    private BuildContext(Path root, DockerIgnore ignore, Map<String, Path> localSources) {
        this.root = root;
        this.ignore = ignore;
        this.localSources = localSources;
    }

    /** The context directory {@code dir} with its own {@code .dockerignore}, if it has one. */
    public static BuildContext open(Path dir) {
        return of(dir, DockerIgnore.read(dir));
    }

    /** The context directory {@code dir}, leaving out what {@code ignore} matches. */
    public static BuildContext of(Path dir, DockerIgnore ignore) {
        try {
            Path real = dir.toRealPath();
            if (!Files.isDirectory(real)) {
                throw SandboxException.invalid("context", "'" + dir + "' is not a directory");
            }
            return new BuildContext(real, ignore, Map.of());
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "context: cannot open '" + dir + "': " + e, e);
        }
    }

    /**
     * The local files of an {@link io.paddock.Image} ({@link io.paddock.Image#localSources()}): a
     * {@code COPY} source names one of them exactly; no wildcards, no {@code .dockerignore}.
     */
    public static BuildContext local(Map<String, Path> localSources) {
        return new BuildContext(null, DockerIgnore.NONE, Map.copyOf(localSources));
    }

    /**
     * The sources of {@code copy}, sorted by name, without duplicates. Errors (INVALID_ARGUMENT) name
     * {@code line}, the step's Dockerfile line (0 or less: none): a source that matches nothing, one that
     * leads outside the context, several sources for a destination that does not end in {@code /}.
     */
    public List<ResolvedSource> resolve(ImageStep.Copy copy, int line) {
        String where = line > 0 ? "Dockerfile line " + line : (copy.add() ? "ADD" : "COPY");
        String keyword = copy.add() ? "ADD" : "COPY";
        TreeMap<String, ResolvedSource> found = new TreeMap<>();
        for (String source : copy.sources()) {
            List<ResolvedSource> matches = root == null ? local(source, where) : inContext(source, keyword, where);
            for (ResolvedSource match : matches) {
                found.putIfAbsent(match.name(), match);
            }
        }
        if (found.size() > 1 && !copy.dest().endsWith("/")) {
            throw SandboxException.invalid(where, keyword + " failed: " + found.size() + " sources " + found.keySet()
                    + " but the destination '" + copy.dest() + "' is not a directory; end it with '/'");
        }
        return List.copyOf(found.values());
    }

    /** A path and the real path it led to while walking a source's components. */
    private record Step(String name, Path real) {
    }

    private List<ResolvedSource> inContext(String source, String keyword, String where) {
        List<Step> current = List.of(new Step("", root));
        String[] components = source.equals(".") ? new String[0] : source.split("/");
        for (String component : components) {
            List<Step> next = new ArrayList<>();
            for (Step step : current) {
                if (!Files.isDirectory(step.real())) {
                    continue;
                }
                for (String name : children(step.real(), component, where)) {
                    Step child = follow(step, name, source, where);
                    if (child != null) {
                        next.add(child);
                    }
                }
            }
            current = next;
        }
        List<ResolvedSource> out = new ArrayList<>();
        boolean excluded = false;
        for (Step step : current) {
            FileType type = Files.isDirectory(step.real()) ? FileType.DIRECTORY
                    : Files.isRegularFile(step.real()) ? FileType.FILE : FileType.OTHER;
            if (type == FileType.OTHER) {
                throw SandboxException.invalid(where, keyword + " source '" + display(step.name())
                        + "' is a special file (FIFO, socket or device); only files and directories can be copied");
            }
            String name = step.name().isEmpty() ? "." : step.name();
            if (!visible(name, type) || !visible(contextPath(step.real()), type)) {
                excluded = true;
                continue;
            }
            out.add(new ResolvedSource(name, step.real(), type));
        }
        if (out.isEmpty()) {
            throw SandboxException.invalid(where, keyword + " failed: no source files were specified: '" + source
                    + "' matches nothing in the build context" + (excluded ? " (.dockerignore leaves it out)" : ""));
        }
        return out;
    }

    /** The names in {@code dir} that {@code component} names: itself, or the matches of its wildcards. */
    private static List<String> children(Path dir, String component, String where) {
        if (!Glob.hasWildcards(component)) {
            return Files.exists(dir.resolve(component), LinkOption.NOFOLLOW_LINKS) ? List.of(component) : List.of();
        }
        Pattern pattern;
        try {
            pattern = Glob.component(component);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(where, e.getMessage());
        }
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (pattern.matcher(name).matches()) {
                    names.add(name);
                }
            }
        } catch (IOException e) {
            throw unreadable(dir, e);
        }
        names.sort(Comparator.naturalOrder());
        return names;
    }

    /** One component further, symlinks resolved; refused if that leaves the context; null if it dangles. */
    private Step follow(Step parent, String name, String source, String where) {
        Path path = parent.real().resolve(name);
        String joined = parent.name().isEmpty() ? name : parent.name() + "/" + name;
        Path real;
        try {
            real = path.toRealPath();
        } catch (NoSuchFileException e) {
            return null; // a dangling symlink: nothing there
        } catch (IOException e) {
            throw unreadable(path, e);
        }
        if (!real.startsWith(root)) {
            throw SandboxException.invalid(where, "source '" + source + "' leads outside the build context: '"
                    + joined + "' is a symlink to a path outside it");
        }
        return new Step(joined, real);
    }

    private List<ResolvedSource> local(String source, String where) {
        Path path = localSources.get(source);
        if (path == null) {
            throw SandboxException.invalid(where, "'" + source + "' is not one of the image's local sources "
                    + localSources.keySet());
        }
        Path real;
        try {
            real = path.toRealPath();
        } catch (IOException e) {
            throw SandboxException.invalid(where, "the local source " + path + " cannot be read: " + e);
        }
        FileType type = Files.isDirectory(real) ? FileType.DIRECTORY
                : Files.isRegularFile(real) ? FileType.FILE : FileType.OTHER;
        if (type == FileType.OTHER) {
            throw SandboxException.invalid(where, "the local source " + path + " is not a file or directory");
        }
        return List.of(new ResolvedSource(source, real, type));
    }

    /**
     * Everything under {@code source} that the build copies, sorted by path (a directory before what is in
     * it): the source itself (relative path empty), then its files, directories and symlinks, leaving out
     * what the {@code .dockerignore} excludes. Symlinks are listed, never followed.
     */
    public List<ContextEntry> entries(ResolvedSource source) {
        Path start = source.path();
        String base = root == null ? null : contextPath(start);
        if (root != null && !start.startsWith(root)) {
            throw new IllegalArgumentException(start + " is not in the context " + root);
        }
        List<ContextEntry> out = new ArrayList<>();
        Map<String, ContextEntry> ignoredDirectories = new LinkedHashMap<>();
        try {
            Files.walkFileTree(start, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                    String sub = relative(start, dir);
                    ContextEntry entry = new ContextEntry(sub, dir, FileType.DIRECTORY, mode(dir), 0, Optional.empty());
                    if (!sub.isEmpty() && isIgnored(base, sub)) {
                        if (!ignore.hasExceptions()) {
                            return FileVisitResult.SKIP_SUBTREE;
                        }
                        ignoredDirectories.put(sub, entry); // kept only if something inside it is not ignored
                        return FileVisitResult.CONTINUE;
                    }
                    out.add(entry);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    String sub = relative(start, file);
                    if (!sub.isEmpty() && isIgnored(base, sub)) {
                        return FileVisitResult.CONTINUE;
                    }
                    if (attrs.isSymbolicLink()) {
                        String target = Files.readSymbolicLink(file).toString();
                        out.add(new ContextEntry(sub, file, FileType.SYMLINK, mode(file), 0, Optional.of(target)));
                    } else if (attrs.isRegularFile()) {
                        out.add(new ContextEntry(sub, file, FileType.FILE, mode(file), attrs.size(), Optional.empty()));
                    } else {
                        throw SandboxException.invalid("context", "'" + display(join(source.name(), sub))
                                + "' is a special file (FIFO, socket or device) and cannot be copied;"
                                + " leave it out with .dockerignore");
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                    throw e;
                }
            });
        } catch (IOException e) {
            throw unreadable(start, e);
        }
        for (ContextEntry kept : List.copyOf(out)) {
            for (String dir = parent(kept.relativePath()); dir != null; dir = parent(dir)) {
                ContextEntry parentEntry = ignoredDirectories.remove(dir);
                if (parentEntry != null) {
                    out.add(parentEntry);
                }
            }
        }
        out.sort(Comparator.comparing(ContextEntry::relativePath));
        return List.copyOf(out);
    }

    /**
     * The content hash of a step's inputs, {@code sha256:<hex>}: over every entry of every source in
     * name order, its path (the source's name joined with the entry's relative path), type, mode, symlink
     * target and content (sha256). Owners and times are not part of it ({@code COPY} sets owners, and
     * touching a file does not change what is copied); the destination is not either (the step's
     * {@link ImageStep#cacheKey()} has it).
     */
    public String inputsHash(List<ResolvedSource> sources) {
        MessageDigest all = Digest.sha256();
        all.update(HASH_FORM.getBytes(StandardCharsets.UTF_8));
        List<ResolvedSource> sorted = new ArrayList<>(sources);
        sorted.sort(Comparator.comparing(ResolvedSource::name));
        for (ResolvedSource source : sorted) {
            for (ContextEntry entry : entries(source)) {
                String record = join(source.name(), entry.relativePath()) + '\0' + entry.type() + '\0'
                        + Integer.toOctalString(entry.mode()) + '\0' + entry.symlinkTarget().orElse("") + '\0'
                        + (entry.type() == FileType.FILE ? contentHash(entry.path()) : "") + '\n';
                all.update(record.getBytes(StandardCharsets.UTF_8));
            }
        }
        return Digest.of(all).toString();
    }

    // --- helpers -------------------------------------------------------------------------------------------

    /** Whether {@code sub}, below the source at context path {@code base}, is ignored (never for local sources). */
    private boolean isIgnored(String base, String sub) {
        return base != null && ignore.ignored(base.isEmpty() ? sub : base + "/" + sub);
    }

    /** In the context: not ignored, or an ignored directory with something not ignored inside it. */
    private boolean visible(String contextPath, FileType type) {
        if (!ignore.ignored(contextPath)) {
            return true;
        }
        if (type != FileType.DIRECTORY || !ignore.hasExceptions()) {
            return false;
        }
        Path dir = contextPath.equals(".") || contextPath.isEmpty() ? root : root.resolve(contextPath);
        try (var walk = Files.walk(dir)) {
            return walk.skip(1).anyMatch(p -> !ignore.ignored(join(contextPath, relative(dir, p))));
        } catch (IOException e) {
            throw unreadable(dir, e);
        }
    }

    /** A real path inside the context, relative to its root: {@code ""} for the root. */
    private String contextPath(Path real) {
        return relative(root, real);
    }

    private static String relative(Path from, Path to) {
        String rel = from.relativize(to).toString();
        return rel.replace(java.io.File.separatorChar, '/');
    }

    private static String join(String name, String sub) {
        if (sub.isEmpty()) {
            return name;
        }
        return name.isEmpty() || name.equals(".") ? sub : name + "/" + sub;
    }

    private static String parent(String path) {
        int slash = path.lastIndexOf('/');
        return slash < 0 ? (path.isEmpty() ? null : "") : path.substring(0, slash);
    }

    private static String display(String name) {
        return name.isEmpty() ? "." : name;
    }

    /** Permission, set-id and sticky bits, not following a symlink. */
    private static int mode(Path path) throws IOException {
        try {
            return ((Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS)) & 07777;
        } catch (UnsupportedOperationException | IllegalArgumentException e) {
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS);
            int mode = 0;
            for (PosixFilePermission p : perms) {
                mode |= 0400 >> p.ordinal();
            }
            return mode;
        }
    }

    private static String contentHash(Path file) {
        MessageDigest md = Digest.sha256();
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
            for (int n; (n = in.read(buffer)) > 0; ) {
                md.update(buffer, 0, n);
            }
        } catch (IOException e) {
            throw unreadable(file, e);
        }
        return HexFormat.of().formatHex(md.digest());
    }

    private static SandboxException unreadable(Path path, IOException e) {
        return new SandboxException(ErrorCode.INVALID_ARGUMENT, "context: cannot read '" + path + "': " + e, e);
    }
}
