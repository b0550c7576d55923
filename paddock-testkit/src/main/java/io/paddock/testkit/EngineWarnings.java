package io.paddock.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The warnings an embedded engine in this JVM logs while it is open (loggers under {@code io.paddock}, through
 * {@code java.util.logging}, where {@code System.Logger} goes by default), so that a test failing on a sandbox
 * that stopped can say what the engine saw: a CI run keeps only the end of its output, not the engine's log.
 */
public final class EngineWarnings implements AutoCloseable {
    private static final int MAX = 200;

    /** Held here: {@code java.util.logging} keeps loggers weakly, and a collected one loses its handler. */
    private final Logger logger = Logger.getLogger("io.paddock");
    private final List<String> seen = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
                synchronized (seen) {
                    if (seen.size() < MAX) {
                        seen.add(r.getMessage());
                    }
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    public EngineWarnings() {
        logger.addHandler(handler);
    }

    /**
     * The warnings that name {@code text} (a sandbox id), one per line, waiting up to {@code wait} for a first one
     * (the engine logs a sandbox's death from another thread, as its caller sees it); "none" if there is none.
     */
    public String about(String text, java.time.Duration wait) {
        long until = System.nanoTime() + wait.toNanos();
        while (true) {
            List<String> hits;
            synchronized (seen) {
                hits = seen.stream().filter(m -> m != null && m.contains(text)).toList();
            }
            if (!hits.isEmpty()) {
                return String.join("\n", hits);
            }
            if (System.nanoTime() >= until) {
                return "none";
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return "none (interrupted)";
            }
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
