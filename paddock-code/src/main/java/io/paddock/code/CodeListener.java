package io.paddock.code;

/**
 * Receives a run's or cell's output as it happens. Called on a Paddock thread, in order per stream; must
 * be quick and must not block. Every method has a no-op default.
 */
public interface CodeListener {
    CodeListener NONE = new CodeListener() {
    };

    default void onStdout(String text) {
    }

    default void onStderr(String text) {
    }

    default void onResult(RichOutput output) {
    }

    default void onPlot(Plot plot) {
    }
}
