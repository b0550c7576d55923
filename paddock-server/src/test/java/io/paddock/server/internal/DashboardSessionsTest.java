package io.paddock.server.internal;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The dashboard's sessions on a clock the test moves: expiry, CSRF, forgery, the cap, the failure budget. */
class DashboardSessionsTest {
    private static final String ADDRESS = "192.0.2.7";
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private DashboardSessions sessions(int maxFailures) {
        return new DashboardSessions(new AuthGuard("operator-token", Map.of("alice", AuthGuard.sha256("alice-token")),
                maxFailures), now::get);
    }

    private static String id(DashboardSessions.Login login) {
        String c = login.setCookie();
        return c.substring(c.indexOf('=') + 1, c.indexOf(';'));
    }

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    private static int status(Runnable r) {
        try {
            r.run();
            return 200;
        } catch (HttpError e) {
            return e.status();
        }
    }

    @Test
    void aSessionIsTwoFreshSecretsInACookieAndABody() {
        DashboardSessions s = sessions(100);
        DashboardSessions.Login a = s.open(Caller.tenant("alice"), false);
        DashboardSessions.Login b = s.open(Caller.tenant("alice"), true);
        assertThat(a.setCookie()).matches("paddock_session=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict");
        assertThat(b.setCookie()).endsWith("; Secure");
        assertThat(a.csrfToken()).matches("[A-Za-z0-9_-]{43}").isNotEqualTo(id(a)).isNotEqualTo(b.csrfToken());
        assertThat(id(a)).isNotEqualTo(id(b));
        assertThat(s.check(ADDRESS, Optional.of(id(a)), List.of(a.csrfToken()))).isEqualTo(Caller.tenant("alice"));
    }

    @Test
    void theCookieAloneOrWithAnotherSessionsTokenAuthorizesNothing() {
        DashboardSessions s = sessions(100);
        DashboardSessions.Login a = s.open(Caller.OPERATOR, false);
        DashboardSessions.Login b = s.open(Caller.tenant("alice"), false);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(a)), List.of()))).isEqualTo(403);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(a)), List.of("")))).isEqualTo(403);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(a)), List.of(b.csrfToken())))).isEqualTo(403);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(a)), List.of(a.csrfToken(), a.csrfToken())))).isEqualTo(403);
        // and a session's token with another's cookie is the other's session, refused too
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(b)), List.of(a.csrfToken())))).isEqualTo(403);
    }

    @Test
    void forgedAlteredAndEndedSessionsAreRefused() {
        DashboardSessions s = sessions(100);
        DashboardSessions.Login a = s.open(Caller.OPERATOR, false);
        String altered = (id(a).charAt(0) == 'A' ? "B" : "A") + id(a).substring(1);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(altered), List.of(a.csrfToken())))).isEqualTo(401);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(a.csrfToken()), List.of(a.csrfToken())))).isEqualTo(401);
        assertThat(status(() -> s.check(ADDRESS, Optional.empty(), List.of(a.csrfToken())))).isEqualTo(401);
        s.end(id(a));
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(a)), List.of(a.csrfToken())))).isEqualTo(401);
    }

    @Test
    void anUnusedSessionExpiresAndAUsedOneStillEndsAfterItsLifetime() {
        DashboardSessions s = sessions(100);
        DashboardSessions.Login idle = s.open(Caller.OPERATOR, false);
        DashboardSessions.Login busy = s.open(Caller.OPERATOR, false);
        advance(DashboardSessions.IDLE.minusMinutes(1));
        s.check(ADDRESS, Optional.of(id(busy)), List.of(busy.csrfToken()));
        advance(Duration.ofMinutes(2));
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(idle)), List.of(idle.csrfToken())))).isEqualTo(401);
        // used every 20 minutes, it lives until its lifetime is over, not a moment longer
        Duration lived = DashboardSessions.IDLE.plusMinutes(1);
        while (lived.plusMinutes(20).compareTo(DashboardSessions.LIFETIME) < 0) {
            s.check(ADDRESS, Optional.of(id(busy)), List.of(busy.csrfToken()));
            advance(Duration.ofMinutes(20));
            lived = lived.plusMinutes(20);
        }
        s.check(ADDRESS, Optional.of(id(busy)), List.of(busy.csrfToken()));
        advance(DashboardSessions.LIFETIME.minus(lived).plusSeconds(1));
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(busy)), List.of(busy.csrfToken())))).isEqualTo(401);
        assertThat(s.size()).isZero(); // both swept as they were found expired
    }

    @Test
    void forgedSessionsSpendTheAddresssFailureBudget() {
        DashboardSessions s = sessions(3);
        DashboardSessions.Login a = s.open(Caller.OPERATOR, false);
        for (int i = 0; i < 3; i++) {
            int n = i;
            assertThat(status(() -> s.check(ADDRESS, Optional.of("forged-" + n), List.of("x")))).isEqualTo(401);
        }
        // over the budget: 429 for everything from that address, the real session included (no oracle)
        HttpError e = org.assertj.core.api.Assertions.catchThrowableOfType(HttpError.class,
                () -> s.check(ADDRESS, Optional.of("forged-4"), List.of("x")));
        assertThat(e.status()).isEqualTo(429);
        assertThat(e.headerName()).isEqualTo("Retry-After");
        assertThat(status(() -> s.check("192.0.2.8", Optional.of(id(a)), List.of(a.csrfToken())))).isEqualTo(200);
    }

    @Test
    void theOldestSessionMakesRoomPastTheCap() {
        DashboardSessions s = sessions(100);
        DashboardSessions.Login first = s.open(Caller.OPERATOR, false);
        advance(Duration.ofSeconds(1));
        DashboardSessions.Login second = s.open(Caller.OPERATOR, false);
        for (int i = 2; i < DashboardSessions.MAX_SESSIONS; i++) {
            advance(Duration.ofMillis(1));
            s.open(Caller.OPERATOR, false);
        }
        assertThat(s.size()).isEqualTo(DashboardSessions.MAX_SESSIONS);
        s.open(Caller.OPERATOR, false);
        assertThat(s.size()).isEqualTo(DashboardSessions.MAX_SESSIONS);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(first)), List.of(first.csrfToken())))).isEqualTo(401);
        assertThat(status(() -> s.check(ADDRESS, Optional.of(id(second)), List.of(second.csrfToken())))).isEqualTo(200);
    }

    @Test
    void onlyTheDashboardsRoutesAreOpenToASession() {
        assertThat(DashboardSessions.ROUTES).containsExactlyInAnyOrder(Route.VERSION, Route.LIST_SANDBOXES,
                Route.GET_SANDBOX, Route.LOGS, Route.USAGE, Route.DELETE_SANDBOX, Route.LIST_IMAGES);
        for (Route r : Route.values()) {
            int st = status(() -> DashboardSessions.permit(r));
            assertThat(st).as(r.name()).isEqualTo(DashboardSessions.ROUTES.contains(r) ? 200 : 403);
        }
    }
}
