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

    /**
     * How many times a fork in this sandbox failed at its host process limit so far (the runsc tier: the Sentry's
     * own threads and stub processes count there too, and the Sentry dies when it cannot make one).
     */
    default long processLimitHits() {
        return 0;
    }

    /** The last lines its runtime and init logged, to say why a sandbox died; empty when there are none. */
    default String logTail() {
        return "";
    }

    /** Closes the engine's ends of the channel (the sandbox keeps running). */
    void closeChannel();
}
