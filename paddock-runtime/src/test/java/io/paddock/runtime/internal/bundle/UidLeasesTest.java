package io.paddock.runtime.internal.bundle;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Host uid ranges, one per sandbox: enough of them for P6's 1000 idle sandboxes and more, never shared. */
class UidLeasesTest {
    private static final SecureRandom RANDOM = new SecureRandom();

    @TempDir
    Path dir;

    private static SandboxId id() {
        StringBuilder b = new StringBuilder("sb-");
        for (int i = 0; i < 26; i++) {
            b.append("abcdefghijklmnopqrstuvwxyz234567".charAt(RANDOM.nextInt(32)));
        }
        return new SandboxId(b.toString());
    }

    @Test
    void theDefaultRangeHoldsThousandsOfSandboxesWithDisjointValidIds() throws Exception {
        assertThat(UidLeases.DEFAULT_SLOTS).isGreaterThanOrEqualTo(10_000);
        UidLeases leases = new UidLeases(dir, UidLeases.DEFAULT_BASE, UidLeases.DEFAULT_SLOTS);
        Set<Integer> slots = new HashSet<>();
        for (int i = 0; i < 1500; i++) {
            int slot = leases.acquire(id());
            assertThat(slots.add(slot)).as("slot %d leased twice", slot).isTrue();
        }
        try (var files = Files.list(dir)) {
            assertThat(files.count()).isEqualTo(1500);
        }
        // every id of every slot is a valid host id above the ones a distribution hands out, below (uid_t) -1
        assertThat(leases.firstId(0)).isGreaterThanOrEqualTo(1L << 30);
        long lastId = leases.firstId(UidLeases.DEFAULT_SLOTS - 1) + UidLeases.RANGE - 1;
        assertThat(lastId).isLessThan(0xFFFF_FFFFL);
        assertThat(leases.firstId(1) - leases.firstId(0)).isEqualTo(UidLeases.RANGE);
    }

    @Test
    void eachSlotsSentryHasAnIdOfItsOwnOutsideEveryRange() {
        UidLeases leases = new UidLeases(dir, UidLeases.DEFAULT_BASE, UidLeases.DEFAULT_SLOTS);
        long firstRange = leases.firstId(0);
        long pastLastRange = leases.firstId(UidLeases.DEFAULT_SLOTS - 1) + UidLeases.RANGE;
        Set<Long> sentries = new HashSet<>();
        for (int slot : new int[] {0, 1, 7, UidLeases.DEFAULT_SLOTS - 1}) {
            long sentry = leases.sentryId(leases.firstId(slot));
            assertThat(sentries.add(sentry)).as("slot %d's Sentry id %d taken twice", slot, sentry).isTrue();
            assertThat(sentry).as("slot %d's Sentry id", slot).isGreaterThanOrEqualTo(pastLastRange)
                    .isNotEqualTo(65534L).isLessThan(1L << 31);
            assertThat(sentry).isGreaterThan(firstRange);
        }
        assertThatThrownBy(() -> leases.sentryId(leases.firstId(3) + 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> leases.sentryId(pastLastRange)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new UidLeases(dir, 0xFFFF_0000L, 2)).isInstanceOf(IllegalArgumentException.class);
    }

    /** An older engine leased one more slot, whose range now holds the Sentries' ids: refused while it lasts. */
    @Test
    void aRangeAnOlderEngineLeasedOverTheSentriesIdsIsRefusedNamingItsSandbox() throws Exception {
        UidLeases leases = new UidLeases(dir, UidLeases.DEFAULT_BASE, 3);
        SandboxId old = id();
        Files.writeString(dir.resolve("3"), old.value());
        assertThatThrownBy(() -> leases.sentryId(leases.firstId(0))).isInstanceOfSatisfying(SandboxException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.FAILED_PRECONDITION);
            assertThat(e.getMessage()).contains(old.value()).contains("older Paddock");
        });
        Files.delete(dir.resolve("3"));
        assertThat(leases.sentryId(leases.firstId(0))).isEqualTo(leases.firstId(2) + UidLeases.RANGE);
    }

    @Test
    void aFullRangeSaysSoAndAReleasedSlotIsLeasedAgain() {
        UidLeases leases = new UidLeases(dir, UidLeases.DEFAULT_BASE, 3);
        SandboxId a = id();
        int slot = leases.acquire(a);
        leases.acquire(id());
        leases.acquire(id());
        assertThatThrownBy(() -> leases.acquire(id())).isInstanceOfSatisfying(SandboxException.class,
                e -> assertThat(e.code()).isEqualTo(ErrorCode.RESOURCE_EXHAUSTED));
        leases.release(slot, id()); // not its lease: kept
        assertThatThrownBy(() -> leases.acquire(id())).isInstanceOf(SandboxException.class);
        leases.release(slot, a);
        assertThat(leases.acquire(id())).isEqualTo(slot);
    }
}
