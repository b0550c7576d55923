package io.paddock;

/**
 * Progress of an image operation (a pull, push or build), for a terminal or a log. Every method has a no-op
 * default; calls come from the thread doing the work, in order.
 */
public interface ImageListener {
    ImageListener NONE = new ImageListener() {
    };

    /** A line of output: a build step's command output, or what a Debian build prints. */
    default void log(String line) {
    }

    /** A build step starts ({@code index} from 1 of {@code count}); {@code cached} when its layer is reused. */
    default void step(int index, int count, String description, boolean cached) {
    }

    /**
     * A layer's transfer: {@code done} of {@code total} bytes ({@code total} 0 when unknown); {@code complete}
     * once it is there, {@code cached} when nothing had to move.
     */
    default void layer(String digest, long done, long total, boolean complete, boolean cached) {
    }
}
