package io.paddock.envd.internal;

import io.paddock.Sandbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

/**
 * One call's context: its sandbox, codec and what its headers ask for (user, deadline, keepalive interval).
 *
 * @param deadlineNanos when {@code Connect-Timeout-Ms} ends the call, on {@link System#nanoTime()}; 0 when none
 * @param timeout       the {@code Connect-Timeout-Ms} itself; {@code null} when none
 */
public record Call(Sandbox sandbox, Map<String, String> headers, Codec codec, long deadlineNanos, Duration timeout,
                   Duration keepalive) {
    /** E2B's default user; Paddock's sandbox user answers to it. */
    public static final String E2B_USER = "user";
    /** The name of Paddock's sandbox user in its images (uid 1000). */
    public static final String PADDOCK_USER = "sandbox";
    /**
     * The most a streaming call stays quiet: keepalive frames come at the interval the client asks for
     * ({@code Keepalive-Ping-Interval}, seconds; E2B's SDKs ask for 50) but at least this often, so that a
     * daemon's idle timeout of 30 s or more never cuts a quiet stream.
     */
    public static final Duration MAX_KEEPALIVE = Duration.ofSeconds(15);

    public static Call of(Sandbox sandbox, Map<String, String> headers, Codec codec) {
        String t = headers.get("connect-timeout-ms");
        long deadline = 0;
        Duration timeout = null;
        if (t != null) {
            if (!t.matches("[0-9]{1,10}")) {
                throw ConnectException.invalid("Connect-Timeout-Ms: \"" + t + "\" is not 1 to 10 digits");
            }
            timeout = Duration.ofMillis(Long.parseLong(t));
            deadline = System.nanoTime() + timeout.toNanos();
            if (deadline == 0) {
                deadline = 1;
            }
        }
        Duration keepalive = MAX_KEEPALIVE;
        String k = headers.get("keepalive-ping-interval");
        if (k != null && k.strip().matches("[0-9]{1,6}")) {
            long s = Math.max(1, Long.parseLong(k.strip()));
            keepalive = Duration.ofSeconds(Math.min(s, MAX_KEEPALIVE.toSeconds()));
        }
        return new Call(sandbox, headers, codec, deadline, timeout, keepalive);
    }

    /** Nanoseconds left before the deadline ({@link Long#MAX_VALUE} when none; at most 0 once passed). */
    public long nanosLeft() {
        return deadlineNanos == 0 ? Long.MAX_VALUE : deadlineNanos - System.nanoTime();
    }

    /**
     * Checks the user the call asks to act as (E2B sends it as {@code Authorization: Basic base64("NAME:")}).
     * Paddock runs every command and file operation as the sandbox's one unprivileged user: E2B's {@code user}
     * (and Paddock's own name for it, {@code sandbox}) map onto it, no user means it too; {@code root} is refused
     * (tenant code never runs as root in Paddock) and any other name is unknown.
     */
    public void checkUser() {
        String auth = headers.get("authorization");
        if (auth == null || !auth.regionMatches(true, 0, "Basic ", 0, 6)) {
            return;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(auth.substring(6).strip()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new ConnectException(ConnectCode.UNAUTHENTICATED, "Authorization: Basic credentials are not base64");
        }
        int colon = decoded.indexOf(':');
        String user = colon >= 0 ? decoded.substring(0, colon) : decoded;
        if (user.isEmpty() || user.equals(E2B_USER) || user.equals(PADDOCK_USER)) {
            return;
        }
        if (user.equals("root")) {
            throw new ConnectException(ConnectCode.PERMISSION_DENIED, "user \"root\": Paddock runs sandbox commands and "
                    + "file operations only as the sandbox's unprivileged user (E2B's \"user\"), never as root");
        }
        throw ConnectException.invalid("user \"" + user + "\" is unknown: Paddock sandboxes have one user, \"" + E2B_USER
                + "\" (also called \"" + PADDOCK_USER + "\")");
    }
}
