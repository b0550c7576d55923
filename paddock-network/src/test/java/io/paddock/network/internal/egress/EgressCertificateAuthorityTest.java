package io.paddock.network.internal.egress;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.CertPathValidator;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EgressCertificateAuthorityTest {
    @TempDir
    Path dir;

    @Test
    void theCaIsAPathLengthZeroCaThatOnlySignsCertificates() throws Exception {
        CertificateAuthority ca = CertificateAuthority.ephemeral();
        X509Certificate cert = ca.certificate();

        assertThat(cert.getSubjectX500Principal().getName()).matches("CN=Paddock egress CA [0-9a-f]{8},O=Paddock");
        assertThat(cert.getIssuerX500Principal()).isEqualTo(cert.getSubjectX500Principal());
        assertThat(cert.getBasicConstraints()).isZero(); // a CA, path length 0
        assertThat(cert.getCriticalExtensionOIDs()).contains("2.5.29.19", "2.5.29.15");
        boolean[] usage = cert.getKeyUsage();
        assertThat(usage[5]).as("keyCertSign").isTrue();
        assertThat(usage[0]).as("digitalSignature").isFalse();
        assertThat(usage[2]).as("keyEncipherment").isFalse();
        assertThat(cert.getPublicKey().getAlgorithm()).isEqualTo("EC");
        assertThat(Duration.between(Instant.now(), cert.getNotAfter().toInstant()))
                .isGreaterThan(Duration.ofDays(3640));
        cert.verify(cert.getPublicKey());
        assertThat(ca.certificatePem()).startsWith("-----BEGIN CERTIFICATE-----")
                .contains("-----END CERTIFICATE-----").doesNotContain("PRIVATE");
        assertThat(parse(ca.certificatePem())).isEqualTo(cert);
        assertThat(ca.toString()).contains(ca.fingerprint()).doesNotContain("PRIVATE");
        assertThat(CertificateAuthority.ephemeral().certificate()).isNotEqualTo(cert);
    }

    @Test
    void aLeafChainsToTheCaAndNamesOnlyItsHost() throws Exception {
        CertificateAuthority ca = CertificateAuthority.ephemeral();
        CertificateAuthority.Leaf leaf = ca.leafFor("API.Example.Test.");
        X509Certificate cert = leaf.certificate();

        assertThat(leaf.host()).isEqualTo("api.example.test");
        assertThat(cert.getSubjectAlternativeNames()).containsExactly(List.of(2, "api.example.test"));
        assertThat(cert.getExtendedKeyUsage()).containsExactly("1.3.6.1.5.5.7.3.1"); // serverAuth
        assertThat(cert.getBasicConstraints()).isEqualTo(-1); // not a CA
        assertThat(cert.getKeyUsage()[5]).as("keyCertSign").isFalse();
        assertThat(Duration.between(cert.getNotBefore().toInstant(), cert.getNotAfter().toInstant()))
                .isLessThanOrEqualTo(Duration.ofDays(7).plusHours(1));
        cert.checkValidity();
        assertThat(leaf.chain()).containsExactly(cert, ca.certificate());

        // PKIX path validation from the CA as the only anchor, as a sandbox's TLS stack does it
        PKIXParameters parameters = new PKIXParameters(Set.of(new TrustAnchor(ca.certificate(), null)));
        parameters.setRevocationEnabled(false);
        CertPathValidator.getInstance("PKIX").validate(
                CertificateFactory.getInstance("X.509").generateCertPath(List.of(cert)), parameters);
        // and not from another CA
        PKIXParameters other = new PKIXParameters(Set.of(new TrustAnchor(
                CertificateAuthority.ephemeral().certificate(), null)));
        other.setRevocationEnabled(false);
        assertThatThrownBy(() -> CertPathValidator.getInstance("PKIX").validate(
                CertificateFactory.getInstance("X.509").generateCertPath(List.of(cert)), other))
                .isInstanceOf(java.security.cert.CertPathValidatorException.class);
        assertThat(leaf.toString()).contains("api.example.test").doesNotContain("PRIVATE");
    }

    @Test
    void leavesAreCachedPerHostInABoundedCache() throws Exception {
        CertificateAuthority ca = CertificateAuthority.ephemeral(3);
        CertificateAuthority.Leaf first = ca.leafFor("a.example.test");

        assertThat(ca.leafFor("A.example.test")).isSameAs(first);
        ca.leafFor("b.example.test");
        ca.leafFor("c.example.test");
        ca.leafFor("d.example.test");
        assertThat(ca.cachedLeaves()).isEqualTo(3);
        assertThat(ca.leafFor("a.example.test")).isNotSameAs(first); // evicted, minted again

        // many threads asking for one new host get one leaf
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            Callable<CertificateAuthority.Leaf> ask = () -> ca.leafFor("e.example.test");
            List<Future<CertificateAuthority.Leaf>> answers = pool.invokeAll(List.of(ask, ask, ask, ask));
            for (Future<CertificateAuthority.Leaf> answer : answers) {
                assertThat(answer.get()).isSameAs(answers.get(0).get());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void onlyPlainDnsNamesGetALeaf() {
        CertificateAuthority ca = CertificateAuthority.ephemeral();
        for (String bad : List.of("", ".", "a..b", "-a.test", "a-.test", "a_b.test", "*.example.test", "1.2.3.4",
                "exa mple.test", "a.test\u0000.evil", "x".repeat(64) + ".test", "é.test")) {
            assertThatThrownBy(() -> ca.leafFor(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(ca.leafFor("xn--bcher-kva.test").host()).isEqualTo("xn--bcher-kva.test");
    }

    @Test
    void loadOrCreateWritesTheFilesOnceAndLoadsTheSameCaAfterARestart() throws Exception {
        Path data = dir.resolve("egress");
        CertificateAuthority created = CertificateAuthority.loadOrCreate(data);
        Path cert = data.resolve(CertificateAuthority.CERTIFICATE_FILE);
        Path key = data.resolve(CertificateAuthority.KEY_FILE);

        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key))).isEqualTo("rw-------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(cert))).isEqualTo("rw-r--r--");
        assertThat(Files.readString(cert)).isEqualTo(created.certificatePem());
        assertThat(Files.readString(key)).startsWith("-----BEGIN PRIVATE KEY-----");
        try (var files = Files.list(data)) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .noneMatch(n -> n.endsWith(".tmp")); // no temporary file left
        }

        CertificateAuthority reloaded = CertificateAuthority.loadOrCreate(data);
        assertThat(reloaded.certificatePem()).isEqualTo(created.certificatePem());
        assertThat(reloaded.certificate()).isEqualTo(created.certificate());
        // the reloaded key is the CA's key: what it signs verifies under the certificate made before the restart
        reloaded.leafFor("api.example.test").certificate().verify(created.certificate().getPublicKey());
    }

    @Test
    void aKeyFileOthersCouldReadIsMadeOwnerOnlyAgain() throws Exception {
        CertificateAuthority created = CertificateAuthority.loadOrCreate(dir);
        Path key = dir.resolve(CertificateAuthority.KEY_FILE);
        Files.setPosixFilePermissions(key, PosixFilePermissions.fromString("rw-r--r--"));

        assertThat(CertificateAuthority.loadOrCreate(dir).certificate()).isEqualTo(created.certificate());
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(key))).isEqualTo("rw-------");
    }

    @Test
    void aCreationCutShortIsRedoneButACertificateWithoutItsKeyIsNeverReplaced() throws Exception {
        Path cert = dir.resolve(CertificateAuthority.CERTIFICATE_FILE);
        Path key = dir.resolve(CertificateAuthority.KEY_FILE);
        CertificateAuthority first = CertificateAuthority.loadOrCreate(dir);

        Files.delete(cert); // a crash between the key's rename and the certificate's
        CertificateAuthority second = CertificateAuthority.loadOrCreate(dir);
        assertThat(second.certificate()).isNotEqualTo(first.certificate());
        assertThat(Files.readString(cert)).isEqualTo(second.certificatePem());

        Files.delete(key);
        assertThatThrownBy(() -> CertificateAuthority.loadOrCreate(dir))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(key.toString());
        assertThat(Files.readString(cert)).isEqualTo(second.certificatePem());

        // a key of another CA beside the certificate: refused, nothing overwritten
        Files.writeString(key, "-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n");
        assertThatThrownBy(() -> CertificateAuthority.loadOrCreate(dir)).isInstanceOf(RuntimeException.class);
        assertThat(Files.readString(cert)).isEqualTo(second.certificatePem());
    }

    @Test
    void aKeyThatIsNotTheCertificatesIsRefused() throws Exception {
        Path other = dir.resolve("other");
        CertificateAuthority.loadOrCreate(other);
        CertificateAuthority.loadOrCreate(dir);
        Files.copy(other.resolve(CertificateAuthority.KEY_FILE), dir.resolve(CertificateAuthority.KEY_FILE),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);

        assertThatThrownBy(() -> CertificateAuthority.loadOrCreate(dir))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("is not the key of");
    }

    private static X509Certificate parse(String pem) throws Exception {
        return (X509Certificate) CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(pem.getBytes(StandardCharsets.US_ASCII)));
    }
}
