package io.paddock.engine;

import io.paddock.SandboxId;
import io.paddock.engine.host.HostFaults;
import io.paddock.testkit.HostView;
import io.paddock.testkit.Tier;

import java.util.List;

/**
 * The fault-injection suite ({@link RestartTest}) on the gVisor tier. Needs root and runsc; without runsc
 * every test fails, none is skipped.
 */
class RunscRestartTest extends RestartTest {
    private static final HostView HOST = new RunscHostView(STATE);

    @Override
    protected Tier tier() {
        return Tier.RUNSC;
    }

    @Override
    protected HostView host() {
        return HOST;
    }

    /** The Sentry (the user-space kernel everything runs on) and the gofer (its file server). */
    @Override
    protected List<String> helpers() {
        return List.of("runsc-sandbox", "runsc-gofer");
    }

    @Override
    protected long helperPid(SandboxId id, String helper) {
        return HOST.runtimeProcesses(id).stream().filter(p -> HostFaults.cmdline(p).startsWith(helper + " "))
                .findFirst().orElseThrow(() -> new IllegalStateException("no " + helper + " for " + id));
    }
}
