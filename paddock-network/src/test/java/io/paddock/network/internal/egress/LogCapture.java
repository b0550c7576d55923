package io.paddock.network.internal.egress;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Everything the egress package logs, at every level, formatted as it would be printed (parameters filled in,
 * stack traces included): System.Logger goes to java.util.logging when nothing else is installed.
 */
final class LogCapture extends Handler implements AutoCloseable {
    private final Logger logger;
    private final Level previous;
    private final SimpleFormatter formatter = new SimpleFormatter();
    private final List<String> lines = new CopyOnWriteArrayList<>();

    private LogCapture(Logger logger) {
        this.logger = logger;
        this.previous = logger.getLevel();
        setLevel(Level.ALL);
    }

    /** Captures the egress package's loggers, DEBUG (FINE) and below included, until closed. */
    static LogCapture start() {
        LogCapture capture = new LogCapture(Logger.getLogger("io.paddock.network.internal.egress"));
        capture.logger.setLevel(Level.ALL);
        capture.logger.addHandler(capture);
        return capture;
    }

    List<String> lines() {
        return List.copyOf(lines);
    }

    @Override
    public void publish(LogRecord record) {
        lines.add(formatter.format(record));
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        logger.removeHandler(this);
        logger.setLevel(previous);
    }
}
