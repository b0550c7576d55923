package io.paddock.network.internal.egress;

import io.paddock.network.internal.egress.EgressProxy.EgressSecret;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EgressRequestHeadTest {
    private static final String PH = "paddock-egress-0123456789abcdef0123456789abcdef";
    /** Starts like {@link #PH}: the longer one must win where it is meant. */
    private static final String LONGER_PH = PH + "-2";
    private static final String SECRET = "s3cr3t-value";
    private static final List<EgressSecret> SECRETS = List.of(
            new EgressSecret("api.egress.test", PH, SECRET),
            new EgressSecret("api.egress.test", LONGER_PH, "longer-" + PH)); // a value holding a placeholder

    @Test
    void placeholdersAreReplacedInValuesOnlyAndTheConnectionClosesAfterOneRequest() throws IOException {
        RequestHead head = read("POST /x?t=" + PH + " HTTP/1.1\r\n"
                + "Host: api.egress.test\r\n"
                + "Authorization: Bearer " + PH + "\r\n"
                + "X-Two:" + PH + PH + "\r\n"
                + "X-Longer: " + LONGER_PH + "\r\n"
                + "X-" + PH + ": v\r\n"
                + "Connection: keep-alive, Upgrade\r\n"
                + "Upgrade: websocket\r\n"
                + "Keep-Alive: timeout=5\r\n"
                + "Proxy-Connection: keep-alive\r\n"
                + "Content-Length: 4\r\n\r\n" + "body");

        RequestHead.Forwarded forwarded = head.forward(SECRETS);

        assertThat(new String(forwarded.bytes(), StandardCharsets.ISO_8859_1)).isEqualTo(
                "POST /x?t=" + PH + " HTTP/1.1\r\n"
                        + "Host: api.egress.test\r\n"
                        + "Authorization: Bearer " + SECRET + "\r\n"
                        + "X-Two:" + SECRET + SECRET + "\r\n"
                        + "X-Longer: longer-" + PH + "\r\n" // put in once, never scanned again
                        + "X-" + PH + ": v\r\n"
                        + "Content-Length: 4\r\n"
                        + "Connection: close\r\n\r\n");
        assertThat(forwarded.replaced()).isEqualTo(4);
        assertThat(head.rest()).isEqualTo("body".getBytes(StandardCharsets.ISO_8859_1));
        assertThat(head.method()).isEqualTo("POST");
        assertThat(head.toString()).doesNotContain("Bearer").doesNotContain(SECRET);
        assertThat(forwarded.toString()).doesNotContain(SECRET);
    }

    @Test
    void theHostFieldsHostIsNormalised() throws IOException {
        assertThat(read("GET / HTTP/1.1\r\nHost:  API.Egress.Test.:8443 \r\n\r\n").host()).isEqualTo("api.egress.test");
        assertThat(read("GET / HTTP/1.0\r\nhost: api.egress.test\r\n\r\n").host()).isEqualTo("api.egress.test");
        assertThat(read("GET / HTTP/1.1\r\nHost: 198.51.100.7\r\n\r\n").host()).isNull();
        assertThat(read("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n").host()).isNull();
        assertThat(read("GET / HTTP/1.1\r\nHost: a.test:x\r\n\r\n").host()).isNull();
        assertThatThrownBy(() -> read("GET / HTTP/1.1\r\nX: y\r\n\r\n").host())
                .isInstanceOf(RequestHead.Malformed.class);
        assertThatThrownBy(() -> read("GET / HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n").host())
                .isInstanceOf(RequestHead.Malformed.class);
    }

    @Test
    void aHeadAnotherServerCouldReadDifferentlyIsRefused() {
        for (String head : List.of(
                "GET http://api.egress.test/ HTTP/1.1\r\nHost: api.egress.test\r\n\r\n",
                "CONNECT api.egress.test:443 HTTP/1.1\r\nHost: api.egress.test\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: api.egress.test\nX-Smuggled: 1\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: api.egress.test\rX: 1\r\n\r\n",
                "GET / HTTP/1.1\r\nHost : api.egress.test\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: api.egress.test\r\n\tfolded\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: api.egress.test\r\nX: a\u0000b\r\n\r\n",
                "GET / HTTP/1.1\r\n: empty name\r\n\r\n",
                "GET  / HTTP/1.1\r\nHost: a.test\r\n\r\n",
                "GET /\u00e9 HTTP/1.1\r\nHost: a.test\r\n\r\n",
                "GET / HTTP/2.0\r\nHost: a.test\r\n\r\n",
                "G(T / HTTP/1.1\r\nHost: a.test\r\n\r\n",
                "\r\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: a.test\r\nX: " + "a".repeat(RequestHead.MAX_BYTES) + "\r\n\r\n")) {
            assertThatThrownBy(() -> read(head)).as(head.length() > 200 ? "long head" : head)
                    .isInstanceOf(RequestHead.Malformed.class);
        }
        assertThatThrownBy(() -> read("GET / HTTP/1.1\r\nHost: a.test\r\n"))
                .isInstanceOf(EOFException.class);
    }

    @Test
    void aHeadArrivingInPiecesIsJoined() throws IOException {
        String text = "GET / HTTP/1.1\r\nHost: api.egress.test\r\nX: " + PH + "\r\n\r\nrest";
        byte[] bytes = text.getBytes(StandardCharsets.ISO_8859_1);
        // one byte at a time: the end is found across reads
        ByteArrayInputStream in = new ByteArrayInputStream(bytes, 1, bytes.length) {
            @Override
            public synchronized int read(byte[] b, int off, int len) {
                return super.read(b, off, Math.min(len, 1));
            }
        };
        RequestHead head = RequestHead.read(new byte[]{bytes[0]}, in);
        // nothing past the blank line was read: the body is left to the pipe
        assertThat(head.rest()).isEmpty();
        assertThat(in.readAllBytes()).isEqualTo("rest".getBytes(StandardCharsets.ISO_8859_1));
        assertThat(new String(head.forward(SECRETS).bytes(), StandardCharsets.ISO_8859_1)).contains("X: " + SECRET);
    }

    private static RequestHead read(String text) throws IOException {
        byte[] bytes = text.getBytes(StandardCharsets.ISO_8859_1);
        return RequestHead.read(new byte[0], new ByteArrayInputStream(bytes));
    }
}
