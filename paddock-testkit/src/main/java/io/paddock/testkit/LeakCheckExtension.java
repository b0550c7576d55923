package io.paddock.testkit;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.nio.file.Path;
import java.util.List;

/**
 * Runs the leak check around every test: snapshot before, and after the test waits (up to 15 s, since
 * some cleanup is asynchronous) for every counter to return to its earlier value; fails the test naming
 * each leaked item otherwise.
 */
public final class LeakCheckExtension implements BeforeEachCallback, AfterEachCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(LeakCheckExtension.class);

    private final HostLeakCheck check;

    public LeakCheckExtension(Path stateDir) {
        this.check = new HostLeakCheck(stateDir);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        context.getStore(NS).put("before", check.snapshot());
    }

    @Override
    public void afterEach(ExtensionContext context) throws InterruptedException {
        HostLeakCheck.Snapshot before = context.getStore(NS).get("before", HostLeakCheck.Snapshot.class);
        List<String> leaks = List.of();
        long deadline = System.nanoTime() + 15_000_000_000L;
        while (System.nanoTime() < deadline) {
            leaks = check.snapshot().leaksSince(before);
            if (leaks.isEmpty()) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("leak check failed after " + context.getDisplayName() + ": " + leaks);
    }
}
