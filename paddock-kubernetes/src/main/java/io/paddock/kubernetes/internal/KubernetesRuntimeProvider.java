package io.paddock.kubernetes.internal;

import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.spi.RuntimeProvider;

import java.util.Map;

/** The Kubernetes tier, for the engine's {@link java.util.ServiceLoader}. Public only because it must be. */
public final class KubernetesRuntimeProvider implements RuntimeProvider {
    @Override
    public String name() {
        return KubernetesRuntime.NAME;
    }

    @Override
    public SandboxRuntime open(Map<String, String> options) {
        return KubernetesRuntime.open(KubernetesSettings.from(options));
    }
}
