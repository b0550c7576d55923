package io.paddock.server.internal;

import io.paddock.ErrorCode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Bearer-token authentication (ATTACKS.md A61). The token is kept only as its SHA-256 digest and compared
 * with {@link MessageDigest#isEqual} on digests, so the comparison takes the same time whatever the guess.
 * Tokens are accepted only from the {@code Authorization} header. Failed attempts are counted per client
 * address in a sliding one-minute window; past the limit every request from that address gets 429 until
 * the window frees up, a correct token included, so the limit is not an oracle. Thread-safe.
 */
public final class AuthGuard {
    private static final long WINDOW_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final int MAX_TRACKED_ADDRESSES = 10_000;

    private final byte[] digest;
    private final int maxFailures;
    private final Map<String, ArrayDeque<Long>> failures = new ConcurrentHashMap<>();

    public AuthGuard(String token, int maxFailuresPerMinute) {
        this.digest = sha256(token);
        this.maxFailures = maxFailuresPerMinute;
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /**
     * Throws 429 if {@code address} is over its failure budget, 401 (and counts a failure) if the
     * {@code Authorization} headers do not carry the token; returns normally otherwise.
     */
    public void check(String address, List<String> authorization, boolean tokenInQuery) {
        long wait = blockedSeconds(address);
        if (wait > 0) {
            throw new HttpError(429, ErrorCode.RESOURCE_EXHAUSTED,
                    "too many failed authentications from this address; retry in " + wait + " s", "Retry-After",
                    Long.toString(wait));
        }
        String presented = null;
        if (authorization.size() == 1) {
            String h = authorization.get(0).trim();
            if (h.length() > 7 && h.regionMatches(true, 0, "Bearer ", 0, 7)) {
                presented = h.substring(7).trim();
            }
        }
        // Always hash and compare, so a missing header costs what a wrong one does.
        boolean ok = MessageDigest.isEqual(digest, sha256(presented == null ? "" : presented)) && presented != null
                && !presented.isEmpty();
        if (!ok) {
            recordFailure(address);
            String why = presented != null ? "the bearer token is wrong"
                    : authorization.size() > 1 ? "more than one Authorization header"
                    : tokenInQuery ? "tokens are not accepted in the query string; send 'Authorization: Bearer <token>'"
                    : "an 'Authorization: Bearer <token>' header is required";
            throw new HttpError(401, ErrorCode.PERMISSION_DENIED, why, "WWW-Authenticate", "Bearer realm=\"paddock\"");
        }
    }

    private long blockedSeconds(String address) {
        ArrayDeque<Long> q = failures.get(address);
        if (q == null) {
            return 0;
        }
        synchronized (q) {
            long now = System.nanoTime();
            prune(q, now);
            if (q.size() < maxFailures) {
                return 0;
            }
            long freeAt = q.peekFirst() + WINDOW_NANOS;
            return Math.max(1, TimeUnit.NANOSECONDS.toSeconds(freeAt - now + TimeUnit.SECONDS.toNanos(1) - 1));
        }
    }

    private void recordFailure(String address) {
        if (failures.size() >= MAX_TRACKED_ADDRESSES) {
            sweep();
        }
        ArrayDeque<Long> q = failures.computeIfAbsent(address, a -> new ArrayDeque<>());
        synchronized (q) {
            long now = System.nanoTime();
            prune(q, now);
            q.addLast(now);
            while (q.size() > maxFailures) {
                q.removeFirst();
            }
        }
    }

    private static void prune(ArrayDeque<Long> q, long now) {
        while (!q.isEmpty() && now - q.peekFirst() > WINDOW_NANOS) {
            q.removeFirst();
        }
    }

    /** Forgets addresses with no failure in the window (bounds the map's size). */
    private void sweep() {
        long now = System.nanoTime();
        for (Iterator<Map.Entry<String, ArrayDeque<Long>>> it = failures.entrySet().iterator(); it.hasNext(); ) {
            ArrayDeque<Long> q = it.next().getValue();
            synchronized (q) {
                prune(q, now);
                if (q.isEmpty()) {
                    it.remove();
                }
            }
        }
    }
}
