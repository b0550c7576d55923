package io.paddock.engine;

import io.paddock.SandboxId;
import io.paddock.testkit.HostView;
import io.paddock.testkit.Tier;

import java.util.List;

/** The fault-injection suite ({@link RestartTest}) on the runc tier. Needs root and runc. */
class RuncRestartTest extends RestartTest {
    private static final HostView HOST = new RuncHostView(STATE);

    @Override
    protected Tier tier() {
        return Tier.RUNC;
    }

    @Override
    protected HostView host() {
        return HOST;
    }

    /** runc leaves nothing running beside the sandbox's own processes: its init (PID 1) is what it cannot lose. */
    @Override
    protected List<String> helpers() {
        return List.of("init");
    }

    @Override
    protected long helperPid(SandboxId id, String helper) {
        return HOST.initPid(id);
    }
}
