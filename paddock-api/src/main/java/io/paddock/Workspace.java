package io.paddock;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * A sandbox working on a codebase under permission rules: AgentFense's shape on top of {@link Codebases} and
 * {@link Paddock#create}. Closing it destroys the sandbox (its uncommitted changes with it) and, when
 * {@link #fromLocal} uploaded the codebase, the codebase too.
 *
 * <pre>{@code
 * try (Workspace ws = Workspace.fromLocal(paddock, Path.of("."), PermissionPreset.AGENT_SAFE,
 *         List.of(PermissionRule.parse("docs/**:view")), SandboxSpec.builder().image("python:3"), List.of("*.log"))) {
 *     ws.sandbox().exec("sh", "-c", "python3 -m pytest > out/report.txt");
 *     ws.diff().forEach(System.out::println);
 *     ws.commit();
 * }
 * }</pre>
 */
public final class Workspace implements AutoCloseable {
    private final Paddock paddock;
    private final Sandbox sandbox;
    private final String codebase;
    private final boolean ownsCodebase;

    private Workspace(Paddock paddock, Sandbox sandbox, String codebase, boolean ownsCodebase) {
        this.paddock = paddock;
        this.sandbox = sandbox;
        this.codebase = codebase;
        this.ownsCodebase = ownsCodebase;
    }

    /**
     * Uploads {@code dir} as a new codebase (a generated name; {@code ignore}: extra gitignore-style patterns) and
     * starts a sandbox on it at {@code /workspace}.
     *
     * @param base the sandbox's image, resources, labels and the rest; its codebase is set here
     */
    public static Workspace fromLocal(Paddock paddock, Path dir, PermissionPreset preset, List<PermissionRule> rules,
                                      SandboxSpec.Builder base, List<String> ignore) {
        Objects.requireNonNull(paddock, "paddock");
        String name = "ws-" + UUID.randomUUID().toString().replace("-", "").substring(0, 20);
        paddock.codebases().create(name, dir, new CodebaseOptions(ignore, CodebaseOptions.DEFAULT.maxFileSize()));
        try {
            return start(paddock, name, preset, rules, base, true);
        } catch (RuntimeException e) {
            try {
                paddock.codebases().remove(name);
            } catch (RuntimeException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }

    /** Starts a sandbox on an existing codebase at {@code /workspace}; closing leaves the codebase. */
    public static Workspace fromCodebase(Paddock paddock, String codebase, PermissionPreset preset,
                                         List<PermissionRule> rules, SandboxSpec.Builder base) {
        return start(Objects.requireNonNull(paddock, "paddock"), codebase, preset, rules, base, false);
    }

    private static Workspace start(Paddock paddock, String codebase, PermissionPreset preset, List<PermissionRule> rules,
                                   SandboxSpec.Builder base, boolean owns) {
        SandboxSpec spec = Objects.requireNonNull(base, "base")
                .codebase(new CodebaseMount(codebase, CodebaseMount.DEFAULT_PATH, preset, rules)).build();
        return new Workspace(paddock, paddock.create(spec), codebase, owns);
    }

    public Sandbox sandbox() {
        return sandbox;
    }

    /** The codebase's name. */
    public String codebase() {
        return codebase;
    }

    /** What the sandbox changed so far ({@link Codebases#diff}). */
    public List<CodebaseChange> diff() {
        return paddock.codebases().diff(sandbox.id());
    }

    /** Applies the sandbox's writable changes to the codebase ({@link Codebases#commit}). */
    public CodebaseInfo commit() {
        return paddock.codebases().commit(sandbox.id());
    }

    /** Destroys the sandbox, then removes the codebase if {@link #fromLocal} made it. */
    @Override
    public void close() {
        try {
            sandbox.destroy();
        } finally {
            if (ownsCodebase) {
                paddock.codebases().remove(codebase);
            }
        }
    }
}
