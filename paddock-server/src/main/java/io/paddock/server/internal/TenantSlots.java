package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A per-tenant cap on something the daemon holds open for a while (port-proxy relays, exec WebSockets): at most
 * {@link #max(int)} at once per tenant, below the server's global limits, so that one tenant cannot take what all
 * share (docs/SECURITY.md, A83). The operator, and anything with no tenant, is not counted. Thread-safe.
 */
final class TenantSlots {
    private final String what;
    private final String option;
    private final ConcurrentHashMap<String, Integer> held = new ConcurrentHashMap<>();
    private volatile int max;

    /**
     * @param what   what is counted, as the refusal names it ("exec WebSockets")
     * @param option the setting that raises the cap, as the refusal and a bad value name it
     */
    TenantSlots(String what, String option, int max) {
        this.what = what;
        this.option = option;
        max(max);
    }

    TenantSlots max(int max) {
        if (max < 1) {
            throw SandboxException.invalid(option, "must be at least 1, got " + max);
        }
        this.max = max;
        return this;
    }

    int max() {
        return max;
    }

    /**
     * Counts one for {@code tenant} (null: nothing counted) and returns the action that gives it back, which may
     * run any number of times; beyond the cap, 429 RESOURCE_EXHAUSTED and nothing counted.
     */
    Runnable admit(String tenant) {
        return admit(tenant, max, option, "close some and retry");
    }

    /** As {@link #admit(String)}, to a cap of this tenant's own, set by {@code setting}; the refusal names it and says {@code hint}. */
    Runnable admit(String tenant, int cap, String setting, String hint) {
        if (tenant == null) {
            return () -> { };
        }
        if (held.merge(tenant, 1, Integer::sum) > cap) {
            release(tenant);
            throw new HttpError(429, ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' already has " + cap
                    + " " + what + " open, the most one tenant may (" + setting + "); " + hint);
        }
        AtomicBoolean done = new AtomicBoolean();
        return () -> {
            if (done.compareAndSet(false, true)) {
                release(tenant);
            }
        };
    }

    /** How many {@code tenant} holds now. */
    int held(String tenant) {
        return held.getOrDefault(tenant, 0);
    }

    private void release(String tenant) {
        held.computeIfPresent(tenant, (t, n) -> n == 1 ? null : n - 1);
    }
}
