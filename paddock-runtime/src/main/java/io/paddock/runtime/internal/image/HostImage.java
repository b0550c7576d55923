package io.paddock.runtime.internal.image;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.runtime.internal.host.ImageTools;
import io.paddock.runtime.internal.oci.OciSpec.Mount;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileVisitResult;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;
import java.util.stream.Stream;

/**
 * The {@code host} image: the host's {@code /usr} (and {@code /bin}, {@code /lib*} where they are not
 * symlinks into it) bound read-only, under a small root directory that Paddock generates once and shares
 * between sandboxes. The root holds a generated {@code /etc} (users, hosts, resolver) plus an allowlist
 * of world-readable host {@code /etc} entries programs need (dynamic linker cache, alternatives, CA
 * certificates, time zone, Java and Python configuration); nothing secret is copied (no shadow, no SSH or
 * TLS private keys, nothing that is not world-readable).
 *
 * <p>The root directory is content-addressed: its name is a hash of the init binary and of the copied
 * {@code /etc} entries' names, sizes and modification times, so a host change produces a new root and
 * running sandboxes keep theirs.
 */
public final class HostImage {
    private static final Logger LOG = Logger.getLogger(HostImage.class.getName());
    /**
     * Bumped whenever the generated files change (2: names resolve through DNS too, for networked sandboxes;
     * 3: empty {@code /data} and {@code /srv}: mount points for volumes, which a read-only root cannot get later;
     * 4: the host's compiled locales as one locale archive, see {@link #LOCALES}).
     */
    static final int FORMAT = 4;
    /**
     * Where glibc looks for compiled locales. A host without a {@code locale-archive} there (Debian without the
     * {@code locales} package: only libc-bin's {@code C.utf8} directory) makes every locale-aware program that
     * starts with {@code LANG=C.UTF-8} (the sandbox default) open, stat, map and close each of the twelve category
     * files: 110 system calls for {@code /bin/echo} where the archive takes 40. Under gVisor each costs a trip
     * through the Sentry, about 1.3 ms per program start. The image carries the same locales as one archive
     * ({@code .paddock/locale}, made once by the host's {@code localedef}, beside copies of the directories) and
     * binds it read-only over this directory.
     */
    static final String LOCALES = "usr/lib/locale";
    static final String LOCALE_ARCHIVE = "locale-archive";
    /** Host /etc entries copied into the image (when present and world-readable). */
    static final List<String> ETC_ALLOWLIST = List.of(
            "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "debian_version", "fonts",
            "gai.conf", "host.conf", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
            "magic", "magic.mime", "matplotlibrc", "mime.types", "os-release", "perl", "profile", "protocols",
            "python3", "services", "shells", "ssl", "timezone", "java-17-openjdk", "java-21-openjdk",
            "java-25-openjdk", "nodejs", "gitconfig", "R", "ImageMagick-6", "vim", "xdg");
    /** Never copied, even when world-readable. */
    static final List<String> ETC_DENYLIST = List.of("ssl/private");
    static final List<String> TOP_LEVEL_DIRS = List.of("bin", "sbin", "lib", "lib32", "lib64", "libx32");

    private final Path root;
    private final List<Mount> mounts;
    private final Path initBinary;
    private final Path hostRoot;
    private final Path preloadLibrary;
    /** The same root prepared in other directories (an image store's layer directory), by directory. */
    private final java.util.concurrent.ConcurrentHashMap<Path, HostImage> elsewhere = new java.util.concurrent.ConcurrentHashMap<>();

    private HostImage(Path root, List<Mount> mounts, Path initBinary, Path hostRoot, Path preloadLibrary) {
        this.root = root;
        this.mounts = mounts;
        this.initBinary = initBinary;
        this.hostRoot = hostRoot;
        this.preloadLibrary = preloadLibrary;
    }

    public Path root() {
        return root;
    }

    /**
     * The name of the root directory in its parent: what {@code paddock-rootfs} names as the lowest layer of an
     * overlay whose layer directory is that parent ({@code host-<hash>}).
     */
    public String layerName() {
        return root.getFileName().toString();
    }

    /**
     * This root, generated (once, content-addressed as here) inside {@code dir}: the layer directory of an
     * image based on the host image, whose layers stack on it in one overlay. Regenerated if it was removed.
     */
    public HostImage preparedIn(Path dir) {
        if (dir.equals(root.getParent())) {
            return this;
        }
        HostImage there = elsewhere.get(dir);
        if (there == null || !Files.isDirectory(there.root, LinkOption.NOFOLLOW_LINKS)) {
            there = prepare(dir, initBinary, hostRoot, preloadLibrary);
            elsewhere.put(dir, there);
        }
        return there;
    }

    public List<Mount> mounts() {
        return mounts;
    }

    /**
     * Returns the host image for this init binary, generating its root directory under {@code imagesDir}
     * if it does not exist yet. Safe to call concurrently from several engines: the root is built in a
     * temporary directory and renamed into place.
     */
    public static HostImage prepare(Path imagesDir, Path initBinary, Path hostRoot) {
        return prepare(imagesDir, initBinary, hostRoot, null);
    }

    /**
     * As {@link #prepare(Path, Path, Path)}, with a library every dynamically linked program in the sandbox
     * preloads ({@code /.paddock/<name>}, listed in {@code /etc/ld.so.preload}); {@code null} for none. The
     * runsc tier uses it for {@link GvisorCompat}; the runc tier preloads nothing.
     */
    public static HostImage prepare(Path imagesDir, Path initBinary, Path hostRoot, Path preloadLibrary) {
        try {
            Files.createDirectories(imagesDir);
            List<Path> etcFiles = etcEntries(hostRoot.resolve("etc"));
            List<Path> locales = localeEntries(hostRoot);
            String key = key(initBinary, hostRoot.resolve("etc"), etcFiles, preloadLibrary, hostRoot, locales);
            Path root = imagesDir.resolve("host-" + key);
            if (!Files.isDirectory(root)) {
                Path tmp = Files.createTempDirectory(imagesDir, ".host-build-");
                try {
                    build(tmp, initBinary, hostRoot, etcFiles, preloadLibrary, locales);
                    try {
                        Files.move(tmp, root, StandardCopyOption.ATOMIC_MOVE);
                    } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException | java.nio.file.DirectoryNotEmptyException e) {
                        // another engine built it first
                    }
                } finally {
                    deleteTree(tmp);
                }
            }
            return new HostImage(root, mounts(hostRoot, root), initBinary, hostRoot, preloadLibrary);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot prepare the host image under " + imagesDir + ": " + e, e);
        }
    }

    static List<Mount> mounts(Path hostRoot, Path root) {
        List<Mount> m = new ArrayList<>();
        m.add(bind("/usr"));
        Path locales = root.resolve(".paddock/locale");
        if (Files.isRegularFile(locales.resolve(LOCALE_ARCHIVE), LinkOption.NOFOLLOW_LINKS)) {
            m.add(new Mount("/" + LOCALES, "bind", locales.toString(), List.of("bind", "ro", "nosuid", "nodev")));
        }
        for (String dir : TOP_LEVEL_DIRS) {
            Path p = hostRoot.resolve(dir);
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                m.add(bind("/" + dir));
            }
        }
        return List.copyOf(m);
    }

    private static Mount bind(String path) {
        return new Mount(path, "bind", path, List.of("rbind", "ro", "nosuid", "nodev"));
    }

    /**
     * The host's compiled locale directories (relative to its root: {@code usr/lib/locale/C.utf8}, …) when they
     * are worth an archive: the host has none of its own, and has {@code localedef} to make one. Empty otherwise.
     */
    static List<Path> localeEntries(Path hostRoot) throws IOException {
        Path dir = hostRoot.resolve(LOCALES);
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)
                || Files.exists(dir.resolve(LOCALE_ARCHIVE), LinkOption.NOFOLLOW_LINKS)
                || !Files.isExecutable(hostRoot.resolve("usr/bin/localedef"))) {
            return List.of();
        }
        try (Stream<Path> list = Files.list(dir)) {
            return list.filter(p -> Files.isRegularFile(p.resolve("LC_CTYPE"), LinkOption.NOFOLLOW_LINKS))
                    .map(hostRoot::relativize).sorted().toList();
        }
    }

    /**
     * {@code .paddock/locale}: copies of the host's locale directories and one archive of them, made by the host's
     * {@code localedef}. A host whose {@code localedef} fails gets no archive, and its sandboxes read the host's
     * directory as before.
     */
    private static void buildLocales(Path dir, Path hostRoot, List<Path> locales) throws IOException {
        if (locales.isEmpty()) {
            return;
        }
        Path out = Files.createDirectories(dir.resolve(".paddock/locale"));
        chmod(out, "rwxr-xr-x");
        List<Path> sources = new ArrayList<>();
        for (Path rel : locales) {
            Path src = hostRoot.resolve(rel);
            Path dst = out.resolve(src.getFileName().toString());
            try (Stream<Path> walk = Files.walk(src)) {
                for (Path p : walk.toList()) {
                    copyEntry(p, dst.resolve(src.relativize(p).toString()));
                }
            }
            sources.add(src);
        }
        Path prefix = dir.resolve(".paddock/locale-build");
        Path built = Files.createDirectories(prefix.resolve(LOCALES)).resolve(LOCALE_ARCHIVE);
        Optional<String> failed = ImageTools.localeArchive(hostRoot.resolve("usr/bin/localedef"), prefix, sources);
        if (failed.isEmpty() && Files.isRegularFile(built)) {
            chmod(Files.move(built, out.resolve(LOCALE_ARCHIVE)), "r--r--r--");
        } else {
            LOG.warning("localedef could not archive the host's locales; sandboxes read them file by file: "
                    + failed.orElse("it wrote no archive"));
        }
        deleteTree(dir.resolve(".paddock/locale-build"));
    }

    private static void build(Path dir, Path initBinary, Path hostRoot, List<Path> etcFiles, Path preloadLibrary,
            List<Path> locales) throws IOException {
        Path hostEtc = hostRoot.resolve("etc");
        chmod(dir, "rwxr-xr-x");
        for (String d : List.of("usr", "proc", "sys", "dev", "etc", "root", "var", "run", "opt", "home", "mnt", "srv", "data")) {
            chmod(Files.createDirectory(dir.resolve(d)), "rwxr-xr-x");
        }
        chmod(dir.resolve("root"), "rwx------");
        chmod(Files.createDirectory(dir.resolve("tmp")), "rwxrwxrwx");
        Files.setAttribute(dir.resolve("tmp"), "unix:mode", 01777);
        chmod(Files.createDirectory(dir.resolve("workspace")), "rwxr-xr-x");
        Files.createSymbolicLink(dir.resolve("var/tmp"), Path.of("/tmp"));
        for (String top : TOP_LEVEL_DIRS) {
            Path host = hostRoot.resolve(top);
            if (Files.isSymbolicLink(host)) {
                Files.createSymbolicLink(dir.resolve(top), Files.readSymbolicLink(host));
            } else if (Files.isDirectory(host)) {
                chmod(Files.createDirectory(dir.resolve(top)), "rwxr-xr-x");
            }
        }
        Path paddock = Files.createDirectory(dir.resolve(".paddock"));
        chmod(paddock, "rwxr-xr-x");
        Path init = dir.resolve(".paddock/init");
        Files.copy(initBinary, init);
        chmod(init, "r-xr-xr-x");

        Path etc = dir.resolve("etc");
        for (Path rel : etcFiles) {
            Path src = hostEtc.resolve(rel);
            Path dst = etc.resolve(rel.toString());
            Files.createDirectories(dst.getParent());
            copyEntry(src, dst);
        }
        write(etc, "passwd", """
                root:x:0:0:root:/root:/bin/sh
                sandbox:x:1000:1000:Paddock sandbox user:/workspace:/bin/bash
                nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
                """);
        write(etc, "group", """
                root:x:0:
                tty:x:5:
                sandbox:x:1000:
                nogroup:x:65534:
                """);
        write(etc, "hosts", """
                127.0.0.1\tlocalhost sandbox
                ::1\tlocalhost ip6-localhost ip6-loopback
                """);
        write(etc, "hostname", "sandbox\n");
        // A sandbox with a network gets its own resolv.conf bound over this one (naming Paddock's resolver);
        // without one, "dns" finds no server and fails at once.
        write(etc, "resolv.conf", "# no network\n");
        write(etc, "nsswitch.conf", """
                passwd: files
                group: files
                shadow: files
                hosts: files dns
                networks: files
                protocols: files
                services: files
                """);
        if (preloadLibrary != null) {
            Path lib = dir.resolve(".paddock").resolve(preloadLibrary.getFileName().toString());
            Files.copy(preloadLibrary, lib);
            chmod(lib, "r-xr-xr-x");
            write(etc, "ld.so.preload", "/.paddock/" + lib.getFileName() + "\n");
        }
        chmod(etc, "rwxr-xr-x");
        buildLocales(dir, hostRoot, locales);
    }

    /** One host entry into the image: a symlink as such, a directory {@code rwxr-xr-x}, a file's bytes {@code r--r--r--}. */
    private static void copyEntry(Path src, Path dst) throws IOException {
        if (Files.isSymbolicLink(src)) {
            Files.createSymbolicLink(dst, Files.readSymbolicLink(src));
        } else if (Files.isDirectory(src, LinkOption.NOFOLLOW_LINKS)) {
            chmod(Files.createDirectories(dst), "rwxr-xr-x");
        } else {
            chmod(Files.copy(src, dst), "r--r--r--");
        }
    }

    private static void write(Path etc, String name, String content) throws IOException {
        Path p = etc.resolve(name);
        Files.deleteIfExists(p);
        Files.writeString(p, content, StandardCharsets.UTF_8);
        chmod(p, "r--r--r--");
    }

    /** Allowlisted, world-readable entries under the host's /etc, relative to it, parents before children. */
    static List<Path> etcEntries(Path hostEtc) throws IOException {
        List<Path> out = new ArrayList<>();
        for (String name : ETC_ALLOWLIST) {
            Path top = hostEtc.resolve(name);
            if (!Files.exists(top, LinkOption.NOFOLLOW_LINKS)) {
                continue;
            }
            Files.walkFileTree(top, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                    Path rel = hostEtc.relativize(dir);
                    if (denied(rel) || !worldReadable(dir)) {
                        return FileVisitResult.SKIP_SUBTREE;
                    }
                    out.add(rel);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Path rel = hostEtc.relativize(file);
                    if (!denied(rel) && worldReadable(file)) {
                        out.add(rel);
                    }
                    return FileVisitResult.CONTINUE;
                }
            });
        }
        return out;
    }

    private static boolean denied(Path rel) {
        String s = rel.toString();
        return ETC_DENYLIST.stream().anyMatch(d -> s.equals(d) || s.startsWith(d + "/"));
    }

    private static boolean worldReadable(Path p) throws IOException {
        if (Files.isSymbolicLink(p)) {
            return true;
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
        if (!perms.contains(PosixFilePermission.OTHERS_READ)) {
            return false;
        }
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            return perms.contains(PosixFilePermission.OTHERS_EXECUTE);
        }
        return Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS);
    }

    private static String key(Path initBinary, Path hostEtc, List<Path> etcFiles, Path preloadLibrary, Path hostRoot,
            List<Path> locales) throws IOException {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(("format " + FORMAT + "\n").getBytes(StandardCharsets.UTF_8));
            md.update(Files.readAllBytes(initBinary));
            if (preloadLibrary != null) {
                md.update(("preload " + preloadLibrary.getFileName() + "\n").getBytes(StandardCharsets.UTF_8));
                md.update(Files.readAllBytes(preloadLibrary));
            }
            for (Path rel : etcFiles) {
                Path p = hostEtc.resolve(rel);
                String line = rel + " " + (Files.isSymbolicLink(p) ? "-> " + Files.readSymbolicLink(p)
                        : Files.size(p) + " " + Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toMillis());
                md.update((line + "\n").getBytes(StandardCharsets.UTF_8));
            }
            for (Path rel : locales) {
                try (Stream<Path> walk = Files.walk(hostRoot.resolve(rel))) {
                    for (Path p : walk.sorted().toList()) {
                        String line = hostRoot.relativize(p) + " " + (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
                                ? Files.size(p) + " " + Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toMillis() : "");
                        md.update((line + "\n").getBytes(StandardCharsets.UTF_8));
                    }
                }
            }
            return HexFormat.of().formatHex(md.digest()).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Path chmod(Path p, String perms) throws IOException {
        Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(perms));
        return p;
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
