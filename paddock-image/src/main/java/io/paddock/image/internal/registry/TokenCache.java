package io.paddock.image.internal.registry;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Bearer tokens by (registry, scope), each until a little before it expires. Thread-safe. Tokens are held
 * only in memory and never appear in {@link #toString()}.
 */
final class TokenCache {
    /** The token specification's default lifetime when a token service does not say. */
    static final Duration DEFAULT_LIFETIME = Duration.ofSeconds(60);
    private static final Duration MARGIN = Duration.ofSeconds(10);

    private record Entry(String token, Instant expires) {
    }

    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    private final Clock clock;

    TokenCache(Clock clock) {
        this.clock = clock;
    }

    Optional<String> get(String registry, String scope) {
        Entry e = entries.get(key(registry, scope));
        if (e == null || !clock.instant().isBefore(e.expires)) {
            return Optional.empty();
        }
        return Optional.of(e.token);
    }

    void put(String registry, String scope, String token, Duration lifetime) {
        Duration keep = lifetime.compareTo(MARGIN.multipliedBy(2)) > 0 ? lifetime.minus(MARGIN) : lifetime.dividedBy(2);
        entries.put(key(registry, scope), new Entry(token, clock.instant().plus(keep)));
    }

    /** Forgets {@code token} if it is still the cached one (a registry refused it). */
    void invalidate(String registry, String scope, String token) {
        entries.computeIfPresent(key(registry, scope), (k, e) -> e.token.equals(token) ? null : e);
    }

    private static String key(String registry, String scope) {
        return registry + " " + scope;
    }

    @Override
    public String toString() {
        return "TokenCache[" + entries.size() + " tokens]";
    }
}
