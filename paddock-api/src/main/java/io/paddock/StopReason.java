package io.paddock;

/** Why a sandbox stopped. */
public enum StopReason {
    /** A caller destroyed it. */
    DESTROYED,
    /** Its lifetime timeout passed. */
    TIMEOUT,
    /** Its entrypoint command exited; the entrypoint's exit status is in {@link SandboxInfo#entrypointExit()}. */
    ENTRYPOINT_EXITED,
    /** The sandbox as a whole ran out of memory and its init was killed. */
    OOM,
    /** Creating it failed, or its init died unexpectedly. */
    FAILED
}
