package io.paddock.network;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.Optional;

/**
 * What the egress proxy trusts when it connects to a secret's host: the JDK's CA certificates, plus those of
 * {@code --egress-trust} (a private PKI, or a test's own CA).
 */
final class UpstreamTrust {
    private UpstreamTrust() {
    }

    static SSLContext context(Optional<Path> extraPem) {
        try {
            if (extraPem.isEmpty()) {
                return SSLContext.getDefault();
            }
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            TrustManagerFactory jdk = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            jdk.init((KeyStore) null);
            int n = 0;
            for (var tm : jdk.getTrustManagers()) {
                if (tm instanceof X509TrustManager x) {
                    for (X509Certificate c : x.getAcceptedIssuers()) {
                        store.setCertificateEntry("jdk-" + n++, c);
                    }
                }
            }
            try (InputStream in = Files.newInputStream(extraPem.get())) {
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    store.setCertificateEntry("extra-" + n++, c);
                }
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "egressTrust: cannot read CA certificates from "
                    + extraPem.orElse(null) + ": " + e.getMessage(), e);
        }
    }
}
