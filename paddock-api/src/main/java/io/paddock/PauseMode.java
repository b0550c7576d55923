package io.paddock;

/**
 * What pausing a sandbox did with its memory. Which one a sandbox gets is decided by its tier, never silently
 * downgraded: a caller that needs the memory freed asks for the gVisor tier ({@code runtime("runsc")}).
 */
public enum PauseMode {
    /**
     * The runc tier: every process of the sandbox is frozen (cgroup freezer). Nothing runs, but the memory
     * stays resident on the host; a checkpoint of memory to disk needs the gVisor (runsc) tier, because CRIU
     * (what {@code runc checkpoint} uses) does not work on the hosts Paddock targets.
     */
    FROZEN,
    /**
     * The gVisor tier: the sandbox's whole state (its processes and their memory, open files, the kernel's
     * own state) was written to a checkpoint on the host's disk and its host processes ended, so its memory
     * is free; resume restores it from the checkpoint with every process where it was.
     */
    CHECKPOINTED
}
