package io.paddock.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code paddock port}'s output: the URL alone on stdout; a direct address is said to be this host's only. */
class PortCommandTest {
    private static String[] print(String url) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PortCommand.print(URI.create(url), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new String[] {out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
    }

    @Test
    void aDaemonsSignedLinkIsPrintedAlone() {
        String[] r = print("http://127.0.0.1:7070/v1/p/AbC_-1/");
        assertThat(r[0]).isEqualTo("http://127.0.0.1:7070/v1/p/AbC_-1/" + System.lineSeparator());
        assertThat(r[1]).isEmpty();
    }

    @Test
    void aSandboxsOwnAddressIsSaidToBeReachableFromThisHostOnly() {
        String[] r = print("http://10.213.0.6:8000/");
        assertThat(r[0]).isEqualTo("http://10.213.0.6:8000/" + System.lineSeparator());
        assertThat(r[1]).contains("reachable from this host only");
    }
}
