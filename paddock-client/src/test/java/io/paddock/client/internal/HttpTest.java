package io.paddock.client.internal;

import org.junit.jupiter.api.Test;

import java.net.URI;

import static org.assertj.core.api.Assertions.assertThat;

/** URL building, without a daemon. */
class HttpTest {
    @Test
    void encodesEverythingButUnreservedCharacters() {
        assertThat(Http.encode("a-Z_0.9~")).isEqualTo("a-Z_0.9~");
        assertThat(Http.encode("/work space/ü?&=#%+\0")).isEqualTo("%2Fwork%20space%2F%C3%BC%3F%26%3D%23%25%2B%00");
    }

    @Test
    void queriesKeepOrderAndRepeats() {
        Http.Query q = new Http.Query().add("label", "team=ml").add("label", "tier=a b").add("state", "RUNNING");
        assertThat(q.toString()).isEqualTo("?label=team%3Dml&label=tier%3Da%20b&state=RUNNING");
        assertThat(new Http.Query().toString()).isEmpty();
    }

    @Test
    void urlsKeepABasePathAndWebSocketsFollowTheScheme() {
        Http http = new Http(URI.create("http://127.0.0.1:7070/paddock/"), "t");
        assertThat(http.uri("/v1/sandboxes", new Http.Query().add("name", "x")))
                .isEqualTo(URI.create("http://127.0.0.1:7070/paddock/v1/sandboxes?name=x"));
        assertThat(http.wsUri("/v1/sandboxes/sb-x/exec/stream"))
                .isEqualTo(URI.create("ws://127.0.0.1:7070/paddock/v1/sandboxes/sb-x/exec/stream"));
        assertThat(new Http(URI.create("https://h:1"), "t").wsUri("/v1/x")).isEqualTo(URI.create("wss://h:1/v1/x"));
        assertThat(http.toString()).doesNotContain("Bearer");
    }
}
