package io.paddock;

import java.time.Instant;
import java.util.List;

/**
 * A stored codebase.
 *
 * @param name     its name
 * @param revision 1 when uploaded, one more at each commit
 * @param files    regular files and links in it
 * @param bytes    the size of its files' contents
 * @param updated  when its revision was made
 * @param skipped  what the upload left out, with why (only in the answer to {@link Codebases#create}); for
 *                 a commit, the changes it did not apply because the rules do not make their path writable
 */
public record CodebaseInfo(String name, int revision, long files, long bytes, Instant updated, List<Skipped> skipped) {
    public CodebaseInfo {
        skipped = List.copyOf(skipped);
    }

    /** A path left out and why ({@code ignored}, {@code too-large}, {@code link-outside}, {@code special}, …). */
    public record Skipped(String path, String reason) {
    }
}
