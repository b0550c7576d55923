package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.NetworkTraffic;
import io.paddock.StopReason;

import java.time.Duration;
import java.util.Optional;

/**
 * The listener the engine calls: every event goes to each listener added with {@link LocalPaddock#listen} (a
 * daemon's metrics, say; several servers may share one engine), and whatever one throws is logged and dropped,
 * so that a listener can never fail a create, an exec or a destroy, nor keep the others from hearing it.
 * Thread-safe: the listeners are a copy-on-write list.
 */
final class GuardedEvents implements EngineEvents {
    private static final System.Logger LOG = System.getLogger("io.paddock.engine");

    private final java.util.List<EngineEvents> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    void add(EngineEvents listener) {
        listeners.add(java.util.Objects.requireNonNull(listener, "listener"));
    }

    void remove(EngineEvents listener) {
        listeners.remove(listener);
    }

    private void guard(java.util.function.Consumer<EngineEvents> call) {
        for (EngineEvents l : listeners) {
            try {
                call.accept(l);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "an engine event listener failed (ignored): " + e, e);
            }
        }
    }

    @Override
    public void sandboxCreated(String tier, Origin origin, Duration took) {
        guard(l -> l.sandboxCreated(tier, origin, took));
    }

    @Override
    public void sandboxCreateFailed(String tier, ErrorCode code, Duration took) {
        guard(l -> l.sandboxCreateFailed(tier, code, took));
    }

    @Override
    public void sandboxStopped(String tier, StopReason reason, Optional<NetworkTraffic> traffic) {
        guard(l -> l.sandboxStopped(tier, reason, traffic));
    }

    @Override
    public void execFinished(String tier, ExitStatus status, Duration took) {
        guard(l -> l.execFinished(tier, status, took));
    }

    @Override
    public void execFailed(String tier, ErrorCode code, Duration took) {
        guard(l -> l.execFailed(tier, code, took));
    }

    @Override
    public void imagePulled(Optional<ErrorCode> failure, Duration took) {
        guard(l -> l.imagePulled(failure, took));
    }

    @Override
    public void imageLayerPulled(boolean cached, long bytes) {
        guard(l -> l.imageLayerPulled(cached, bytes));
    }

    @Override
    public void buildStep(boolean cached) {
        guard(l -> l.buildStep(cached));
    }

    /** The code a failure reports: a SandboxException's own, INTERNAL for anything else. */
    static ErrorCode codeOf(Throwable t) {
        return t instanceof io.paddock.SandboxException e ? e.code() : ErrorCode.INTERNAL;
    }
}
