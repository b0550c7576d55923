package io.paddock.server.internal;

import io.paddock.SandboxException;
import io.paddock.SandboxId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The signed port-URL token: what it binds, what it refuses, and where its key lives. */
class UrlTokensTest {
    private static final SandboxId ID = new SandboxId("sb-" + "abcdefghijklmnopqrstuvwxyz");
    private static final Instant LATER = Instant.parse("2030-01-02T03:04:05.678Z");

    @Test
    void aTokenCarriesItsSandboxPortAndExpiry() {
        UrlTokens t = UrlTokens.inMemory();
        String token = t.sign(ID, 8000, LATER);
        assertThat(token).matches("[A-Za-z0-9_-]+").hasSizeLessThan(120);
        UrlTokens.Claims c = t.verify(token).orElseThrow();
        assertThat(c.id()).isEqualTo(ID);
        assertThat(c.port()).isEqualTo(8000);
        assertThat(c.expiresAt()).isEqualTo(LATER);
        assertThat(c.expired(LATER.minusMillis(1))).isFalse();
        assertThat(c.expired(LATER)).isTrue();
        assertThat(t.verify(t.sign(ID, 65535, LATER)).orElseThrow().port()).isEqualTo(65535);
    }

    @Test
    void everyAlteredByteIsRefused() {
        UrlTokens t = UrlTokens.inMemory();
        byte[] raw = Base64.getUrlDecoder().decode(t.sign(ID, 8000, LATER));
        for (int i = 0; i < raw.length; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] b = raw.clone();
                b[i] ^= (byte) (1 << bit);
                assertThat(t.verify(Base64.getUrlEncoder().withoutPadding().encodeToString(b))).as("byte " + i + " bit " + bit)
                        .isEmpty();
            }
        }
        // shorter, longer, empty, not base64, absurdly long
        String token = t.sign(ID, 8000, LATER);
        assertThat(t.verify(token.substring(0, token.length() - 2))).isEmpty();
        assertThat(t.verify(token + "AA")).isEmpty();
        assertThat(t.verify("")).isEmpty();
        assertThat(t.verify(null)).isEmpty();
        assertThat(t.verify("!!not base64!!")).isEmpty();
        assertThat(t.verify("A".repeat(10_000))).isEmpty();
    }

    @Test
    void anotherKeysTokensAreRefused() {
        UrlTokens a = UrlTokens.inMemory();
        UrlTokens b = UrlTokens.inMemory();
        assertThat(b.verify(a.sign(ID, 8000, LATER))).isEmpty();
        byte[] key = new byte[32];
        key[0] = 1;
        assertThat(UrlTokens.withKey(key).verify(UrlTokens.withKey(key.clone()).sign(ID, 8000, LATER))).isPresent();
        assertThatThrownBy(() -> UrlTokens.withKey(new byte[16])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theKeyIsMadeOnFirstUseWithMode0600AndKept(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("data");
        UrlTokens first = UrlTokens.inDirectory(data);
        Path file = data.resolve(UrlTokens.KEY_FILE);
        assertThat(file).doesNotExist(); // nothing until a token is made or checked
        String token = first.sign(ID, 8000, LATER);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        assertThat(Files.size(file)).isEqualTo(32);
        // a restarted daemon (a new instance on the same directory) accepts the tokens it gave out
        assertThat(UrlTokens.inDirectory(data).verify(token)).isPresent();
        // removing the key revokes them all
        Files.delete(file);
        assertThat(UrlTokens.inDirectory(data).verify(token)).isEmpty();
    }

    @Test
    void aLooseOrMalformedKeyFileIsRefused(@TempDir Path dir) throws Exception {
        Path file = dir.resolve(UrlTokens.KEY_FILE);
        Files.write(file, new byte[32]);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> UrlTokens.inDirectory(dir).sign(ID, 8000, LATER)).isInstanceOf(SandboxException.class)
                .hasMessageContaining("chmod 600");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Files.write(file, new byte[7]);
        assertThatThrownBy(() -> UrlTokens.inDirectory(dir).sign(ID, 8000, LATER)).isInstanceOf(SandboxException.class)
                .hasMessageContaining("7 bytes");
    }
}
