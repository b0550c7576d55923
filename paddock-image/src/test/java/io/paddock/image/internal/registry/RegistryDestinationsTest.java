package io.paddock.image.internal.registry;

import com.sun.net.httpserver.HttpServer;
import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.image.internal.oci.ImageRef;
import io.paddock.image.internal.store.BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A registry cannot send the client where its caller may not connect (docs/SECURITY.md, A82b): every request's
 * URL, the registry's own, a redirect's target and a token realm, goes through {@link
 * RegistryClient.Builder#destinations} before anything connects there. "Elsewhere" is a second server on
 * 127.0.0.2 that counts what reaches it.
 */
class RegistryDestinationsTest {
    private static final Map<String, Map<String, String>> ANSWERS = new ConcurrentHashMap<>();
    private static final AtomicInteger ELSEWHERE_HITS = new AtomicInteger();
    private static FakeServer registry;
    private static HttpServer elsewhere;

    @TempDir
    Path tmp;
    private final List<URI> checked = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws IOException {
        registry = new FakeServer(ex -> {
            Map<String, String> headers = ANSWERS.get(ex.getRequestURI().getPath());
            if (headers == null) {
                FakeServer.respond(ex, 404, Map.of(), new byte[0]);
                return;
            }
            FakeServer.respond(ex, headers.containsKey("Location") ? 307 : 401, headers, new byte[0]);
        });
        elsewhere = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0), 0);
        elsewhere.createContext("/", ex -> {
            ELSEWHERE_HITS.incrementAndGet();
            ex.sendResponseHeaders(404, -1);
            ex.close();
        });
        elsewhere.start();
    }

    @AfterAll
    static void stop() {
        registry.close();
        elsewhere.stop(0);
    }

    @BeforeEach
    void clear() {
        ANSWERS.clear();
        ELSEWHERE_HITS.set(0);
    }

    private String elsewhereUrl(String path) {
        return "http://127.0.0.2:" + elsewhere.getAddress().getPort() + path;
    }

    /** Refuses 127.0.0.2, as a daemon refuses a tenant's pull to its own addresses; records what it was asked. */
    private Consumer<URI> guard() {
        return uri -> {
            checked.add(uri);
            if ("127.0.0.2".equals(uri.getHost())) {
                throw new SandboxException(ErrorCode.PERMISSION_DENIED, "ref: " + uri.getHost() + " is refused");
            }
        };
    }

    private void pull(Consumer<URI> destinations, String reference) {
        RegistryClient.builder().insecure(true).destinations(destinations).build()
                .pull(ImageRef.parse(registry.host() + "/" + reference), "linux/amd64",
                        new BlobStore(tmp.resolve("store")), PullListener.NONE);
    }

    @Test
    void aRedirectToARefusedDestinationIsNeverFollowed() {
        ANSWERS.put("/v2/acc/x/manifests/away", Map.of("Location", elsewhereUrl("/v2/acc/x/manifests/away")));
        // Without a check the client follows the redirect: the test can tell.
        assertThatThrownBy(() -> pull(uri -> { }, "acc/x:away")).isInstanceOf(SandboxException.class);
        assertThat(ELSEWHERE_HITS.get()).as("requests that reached 127.0.0.2 with no check").isEqualTo(1);

        ELSEWHERE_HITS.set(0);
        assertThatThrownBy(() -> pull(guard(), "acc/x:away"))
                .isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
        assertThat(ELSEWHERE_HITS.get()).as("requests that reached 127.0.0.2 with the check").isZero();
        assertThat(checked).extracting(URI::getHost).as("the registry's own URL is checked first")
                .startsWith("127.0.0.1").contains("127.0.0.2");
    }

    @Test
    void aTokenRealmAtARefusedDestinationIsNeverAsked() {
        ANSWERS.put("/v2/acc/x/manifests/realm", Map.of("WWW-Authenticate",
                "Bearer realm=\"" + elsewhereUrl("/token") + "\",service=\"x\""));
        assertThatThrownBy(() -> pull(uri -> { }, "acc/x:realm")).isInstanceOf(SandboxException.class);
        assertThat(ELSEWHERE_HITS.get()).as("token requests that reached 127.0.0.2 with no check").isEqualTo(1);

        ELSEWHERE_HITS.set(0);
        assertThatThrownBy(() -> pull(guard(), "acc/x:realm"))
                .isInstanceOfSatisfying(SandboxException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
        assertThat(ELSEWHERE_HITS.get()).as("token requests that reached 127.0.0.2 with the check").isZero();
    }
}
