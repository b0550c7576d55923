package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.NetworkTraffic;
import io.paddock.StopReason;

import java.time.Duration;
import java.util.Optional;

/**
 * What the engine reports as it works, for metrics ({@link LocalPaddock#listen}; the daemon's {@code /metrics},
 * docs/ARCHITECTURE.md, "Metrics and the audit log"). Paddock and JDK types only: the engine knows nothing of
 * Prometheus or of whoever listens.
 *
 * <p>No event names a sandbox, a tenant, a label or anything a tenant wrote: only the tier, the origin, a reason,
 * an outcome or an error code, each from a small closed set, and numbers. So a listener cannot leak one
 * tenant's ids into a metric label, and its label sets stay bounded.
 *
 * <p>Every method has a no-op default. Calls come from the thread doing the work (a request's, a timer's, an
 * exec's completion), concurrently: an implementation must be thread-safe, return at once without blocking or
 * doing I/O, and not throw (what it throws is logged and dropped, never allowed to fail the operation).
 */
public interface EngineEvents {
    /** Listens to nothing. */
    EngineEvents NONE = new EngineEvents() {
    };

    /** Where a new sandbox came from. */
    enum Origin {
        /** Created from nothing: the tier started it. */
        COLD,
        /** Taken from a warm pool (a pool hit). */
        POOL,
        /** Restored from another sandbox's checkpoint. */
        FORK
    }

    /**
     * A sandbox was created and runs.
     *
     * @param tier   its tier ({@code runc}, {@code runsc}, …)
     * @param origin where it came from
     * @param took   from the engine's create call until it returned
     */
    default void sandboxCreated(String tier, Origin origin, Duration took) {
    }

    /**
     * A create failed with {@code code} after {@code took}; nothing of it remains. {@code tier} is {@code unknown}
     * when the spec named a tier this host does not have (the name is the caller's, so it is not passed on).
     */
    default void sandboxCreateFailed(String tier, ErrorCode code, Duration took) {
    }

    /**
     * A sandbox began to stop (destroyed, timed out, its entrypoint exited, …). Called once per sandbox, after
     * it left the live states and before its network is removed.
     *
     * @param traffic what it sent and received in all, when it had a network interface
     */
    default void sandboxStopped(String tier, StopReason reason, Optional<NetworkTraffic> traffic) {
    }

    /**
     * A command ended ({@code Sandbox.exec}, or a started {@code ExecProcess} exited).
     *
     * @param took from the request until its exit status was known
     */
    default void execFinished(String tier, ExitStatus status, Duration took) {
    }

    /** A command could not run or its exit status never came (the sandbox stopped, the channel broke, …). */
    default void execFailed(String tier, ErrorCode code, Duration took) {
    }

    /** An image pull ended: {@code failure} is empty when it succeeded. */
    default void imagePulled(Optional<ErrorCode> failure, Duration took) {
    }

    /**
     * One layer of a pull is here.
     *
     * @param cached whether the store had it already (a cache hit: nothing was downloaded)
     * @param bytes  the bytes downloaded for it (0 when cached)
     */
    default void imageLayerPulled(boolean cached, long bytes) {
    }

    /** A build step began; {@code cached} when its layer came from the build cache instead of running. */
    default void buildStep(boolean cached) {
    }
}
