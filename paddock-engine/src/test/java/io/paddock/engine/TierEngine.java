package io.paddock.engine;

import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.testkit.HostView;
import io.paddock.testkit.LeakCheckExtension;
import io.paddock.testkit.Tier;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The embedded engine a test class runs against, on one tier: the fixture the tier suites share instead of each
 * writing its own. Registered as a static {@code @RegisterExtension} field, it starts an engine whose default tier
 * is the one named before the class's first test, runs the host leak check around every test (as
 * {@link LeakCheckExtension} does), and closes the engine after the class's last test and its own
 * {@code @AfterAll} methods. A host without the tier's runtime fails every test with the engine's
 * FAILED_PRECONDITION saying how to install it; none is skipped. Real runc and runsc, root; one class at a time.
 */
final class TierEngine implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback {
    private final Tier tier;
    private final HostView host;
    private final LeakCheckExtension leaks = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);
    private Paddock paddock;

    private TierEngine(Tier tier) {
        if (tier != Tier.RUNC && tier != Tier.RUNSC) {
            throw new IllegalArgumentException("the embedded engine's host tiers are runc and runsc, not " + tier);
        }
        this.tier = tier;
        this.host = tier == Tier.RUNSC ? new RunscHostView(LocalOptions.DEFAULT_STATE_DIR)
                : new RuncHostView(LocalOptions.DEFAULT_STATE_DIR);
    }

    /** An engine whose default tier is runc (the other host tier, runsc, is open too where installed). */
    static TierEngine runc() {
        return new TierEngine(Tier.RUNC);
    }

    /** An engine whose default tier is runsc (gVisor); it fails to start on a host without runsc. */
    static TierEngine runsc() {
        return new TierEngine(Tier.RUNSC);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        paddock = Paddock.local(LocalOptions.builder().defaultRuntime(tier.runtimeName()).build());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (paddock != null) {
            paddock.close();
            paddock = null;
        }
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        leaks.beforeEach(context);
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        leaks.afterEach(context);
    }

    /** The running engine; only between the class's start and end. */
    Paddock paddock() {
        if (paddock == null) {
            throw new IllegalStateException("the " + tier.runtimeName() + " engine is not running: register TierEngine"
                    + " as a static @RegisterExtension field");
        }
        return paddock;
    }

    Tier tier() {
        return tier;
    }

    /** What the host sees of this tier's sandboxes (runc: the tenant's own processes; runsc: the Sentry's). */
    HostView host() {
        return host;
    }
}
