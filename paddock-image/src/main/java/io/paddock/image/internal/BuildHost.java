package io.paddock.image.internal;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

/**
 * Where an image build runs its steps: sandboxes of the image built so far, supplied by the engine. A RUN
 * step never runs on the host.
 */
public interface BuildHost {
    /**
     * Starts a sandbox of the stored image {@code imageId} (its user, environment and working directory are
     * the build's current ones), with the build's network policy when {@code network} (the engine's
     * {@code buildAllow}), none otherwise.
     */
    BuildSandbox start(String imageId, boolean network);

    /**
     * What is left of the build's time, for the work a build does outside a step's sandbox (a FROM that builds
     * a Debian base); empty when the build has no limit of its own. Throws (DEADLINE_EXCEEDED) when none is left.
     */
    default java.util.Optional<java.time.Duration> timeLeft() {
        return java.util.Optional.empty();
    }

    /** One step's sandbox. Closing destroys it. */
    interface BuildSandbox extends AutoCloseable {
        /** Runs a command to completion, each line of its output (stdout and stderr) to {@code output}; its exit code. */
        int run(List<String> argv, Consumer<String> output);

        /** The sandbox's writable layer on the host, in the overlay format, owned by host ids from {@link #uidBase()}. */
        Path upper();

        long uidBase();

        /** What Paddock put in {@link #upper()} (relative paths), left out of the step's layer. */
        java.util.Set<String> paddockFiles();

        /**
         * The disk the step's writable layer was cut to because the build's owner had only about that left of what it
         * may hold ({@link ImageCharge#remaining()}, and a little for the filesystem's own blocks); empty when it has
         * its usual size.
         */
        default java.util.OptionalLong quotaDisk() {
            return java.util.OptionalLong.empty();
        }

        @Override
        void close();
    }
}
