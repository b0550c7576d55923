package io.paddock;

/**
 * The lifecycle of a sandbox. Transitions only go forward, except between running and paused:
 *
 * <pre>
 *   CREATING ──▶ RUNNING ──▶ STOPPING ──▶ STOPPED
 *       │          ▲  │          ▲          ▲
 *       │   resume │  ▼ pause    │          │
 *       │         PAUSED ────────┘          │
 *       └───────────── (create failed) ─────┘
 * </pre>
 *
 * <ul>
 *   <li>{@code CREATING}: host resources are being prepared; no operation is accepted yet.</li>
 *   <li>{@code RUNNING}: the sandbox's init answers; exec and file operations are accepted.</li>
 *   <li>{@code PAUSED}: no process of the sandbox runs ({@link Sandbox#pause()}); exec and file operations fail
 *       with {@link ErrorCode#FAILED_PRECONDITION} until {@link Sandbox#resume()}. Its lifetime deadline keeps
 *       running.</li>
 *   <li>{@code STOPPING}: destroy has begun (by a caller, the lifetime timeout, the entrypoint's exit, an OOM
 *       kill or a failure); new operations fail with {@link ErrorCode#FAILED_PRECONDITION}.</li>
 *   <li>{@code STOPPED}: every process, cgroup, mount and file of the sandbox is gone. Terminal.
 *       {@link SandboxInfo#stopReason()} says why.</li>
 * </ul>
 */
public enum SandboxState {
    CREATING,
    RUNNING,
    PAUSED,
    STOPPING,
    STOPPED;

    public boolean isLive() {
        return this == CREATING || this == RUNNING || this == PAUSED;
    }

    /** Whether the lifecycle allows going from this state to {@code next}. */
    public boolean canMoveTo(SandboxState next) {
        return switch (this) {
            case CREATING -> next == RUNNING || next == STOPPING || next == STOPPED;
            case RUNNING -> next == STOPPING || next == PAUSED;
            case PAUSED -> next == RUNNING || next == STOPPING;
            case STOPPING -> next == STOPPED;
            case STOPPED -> false;
        };
    }
}
