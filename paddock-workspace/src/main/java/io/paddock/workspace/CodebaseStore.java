package io.paddock.workspace;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.CodebaseMount;
import io.paddock.CodebaseOptions;
import io.paddock.ErrorCode;
import io.paddock.Permission;
import io.paddock.SandboxException;
import io.paddock.internal.Printable;
import io.paddock.internal.Validate;
import io.paddock.workspace.internal.PermissionPlan;
import io.paddock.workspace.internal.Revisions;
import io.paddock.workspace.internal.Tree;
import io.paddock.workspace.internal.TreeWalk;
import io.paddock.workspace.internal.UpperDiff;
import io.paddock.workspace.internal.ViewBuilder;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * Codebases on the host's writable btrfs filesystem, each revision a subvolume that is never changed once made:
 *
 * <pre>
 *   codebases/&lt;name&gt;/codebase.json      name, revision, files, bytes, updated
 *   codebases/&lt;name&gt;/r&lt;N&gt;/              revision N (owned by the engine; files 0644/0755, directories 0755)
 *   codebases/&lt;name&gt;/views/r&lt;N&gt;-&lt;key&gt;/  revision N as a sandbox sees it under some rules (see {@link ViewBuilder}),
 *                                          a snapshot of the revision made once per revision, rules and user
 *   codebases/&lt;name&gt;/sandboxes/&lt;id&gt;     the revision a sandbox started from
 * </pre>
 *
 * A revision older than the current one, and its views, are kept while a sandbox that started from it is
 * recorded, and deleted once none is (after a commit and after a sandbox's record goes; {@link #collect}).
 *
 * Every change is made under a temporary name and renamed into place, so a crash leaves no half codebase,
 * revision or view. Thread-safe: operations on one codebase are serialised.
 */
public final class CodebaseStore {
    /** The most a codebase's revision may hold. */
    public static final long MAX_BYTES = 64L << 30;
    /** Bumped when what a view holds changes, so that views made before are not reused. */
    private static final int VIEW_FORMAT = 2;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path dir;
    private final Subvolumes subvolumes;
    private final java.util.function.LongSupplier free;
    private final Map<String, Object> locks = new ConcurrentHashMap<>();

    /**
     * A sandbox's codebase: the revision it started from and the view it mounts, with its root directory's
     * mode and owner (in the view's ids; {@code -1}: one the sandbox cannot map), which the mount's root takes.
     */
    public record Mounted(String codebase, int revision, Path view, int rootMode, int rootUid, int rootGid) {
    }

    public CodebaseStore(Path dir, Subvolumes subvolumes) {
        this(dir, subvolumes, () -> Long.MAX_VALUE);
    }

    /** @param free what a new codebase may take now: the store's free space less the host's reserve */
    public CodebaseStore(Path dir, Subvolumes subvolumes, java.util.function.LongSupplier free) {
        this.dir = dir;
        this.subvolumes = subvolumes;
        this.free = free;
    }

    private Object lock(String name) {
        return locks.computeIfAbsent(name, n -> new Object());
    }

    private Path home(String name) {
        return dir.resolve(Validate.name("codebase", name));
    }

    // ---- create, list, remove ----

    /** Uploads {@code source} as codebase {@code name} (revision 1). */
    public CodebaseInfo create(String name, Path source, CodebaseOptions options) {
        Path home = home(name);
        synchronized (lock(name)) {
            if (Files.exists(home, LinkOption.NOFOLLOW_LINKS)) {
                throw new SandboxException(ErrorCode.ALREADY_EXISTS, "codebase '" + name + "' already exists");
            }
            TreeWalk.Result walked;
            try {
                walked = TreeWalk.walk(source, new TreeWalk.Options(options.maxFileSize().bytes(), options.ignore()));
            } catch (java.nio.file.NoSuchFileException e) {
                throw SandboxException.invalid("from", "'" + source + "' does not exist");
            } catch (IOException e) {
                throw SandboxException.invalid("from", "cannot read '" + source + "': " + e.getMessage());
            }
            long bytes = walked.tree().entries().stream().mapToLong(Tree.Entry::size).sum();
            if (bytes > MAX_BYTES) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "codebase '" + name + "' would hold " + bytes
                        + " bytes; the most is " + MAX_BYTES);
            }
            long available = free.getAsLong();
            if (bytes > available) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "codebase '" + name + "' would hold " + bytes
                        + " bytes; the store has " + available + " free (the host disk's free space less the reserve"
                        + " it keeps)");
            }
            Path staging = dir.resolve(".tmp-" + random());
            try {
                privateDir(dir);
                Files.createDirectories(staging);
                Path rev = staging.resolve("r1");
                subvolumes.create(rev, MAX_BYTES);
                copyTree(source, walked.tree(), rev);
                Instant now = Instant.now();
                long files = walked.tree().entries().stream().filter(e -> e.kind() != Tree.Kind.DIRECTORY).count();
                writeMeta(staging, new CodebaseInfo(name, 1, files, bytes, now, List.of()));
                Files.move(staging, home, StandardCopyOption.ATOMIC_MOVE);
                List<CodebaseInfo.Skipped> skipped = walked.skipped().stream().map(s -> new CodebaseInfo.Skipped(s.path(),
                        s.reason().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
                                + (s.detail().isEmpty() ? "" : ": " + s.detail()))).toList();
                return new CodebaseInfo(name, 1, files, bytes, now, skipped);
            } catch (IOException | RuntimeException e) {
                deleteQuietly(staging);
                if (e instanceof FileAlreadyExistsException) {
                    throw new SandboxException(ErrorCode.ALREADY_EXISTS, "codebase '" + name + "' already exists");
                }
                throw e instanceof SandboxException se ? se
                        : new SandboxException(ErrorCode.INTERNAL, "storing codebase '" + name + "' failed: " + e, e);
            }
        }
    }

    private static void copyTree(Path source, Tree tree, Path target) throws IOException {
        for (Tree.Entry e : tree.entries()) {
            Path from = source.resolve(e.path());
            Path to = target.resolve(e.path());
            switch (e.kind()) {
                case DIRECTORY -> {
                    Files.createDirectory(to);
                    Files.setAttribute(to, "unix:mode", 0755, LinkOption.NOFOLLOW_LINKS);
                }
                case SYMLINK -> Files.createSymbolicLink(to, Path.of(e.target()));
                case FILE -> {
                    boolean exec = ((Integer) Files.getAttribute(from, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0111) != 0;
                    try (InputStream in = Files.newInputStream(from, LinkOption.NOFOLLOW_LINKS)) {
                        Files.copy(in, to);
                    }
                    Files.setAttribute(to, "unix:mode", exec ? 0755 : 0644, LinkOption.NOFOLLOW_LINKS);
                }
            }
        }
    }

    public List<CodebaseInfo> list() {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).sorted()
                    .map(this::find).flatMap(Optional::stream).toList();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list codebases: " + e, e);
        }
    }

    public CodebaseInfo get(String name) {
        return find(name).orElseThrow(() -> new SandboxException(ErrorCode.NOT_FOUND, "no codebase named '" + name + "'"));
    }

    private Optional<CodebaseInfo> find(String name) {
        Path meta = home(name).resolve("codebase.json");
        if (!Files.isRegularFile(meta, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.empty();
        }
        try {
            JsonNode o = JSON.readTree(meta.toFile());
            return Optional.of(new CodebaseInfo(o.get("name").asText(), o.get("revision").asInt(), o.get("files").asLong(),
                    o.get("bytes").asLong(), Instant.parse(o.get("updated").asText()), List.of()));
        } catch (IOException | RuntimeException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "codebase '" + name + "' has a damaged record " + meta + ": " + e, e);
        }
    }

    private static void writeMeta(Path home, CodebaseInfo info) throws IOException {
        ObjectNode o = JSON.createObjectNode().put("name", info.name()).put("revision", info.revision())
                .put("files", info.files()).put("bytes", info.bytes()).put("updated", info.updated().toString());
        Path tmp = home.resolve(".codebase.json.tmp");
        Files.writeString(tmp, JSON.writeValueAsString(o), StandardCharsets.UTF_8);
        Files.move(tmp, home.resolve("codebase.json"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * Deletes a codebase: its revisions, views and records, after {@code inUse} (run under the lock that
     * {@link #mount} holds, so no sandbox can start mounting it meanwhile) has found no sandbox that mounts it.
     */
    public void remove(String name, Runnable inUse) {
        Path home = home(name);
        synchronized (lock(name)) {
            get(name);
            inUse.run();
            Path doomed = dir.resolve(".rm-" + random());
            try {
                Files.move(home, doomed, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot remove codebase '" + name + "': " + e, e);
            }
            deleteQuietly(doomed);
        }
    }

    /**
     * Makes the store's directory root's own, mode 0700: revisions keep the modes a sandbox sees (0644, 0755), so
     * only this directory keeps another uid on the host (another tenant's sandbox after an escape) from reading
     * them, {@code none} files included (ATTACKS.md A85).
     */
    private static void privateDir(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setAttribute(dir, "unix:uid", 0, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(dir, "unix:gid", 0, LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /** Deletes what a crash left under temporary names, and makes the store's directory private. */
    public void sweep() {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try {
            privateDir(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "cannot make the codebase store " + dir
                    + " private: " + e, e);
        }
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> p.getFileName().toString().startsWith(".")).forEach(this::deleteQuietly);
        } catch (IOException e) {
            // nothing to sweep
        }
    }

    /** Deletes a directory holding subvolumes: each subvolume through the tool, the rest directly. */
    private void deleteQuietly(Path p) {
        try {
            if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS) && isSubvolume(p)) {
                subvolumes.delete(p);
                return;
            }
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                try (Stream<Path> s = Files.list(p)) {
                    s.toList().forEach(this::deleteQuietly);
                }
            }
            Files.deleteIfExists(p);
        } catch (IOException | RuntimeException e) {
            System.getLogger(CodebaseStore.class.getName()).log(System.Logger.Level.WARNING, "cannot delete " + p + ": " + e);
        }
    }

    /** A btrfs subvolume's root directory has inode number 256. */
    private static boolean isSubvolume(Path p) throws IOException {
        return ((Long) Files.getAttribute(p, "unix:ino", LinkOption.NOFOLLOW_LINKS)) == 256L;
    }

    // ---- views ----

    /**
     * The view of codebase {@code mount.codebase()}'s current revision under the mount's rules for a sandbox
     * running as {@code uid}:{@code gid}, made on first use; recorded as the sandbox's.
     */
    public Mounted mount(String sandboxId, CodebaseMount mount, int uid, int gid) {
        String name = mount.codebase();
        synchronized (lock(name)) {
            CodebaseInfo info = get(name);
            Path home = home(name);
            Path rev = home.resolve("r" + info.revision());
            String key = "r" + info.revision() + "-" + viewKey(info.revision(), mount, uid, gid);
            Path view = home.resolve("views").resolve(key);
            try {
                // A view is made once per revision, rules and user; later sandboxes only mount it.
                if (!Files.exists(view, LinkOption.NOFOLLOW_LINKS)) {
                    PermissionPlan plan = PermissionPlan.compile(mount.preset(), mount.rules(), Revisions.list(rev));
                    Files.createDirectories(view.getParent());
                    Path tmp = view.resolveSibling(".tmp-" + random());
                    try {
                        subvolumes.snapshot(rev, tmp);
                        ViewBuilder.apply(tmp, plan, uid, gid);
                        Files.move(tmp, view, StandardCopyOption.ATOMIC_MOVE);
                    } catch (IOException | RuntimeException e) {
                        deleteQuietly(tmp);
                        throw e;
                    }
                }
                Path users = Files.createDirectories(home.resolve("sandboxes"));
                Files.writeString(users.resolve(sandboxId), info.revision() + "\n", StandardCharsets.UTF_8);
                int mode = (Integer) Files.getAttribute(view, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
                int owner = (Integer) Files.getAttribute(view, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                int group = (Integer) Files.getAttribute(view, "unix:gid", LinkOption.NOFOLLOW_LINKS);
                return new Mounted(name, info.revision(), view, mode, owner == ViewBuilder.NOBODY ? -1 : owner,
                        group == ViewBuilder.NOBODY ? -1 : group);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "preparing codebase '" + name + "' failed: " + e, e);
            }
        }
    }

    /** Records that sandbox {@code fork} started from the same revision as {@code source} (a fork of it). */
    public void forked(String source, String fork, String codebase) {
        synchronized (lock(codebase)) {
            Path users = home(codebase).resolve("sandboxes");
            try {
                Files.copy(users.resolve(source), users.resolve(fork));
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "recording the fork " + fork + " of " + source
                        + " on codebase '" + codebase + "' failed: " + e, e);
            }
        }
    }

    /** Forgets a sandbox's record (at its destroy), and what only it still needed ({@link #collect}). */
    public void unmount(String sandboxId, String codebase) {
        synchronized (lock(codebase)) {
            try {
                Files.deleteIfExists(home(codebase).resolve("sandboxes").resolve(sandboxId));
                collect(codebase);
            } catch (IOException | SandboxException e) {
                // a missing codebase has nothing to forget
            }
        }
    }

    /**
     * Deletes codebase {@code name}'s revisions older than the current one, and views of revisions other than the
     * current one, that no recorded sandbox started from; views of an older format (which name no revision) go
     * once no sandbox is recorded at all. Called holding the codebase's lock. Best effort: what cannot be
     * deleted now is tried again at the next call.
     */
    void collect(String name) {
        Path home = home(name);
        int current = get(name).revision();
        java.util.Set<Integer> inUse = new java.util.HashSet<>(java.util.Set.of(current));
        boolean anySandbox = false;
        Path users = home.resolve("sandboxes");
        if (Files.isDirectory(users, LinkOption.NOFOLLOW_LINKS)) {
            try (Stream<Path> s = Files.list(users)) {
                for (Path p : s.toList()) {
                    anySandbox = true;
                    try {
                        inUse.add(Integer.parseInt(Files.readString(p, StandardCharsets.UTF_8).trim()));
                    } catch (IOException | NumberFormatException e) {
                        return; // a record that cannot be read may name any revision: keep them all
                    }
                }
            } catch (IOException e) {
                return;
            }
        }
        java.util.regex.Pattern revision = java.util.regex.Pattern.compile("r(\\d{1,9})");
        java.util.regex.Pattern view = java.util.regex.Pattern.compile("r(\\d{1,9})-[0-9a-f]{32}");
        try (Stream<Path> s = Files.list(home)) {
            for (Path p : s.toList()) {
                java.util.regex.Matcher m = revision.matcher(p.getFileName().toString());
                if (m.matches() && Integer.parseInt(m.group(1)) < current && !inUse.contains(Integer.parseInt(m.group(1)))) {
                    deleteQuietly(p);
                }
            }
        } catch (IOException e) {
            // nothing to collect
        }
        Path views = home.resolve("views");
        if (!Files.isDirectory(views, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> s = Files.list(views)) {
            for (Path p : s.toList()) {
                String f = p.getFileName().toString();
                if (f.startsWith(".")) {
                    continue; // a view being made, under the lock of its maker: it is this caller
                }
                java.util.regex.Matcher m = view.matcher(f);
                if (m.matches() ? !inUse.contains(Integer.parseInt(m.group(1))) : !anySandbox) {
                    deleteQuietly(p);
                }
            }
        } catch (IOException e) {
            // nothing to collect
        }
    }

    private static String viewKey(int revision, CodebaseMount mount, int uid, int gid) {
        StringBuilder s = new StringBuilder().append(VIEW_FORMAT).append('\n').append(revision).append('\n')
                .append(mount.preset().label()).append('\n').append(uid).append(':').append(gid).append('\n');
        mount.rules().forEach(r -> s.append(r).append('\n'));
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(s.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(d, 0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The revision a sandbox started from. */
    private int baseRevision(String sandboxId, String name) {
        try {
            return Integer.parseInt(Files.readString(home(name).resolve("sandboxes").resolve(sandboxId)).trim());
        } catch (IOException | NumberFormatException e) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "sandbox " + sandboxId + " has no record of codebase '"
                    + name + "' (was it removed?)");
        }
    }

    // ---- diff and commit ----

    /** What the sandbox changed: its writable layer {@code upper} against the revision it started from. */
    public List<CodebaseChange> diff(String sandboxId, CodebaseMount mount, Path upper) {
        return diff(sandboxId, mount, upper, NOT_FROZEN);
    }

    /**
     * Holds nothing: for a layer no process writes to (a stopped sandbox's, a test's). A running sandbox's layer
     * is read frozen ({@link LayerHold}).
     */
    public static final LayerHold NOT_FROZEN = () -> () -> { };

    /**
     * Stops every process that can write to a sandbox's writable layer while the store reads it (a diff, the
     * listing and copying of a commit), as {@code docker commit} pauses a container: the layer's links, marks and
     * file types cannot change between a check and the read that follows it (docs/SECURITY.md, host-side reads).
     */
    @FunctionalInterface
    public interface LayerHold {
        /** Freezes the sandbox; closing the answer lets it run again. */
        Frozen freeze();

        /** A freeze to end; never throws. */
        interface Frozen extends AutoCloseable {
            @Override
            void close();
        }
    }

    /** {@link #diff(String, CodebaseMount, Path)}, the layer read while {@code hold} keeps the sandbox frozen. */
    public List<CodebaseChange> diff(String sandboxId, CodebaseMount mount, Path upper, LayerHold hold) {
        synchronized (lock(mount.codebase())) {
            Path base = home(mount.codebase()).resolve("r" + baseRevision(sandboxId, mount.codebase()));
            try {
                Tree tree = Revisions.list(base);
                CodebaseInfo current = get(mount.codebase());
                Path head = home(mount.codebase()).resolve("r" + current.revision());
                Tree headTree = head.equals(base) ? tree : Revisions.list(head);
                PermissionPlan plan = PermissionPlan.compile(mount.preset(), mount.rules(), tree);
                // As a commit would decide: a deletion the rules allow only in part shows as refused, with the
                // writable paths under it that it does delete.
                List<UpperDiff.Change> changes;
                try (LayerHold.Frozen frozen = hold.freeze()) {
                    changes = UpperDiff.of(upper, base, tree);
                }
                return Commits.decide(changes, plan, tree, headTree).stream()
                        .map(d -> new CodebaseChange(d.change().path(), d.change().kind(), d.applied())).toList();
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "reading the changes of " + sandboxId + " failed: " + e, e);
            }
        }
    }

    /**
     * Applies the sandbox's writable changes as the codebase's next revision: all or none. A change to a path
     * whose state in the current revision differs from both the sandbox's base and the sandbox's own is a
     * conflict: nothing is applied.
     */
    public CodebaseInfo commit(String sandboxId, CodebaseMount mount, Path upper) {
        return commit(sandboxId, mount, upper, NOT_FROZEN);
    }

    /**
     * {@link #commit(String, CodebaseMount, Path)}, the layer read (listed, and its files copied into the next
     * revision) while {@code hold} keeps the sandbox frozen; the checks of the new revision and its writing run
     * after the thaw.
     */
    public CodebaseInfo commit(String sandboxId, CodebaseMount mount, Path upper, LayerHold hold) {
        String name = mount.codebase();
        synchronized (lock(name)) {
            CodebaseInfo current = get(name);
            Path home = home(name);
            Path base = home.resolve("r" + baseRevision(sandboxId, name));
            Path head = home.resolve("r" + current.revision());
            Path next = home.resolve("r" + (current.revision() + 1));
            Path tmp = home.resolve(".tmp-" + random());
            LayerHold.Frozen frozen = null;
            try {
                Tree baseTree = Revisions.list(base);
                Tree headTree = head.equals(base) ? baseTree : Revisions.list(head);
                PermissionPlan plan = PermissionPlan.compile(mount.preset(), mount.rules(), baseTree);
                frozen = hold.freeze();
                List<UpperDiff.Change> all = UpperDiff.of(upper, base, baseTree);
                List<UpperDiff.Change> apply = new ArrayList<>();
                List<CodebaseInfo.Skipped> refused = new ArrayList<>();
                for (Commits.Decided d : Commits.decide(all, plan, baseTree, headTree)) {
                    if (d.applied()) {
                        apply.add(d.change());
                    } else {
                        refused.add(new CodebaseInfo.Skipped(d.change().path(), d.refused()));
                    }
                }
                if (!head.equals(base)) {
                    List<String> conflicts = Commits.conflicts(apply, base, head);
                    if (!conflicts.isEmpty()) {
                        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "codebase '" + name + "' changed since "
                                + sandboxId + " started (revision " + base.getFileName().toString().substring(1) + ", now "
                                + current.revision() + "); conflicting paths: " + String.join(", ", conflicts.subList(0,
                                Math.min(20, conflicts.size())).stream().map(Printable::name).toList()) + (conflicts.size() > 20 ? ", …" : ""));
                    }
                }
                subvolumes.snapshot(head, tmp);
                Commits.apply(apply, tmp); // the last read of the layer
                frozen.close();
                frozen = null;
                Tree after = dropEscapingLinks(tmp, apply, headTree, refused);
                long bytes = after.entries().stream().mapToLong(Tree.Entry::size).sum();
                long files = after.entries().stream().filter(e -> e.kind() != Tree.Kind.DIRECTORY).count();
                Files.move(tmp, next, StandardCopyOption.ATOMIC_MOVE);
                CodebaseInfo info = new CodebaseInfo(name, current.revision() + 1, files, bytes, Instant.now(), List.of());
                writeMeta(home, info);
                collect(name); // the previous head, and its views, if no sandbox started from them
                return new CodebaseInfo(info.name(), info.revision(), info.files(), info.bytes(), info.updated(), refused);
            } catch (IOException | RuntimeException e) {
                deleteQuietly(tmp);
                throw e instanceof SandboxException se ? se
                        : new SandboxException(ErrorCode.INTERNAL, "committing " + sandboxId + " to codebase '" + name
                        + "' failed: " + e, e);
            } finally {
                if (frozen != null) {
                    frozen.close(); // a failure while frozen: the sandbox runs again in every case
                }
            }
        }
    }

    /**
     * Removes from {@code tmp} (the next revision being made) each link this commit wrote that leads out of the
     * codebase, resolved as the kernel would through the revision's other links, listing it as skipped; refuses
     * the commit if a link it did not write now leads out (a directory on its way replaced by a link).
     * Returns the revision's listing after.
     */
    private static Tree dropEscapingLinks(Path tmp, List<UpperDiff.Change> applied, Tree headTree,
                                          List<CodebaseInfo.Skipped> refused) throws IOException {
        java.util.Set<String> written = new java.util.HashSet<>();
        applied.stream().filter(c -> c.type() == UpperDiff.Kind.SYMLINK).forEach(c -> written.add(c.path()));
        while (true) {
            Tree after = Revisions.list(tmp);
            Map<String, String> escaping = TreeWalk.escapingLinks(after);
            List<String> own = escaping.keySet().stream().filter(written::contains).toList();
            if (own.isEmpty()) {
                Map<String, String> before = TreeWalk.escapingLinks(headTree);
                List<String> made = escaping.keySet().stream().filter(p -> !before.containsKey(p)).toList();
                if (!made.isEmpty()) {
                    throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the commit would make links of the codebase"
                            + " lead outside it: " + String.join(", ", made.subList(0, Math.min(20, made.size())).stream()
                            .map(Printable::name).toList())
                            + (made.size() > 20 ? ", …" : ""));
                }
                return after;
            }
            for (String p : own) {
                String target = after.get(p).map(Tree.Entry::target).orElse("");
                // a link of the revision being made, which only the engine writes: its directories are real
                Files.delete(Revisions.safeTarget(tmp, p));
                written.remove(p);
                refused.add(new CodebaseInfo.Skipped(p, "link-outside: " + Printable.name(target) + ": " + escaping.get(p)));
            }
        }
    }

    private static String random() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
