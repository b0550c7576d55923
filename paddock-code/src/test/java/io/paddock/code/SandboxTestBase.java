package io.paddock.code;

import io.paddock.ByteSize;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;

/**
 * Real sandboxes on the embedded engine (needs root and runc). Every test creates its sandboxes and
 * destroys them; the leak check after each test proves nothing is left on the host.
 */
abstract class SandboxTestBase {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    static Paddock paddock;

    @BeforeAll
    static void startPaddock() {
        paddock = Paddock.local();
    }

    @AfterAll
    static void stopPaddock() {
        if (paddock != null) {
            paddock.close();
            paddock = null;
        }
    }

    static Sandbox sandbox() {
        return paddock.create(SandboxSpec.builder().memory(ByteSize.mib(768)).cpus(2).timeout(Duration.ofMinutes(5)).build());
    }
}
