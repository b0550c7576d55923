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
 * Bearer-token authentication (ATTACKS.md A61, A62). Every token (the operator's and each tenant's) is
 * kept only as its SHA-256 digest; a presented token's digest is compared with {@link MessageDigest#isEqual}
 * against <em>every</em> known digest, with no early exit, so the time taken says nothing about the guess
 * or about which token matched. Tokens are accepted only from the {@code Authorization} header. Failed attempts are counted per client
 * address in a sliding one-minute window; past the limit every request from that address gets 429 until
 * the window frees up, a correct token included, so the limit is not an oracle. Thread-safe.
 */
public final class AuthGuard {
    private static final long WINDOW_NANOS = TimeUnit.MINUTES.toNanos(1);
    private static final int MAX_TRACKED_ADDRESSES = 10_000;

    private final byte[] operator;
    private final String[] tenantNames;
    private final byte[][] tenantDigests;
    private final int maxFailures;
    private final Map<String, ArrayDeque<Long>> failures = new ConcurrentHashMap<>();

    /**
     * @param operatorToken        the daemon's own token
     * @param tenantDigests        each tenant's name and the SHA-256 digest of its token ({@link #sha256})
     * @param maxFailuresPerMinute failed attempts one address may make per minute before it gets 429
     */
    public AuthGuard(String operatorToken, Map<String, byte[]> tenantDigests, int maxFailuresPerMinute) {
        this.operator = sha256(operatorToken);
        this.tenantNames = tenantDigests.keySet().toArray(new String[0]);
        this.tenantDigests = new byte[tenantNames.length][];
        for (int i = 0; i < tenantNames.length; i++) {
            this.tenantDigests[i] = tenantDigests.get(tenantNames[i]).clone();
        }
        this.maxFailures = maxFailuresPerMinute;
    }

    /** The SHA-256 digest of a token's UTF-8 bytes: the only form in which tokens are kept. */
    public static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /**
     * Throws 429 if {@code address} is over its failure budget, 401 (and counts a failure) if the
     * {@code Authorization} headers do not carry a known token; returns whose token it is otherwise.
     */
    public Caller check(String address, List<String> authorization, boolean tokenInQuery) {
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
        // Always hash and compare with every digest, so a missing header costs what a wrong one does, and
        // the first tenant's token what the last one's does.
        byte[] d = sha256(presented == null ? "" : presented);
        boolean isOperator = MessageDigest.isEqual(operator, d);
        int tenant = -1;
        for (int i = 0; i < tenantDigests.length; i++) {
            boolean eq = MessageDigest.isEqual(tenantDigests[i], d);
            tenant = eq ? i : tenant;
        }
        boolean ok = (isOperator || tenant >= 0) && presented != null && !presented.isEmpty();
        if (!ok) {
            recordFailure(address);
            String why = presented != null ? "the bearer token is wrong"
                    : authorization.size() > 1 ? "more than one Authorization header"
                    : tokenInQuery ? "tokens are not accepted in the query string; send 'Authorization: Bearer <token>'"
                    : "an 'Authorization: Bearer <token>' header is required";
            throw new HttpError(401, ErrorCode.PERMISSION_DENIED, why, "WWW-Authenticate", "Bearer realm=\"paddock\"");
        }
        return isOperator ? Caller.OPERATOR : Caller.tenant(tenantNames[tenant]);
    }

    /**
     * A refused credential other than a bearer token (a forged or expired dashboard session): 429 while the
     * address is over its failure budget, else counted as a failed attempt and answered 401 saying {@code why}.
     */
    public HttpError refuse(String address, String why) {
        long wait = blockedSeconds(address);
        if (wait > 0) {
            return new HttpError(429, ErrorCode.RESOURCE_EXHAUSTED,
                    "too many failed authentications from this address; retry in " + wait + " s", "Retry-After",
                    Long.toString(wait));
        }
        recordFailure(address);
        return new HttpError(401, ErrorCode.PERMISSION_DENIED, why);
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
