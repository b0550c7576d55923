package io.paddock.runtime.spi;

import io.paddock.runtime.SandboxRuntime;

import java.util.Map;

/**
 * An isolation tier that lives in its own module (Kubernetes), found by the engine with
 * {@link java.util.ServiceLoader}: the engine opens it when it is the default tier, when the engine's runtime
 * options name it ({@code NAME.*} keys), or when a spec asks for it, and otherwise never touches it.
 */
public interface RuntimeProvider {
    /** The tier's name, as specs name it ({@link io.paddock.SandboxSpec#RUNTIMES}). */
    String name();

    /**
     * Opens the tier with the engine's runtime options (all of them; the tier reads its own {@code NAME.*} keys).
     *
     * @throws io.paddock.SandboxException FAILED_PRECONDITION or UNAVAILABLE, saying what was tried, when the tier
     *                                     cannot work here (no cluster configured, none reachable)
     */
    SandboxRuntime open(Map<String, String> options);
}
