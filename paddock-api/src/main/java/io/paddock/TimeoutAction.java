package io.paddock;

/**
 * What happens to a running sandbox when its lifetime deadline passes ({@link SandboxSpec.Builder#onTimeout}).
 */
public enum TimeoutAction {
    /** It is destroyed, with everything it holds. The default. */
    DESTROY,
    /**
     * It is paused instead ({@link Sandbox#pause()}: checkpointed to disk on gVisor, frozen on runc) and kept
     * paused for {@link SandboxSpec#PAUSED_RETENTION} more, then destroyed; {@link Sandbox#setTimeout} moves that,
     * {@link Sandbox#destroy()} ends it at once, and {@link Sandbox#resume()} gives it a fresh lifetime of its
     * {@code timeout}. A sandbox that cannot be paused (the pause fails) is destroyed as with {@link #DESTROY};
     * one already paused when its deadline passes is destroyed too (pausing does not stop the clock).
     */
    PAUSE
}
