package io.paddock.engine;

import io.paddock.ByteSize;
import io.paddock.ErrorCode;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.ExitStatus;
import io.paddock.LocalOptions;
import io.paddock.NetworkTraffic;
import io.paddock.Paddock;
import io.paddock.PoolConfig;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.StopReason;
import io.paddock.engine.internal.EngineEvents;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.testkit.LeakCheckExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's events on real runc sandboxes: what metrics are made of. Each create, exec and stop is reported
 * once, with its tier, origin, outcome or reason, and nothing that names a sandbox; a listener that throws breaks
 * nothing and keeps no other listener from hearing; one removed hears no more.
 */
class EngineEventsTest {
    @RegisterExtension
    static final LeakCheckExtension LEAKS = new LeakCheckExtension(LocalOptions.DEFAULT_STATE_DIR);

    private static final SandboxSpec SMALL = SandboxSpec.builder().memory(ByteSize.mib(128)).pids(64)
            .disk(ByteSize.mib(64)).build();

    /** Every event, in words. */
    static final class Recorder implements EngineEvents {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void sandboxCreated(String tier, Origin origin, Duration took) {
            assertThat(took).isPositive();
            events.add("created " + tier + " " + origin);
        }

        @Override
        public void sandboxCreateFailed(String tier, ErrorCode code, Duration took) {
            events.add("create failed " + tier + " " + code);
        }

        @Override
        public void sandboxStopped(String tier, StopReason reason, Optional<NetworkTraffic> traffic) {
            events.add("stopped " + tier + " " + reason + (traffic.isPresent() ? " with traffic" : ""));
        }

        @Override
        public void execFinished(String tier, ExitStatus status, Duration took) {
            assertThat(took).isPositive();
            events.add("exec " + tier + " " + status.outcome() + " " + status.exitCode());
        }

        @Override
        public void execFailed(String tier, ErrorCode code, Duration took) {
            events.add("exec failed " + tier + " " + code);
        }
    }

    /** Throws from every event. */
    static final class Broken implements EngineEvents {
        @Override
        public void sandboxCreated(String tier, Origin origin, Duration took) {
            throw new IllegalStateException("broken listener");
        }

        @Override
        public void execFinished(String tier, ExitStatus status, Duration took) {
            throw new IllegalStateException("broken listener");
        }

        @Override
        public void sandboxStopped(String tier, StopReason reason, Optional<NetworkTraffic> traffic) {
            throw new IllegalStateException("broken listener");
        }
    }

    private static void await(List<String> events, String event) throws InterruptedException {
        long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!events.contains(event) && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertThat(events).contains(event);
    }

    @Test
    void createsExecsAndStopsAreReportedOnceEachAndABrokenListenerBreaksNothing() throws Exception {
        try (LocalPaddock paddock = (LocalPaddock) Paddock.local(LocalOptions.builder().maxSandboxes(10).build())) {
            Recorder r = new Recorder();
            paddock.listen(new Broken()); // first, so that the recorder hears what comes after its failures
            paddock.listen(r);
            Sandbox sb = paddock.create(SMALL);
            assertThat(sb.exec("sh", "-c", "exit 3").exitCode()).isEqualTo(3);
            assertThat(sb.exec(ExecRequest.builder().argv("sleep", "5").timeout(Duration.ofMillis(200)).build())
                    .status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            try (ExecProcess p = sb.start(ExecRequest.builder().argv("true").build())) {
                p.closeStdin();
                assertThat(p.awaitExit().exitCode()).isZero();
            }
            await(r.events, "exec runc EXITED 0"); // a started command is reported when it exits
            sb.destroy();
            sb.destroy(); // idempotent, and reported once
            assertThatThrownBy(() -> sb.exec("true")).isInstanceOf(SandboxException.class);
            assertThat(r.events).containsExactly("created runc COLD", "exec runc EXITED 3", "exec runc TIMED_OUT 124",
                    "exec runc EXITED 0", "stopped runc DESTROYED", "exec failed runc FAILED_PRECONDITION");

            // a lifetime's end, and a failed create; a listener removed hears nothing more
            Sandbox brief = paddock.create(SMALL.toBuilder().timeout(Duration.ofSeconds(1)).build());
            brief.awaitStop(Duration.ofSeconds(30));
            await(r.events, "stopped runc TIMEOUT");
            assertThatThrownBy(() -> paddock.create(SMALL.toBuilder().image("paddock-test/none:1").build()))
                    .isInstanceOf(SandboxException.class);
            assertThat(r.events).endsWith("created runc COLD", "stopped runc TIMEOUT", "create failed runc INVALID_ARGUMENT");
            int heard = r.events.size();
            paddock.stopListening(r);
            paddock.create(SMALL).destroy();
            assertThat(r.events).hasSize(heard);
        }
    }

    @Test
    void aPoolHitIsReportedAsOneAndPooledSandboxesAreNotReportedUntilClaimed() throws Exception {
        try (LocalPaddock paddock = (LocalPaddock) Paddock.local(LocalOptions.builder().maxSandboxes(10)
                .warmPool(PoolConfig.builder().shape(SMALL).size(1).build()).build())) {
            Recorder r = new Recorder();
            paddock.listen(r);
            long until = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (paddock.poolStats().get(0).idle() < 1 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertThat(r.events).isEmpty();
            try (Sandbox sb = paddock.create(SMALL)) {
                assertThat(sb.exec("true").exitCode()).isZero();
            }
            assertThat(r.events).containsExactly("created runc POOL", "exec runc EXITED 0", "stopped runc DESTROYED");
        }
    }
}
