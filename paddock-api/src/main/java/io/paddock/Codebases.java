package io.paddock;

import java.nio.file.Path;
import java.util.List;

/**
 * Codebases: directories uploaded once and given to sandboxes under permission rules ({@link CodebaseMount}).
 * A sandbox's changes stay in a layer of its own until {@link #commit} applies them. See docs/WORKSPACES.md.
 */
public interface Codebases {
    /**
     * Uploads {@code dir} as codebase {@code name}: what {@code .gitignore}, {@code .sandboxignore} and the
     * options' patterns ignore is left out, as are files over the size limit, special files and links that lead
     * out of the directory; {@link CodebaseInfo#skipped()} says what was left out and why.
     *
     * @throws SandboxException ALREADY_EXISTS if the name is taken, INVALID_ARGUMENT for a bad name or directory
     */
    CodebaseInfo create(String name, Path dir, CodebaseOptions options);

    default CodebaseInfo create(String name, Path dir) {
        return create(name, dir, CodebaseOptions.DEFAULT);
    }

    /** All codebases, by name. */
    List<CodebaseInfo> list();

    /** @throws SandboxException NOT_FOUND */
    CodebaseInfo get(String name);

    /** Removes a codebase and everything stored for it; refused (FAILED_PRECONDITION) while a sandbox mounts it. */
    void remove(String name);

    /** What the sandbox changed in its codebase since it started: added, modified and deleted paths. */
    List<CodebaseChange> diff(SandboxId sandbox);

    /**
     * Applies the sandbox's changes to its codebase as a new revision, atomically: all of them or none. Only
     * paths the sandbox's rules make writable are applied; a path also changed in the codebase since the
     * sandbox started is a conflict (FAILED_PRECONDITION, nothing applied).
     */
    CodebaseInfo commit(SandboxId sandbox);
}
