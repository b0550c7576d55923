package io.paddock.network.internal.egress;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ClientHello} on hellos the JDK's own TLS client writes, cut, split, and mangled. */
class EgressClientHelloTest {
    @Test
    void readsTheServerNameAndKeepsEveryByteItRead() throws IOException {
        byte[] hello = clientHello("api.egress.test");
        byte[] trailing = {23, 3, 3, 0, 1, 0}; // what the client sends next is not read

        ClientHello.Peeked peeked = read(concat(hello, trailing));

        assertThat(peeked.serverName()).isEqualTo("api.egress.test");
        assertThat(peeked.consumed()).isEqualTo(hello);
    }

    @Test
    void aHelloWithoutServerNameHasNone() throws IOException {
        assertThat(read(clientHello(null)).serverName()).isNull();
    }

    @Test
    void aHelloSplitAcrossRecordsIsJoined() throws IOException {
        byte[] hello = clientHello("api.egress.test");
        byte[] message = Arrays.copyOfRange(hello, 5, hello.length);
        ByteArrayOutputStream split = new ByteArrayOutputStream();
        for (int i = 0; i < message.length; i += 100) { // records of 100 bytes, headers cut included
            int n = Math.min(100, message.length - i);
            split.write(new byte[]{22, 3, 1, (byte) (n >> 8), (byte) n});
            split.write(message, i, n);
        }

        assertThat(read(split.toByteArray()).serverName()).isEqualTo("api.egress.test");
    }

    @Test
    void aHelloCutAnywhereIsAnEndOfStreamNeverAnotherError() {
        byte[] hello = clientHello("api.egress.test");
        for (int length = 1; length < hello.length; length++) {
            byte[] cut = Arrays.copyOf(hello, length);
            assertThatThrownBy(() -> read(cut)).as("cut at %d", length).isInstanceOf(EOFException.class);
        }
    }

    @Test
    void mangledHellosFailWithAnIOExceptionOrStillNameAHost() {
        byte[] hello = clientHello("api.egress.test");
        Random random = new Random(42);
        for (int round = 0; round < 5000; round++) {
            byte[] mangled = hello.clone();
            for (int flips = 1 + random.nextInt(4); flips > 0; flips--) {
                mangled[1 + random.nextInt(mangled.length - 1)] = (byte) random.nextInt(256);
            }
            try {
                ClientHello.Peeked peeked = read(mangled);
                if (peeked.serverName() != null) {
                    assertThat(CertificateAuthority.normalizeHost(peeked.serverName())).isNotNull();
                }
            } catch (IOException expected) {
                // refused
            }
        }
    }

    @Test
    void whatNoClientSendsIsRefused() {
        byte[] hello = clientHello("api.egress.test");
        List<byte[]> refused = List.of(
                new byte[]{22, 3, 1, 0x40, 1}, // a record longer than 2^14
                new byte[]{22, 3, 1, 0, 0}, // an empty record
                new byte[]{22, 2, 0, 0, 4, 1, 0, 0, 0}, // SSL 2 version
                new byte[]{22, 3, 1, 0, 4, 2, 0, 0, 0}, // a ServerHello
                new byte[]{22, 3, 1, 0, 4, 1, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF}, // a 16 MiB hello
                withExtraByteInRecord(hello), // data after the hello in its record
                withServerName(hello, "api.egress.test", "api_egress.test"), // not a DNS name
                withServerName(hello, "api.egress.test", "api.egr\u0000ss.test"));
        for (byte[] bytes : refused) {
            assertThatThrownBy(() -> read(bytes)).isInstanceOf(ClientHello.Malformed.class);
        }
    }

    private static ClientHello.Peeked read(byte[] bytes) throws IOException {
        ByteArrayInputStream in = new ByteArrayInputStream(bytes);
        return ClientHello.read(in.read(), in);
    }

    /** The first flight of the JDK's TLS client: one record holding its ClientHello. */
    static byte[] clientHello(String serverName) {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, null, null);
            SSLEngine engine = context.createSSLEngine(serverName == null ? null : serverName, 443);
            engine.setUseClientMode(true);
            SSLParameters parameters = engine.getSSLParameters();
            parameters.setServerNames(serverName == null ? List.of() : List.of(new SNIHostName(serverName)));
            engine.setSSLParameters(parameters);
            ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            engine.wrap(ByteBuffer.allocate(0), out);
            out.flip();
            byte[] bytes = new byte[out.remaining()];
            out.get(bytes);
            return bytes;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The hello with one more byte in its record (and the record length raised to hold it). */
    private static byte[] withExtraByteInRecord(byte[] hello) {
        byte[] longer = Arrays.copyOf(hello, hello.length + 1);
        int length = (hello[3] & 0xFF) << 8 | hello[4] & 0xFF;
        longer[3] = (byte) ((length + 1) >> 8);
        longer[4] = (byte) (length + 1);
        return longer;
    }

    /** The hello with its server name replaced by another of the same length. */
    private static byte[] withServerName(byte[] hello, String from, String to) {
        byte[] replaced = hello.clone();
        byte[] needle = from.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        for (int i = 0; i <= hello.length - needle.length; i++) {
            if (Arrays.equals(hello, i, i + needle.length, needle, 0, needle.length)) {
                System.arraycopy(to.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1), 0, replaced, i,
                        needle.length);
                return replaced;
            }
        }
        throw new AssertionError("no " + from + " in the hello");
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
