package io.paddock.runtime;

import io.paddock.SandboxId;

import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/** A started sandbox as its runtime sees it: the channel to its init, and its counters. */
public interface RuntimeSandbox {
    SandboxId id();

    /** Bytes the init writes (init→engine). End of stream means the init is gone. */
    ReadableByteChannel fromInit();

    /** Bytes for the init (engine→init). */
    WritableByteChannel toInit();

    /** How many processes the kernel's OOM killer has killed in this sandbox so far. */
    long oomKills();

    /** Closes the engine's ends of the channel (the sandbox keeps running). */
    void closeChannel();
}
