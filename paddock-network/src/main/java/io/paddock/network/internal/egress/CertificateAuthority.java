package io.paddock.network.internal.egress;

import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

/**
 * The certificate authority of one Paddock daemon's egress proxy. Sandboxes that carry egress secrets trust it (its
 * certificate is added to their trust store), so that the proxy can terminate their TLS to a secret's host, put the
 * real value where the sandbox has only a placeholder, and send the request on over a TLS connection of its own
 * that verifies the real server.
 *
 * <p>Its key is the most sensitive thing the proxy holds: whoever has it can impersonate any host to every sandbox
 * that trusts it. So it is EC P-256, made here and never exported: {@link #loadOrCreate} keeps it in a 0600 file
 * next to the certificate, {@link #ephemeral()} only in memory. The certificate is a CA with path length 0 and only
 * {@code keyCertSign}/{@code cRLSign}: what it signs cannot sign anything in turn, and it is itself no server
 * certificate. It is valid for ten years (sandboxes that trust it outlive daemon restarts; a new CA would break
 * every running one), and its name carries a random short id, so CAs of different daemons are told apart in a
 * trust store.
 *
 * <p>Leaf certificates are minted on demand for a host name: SAN {@code dNSName} with that name only, EKU
 * {@code serverAuth}, a fresh P-256 key each, valid for {@link #LEAF_VALIDITY} (they are never written anywhere, so
 * a short life costs nothing and limits what a leaked one is worth). They are cached per host, in a bounded LRU,
 * and renewed once less than {@link #LEAF_RENEW_BEFORE} of their life remains.
 *
 * <p>Only the JDK's own providers are used; BouncyCastle is used to build and encode certificates, never registered
 * as a provider (that would change every other user of the JCA in the daemon).
 */
public final class CertificateAuthority {
    private static final System.Logger LOG = System.getLogger(CertificateAuthority.class.getName());

    /** The certificate, PEM; world-readable: it is public, and it goes into every sandbox's trust store. */
    public static final String CERTIFICATE_FILE = "egress-ca.pem";
    /** The private key, PKCS#8 PEM, owner-only. */
    public static final String KEY_FILE = "egress-ca.key";
    private static final String LOCK_FILE = ".egress-ca.lock";

    static final Duration CA_VALIDITY = Duration.ofDays(3650);
    static final Duration LEAF_VALIDITY = Duration.ofDays(7);
    static final Duration LEAF_RENEW_BEFORE = Duration.ofDays(1);
    /** Tolerance for a client's clock that lags the host's. */
    static final Duration BACKDATE = Duration.ofHours(1);
    /** A CA that expires sooner than this is replaced at load: a leaf could not be valid for long under it. */
    static final Duration CA_RENEW_BEFORE = Duration.ofDays(30);
    static final int DEFAULT_LEAF_CACHE = 1024;
    /** RFC 1035 limits; a longer name in a SAN is either wrong or an attack on whoever parses it. */
    private static final int MAX_NAME_LENGTH = 253;

    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> WORLD_READABLE = PosixFilePermissions.fromString("rw-r--r--");
    private static final String SIGNATURE = "SHA256withECDSA";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final X509Certificate certificate;
    private final PrivateKey key;
    private final String certificatePem;
    private final int leafCacheSize;
    /** Access-ordered: the least recently used host is the one dropped. Guarded by itself. */
    private final LinkedHashMap<String, Leaf> leaves;

    private CertificateAuthority(X509Certificate certificate, PrivateKey key, int leafCacheSize) {
        this.certificate = certificate;
        this.key = key;
        this.certificatePem = pem(certificate);
        this.leafCacheSize = leafCacheSize;
        this.leaves = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Leaf> eldest) {
                return size() > CertificateAuthority.this.leafCacheSize;
            }
        };
    }

    /**
     * A certificate minted for one host, and its key. The key stays in this package: the proxy presents it, nothing
     * else may.
     */
    public static final class Leaf {
        private final String host;
        private final X509Certificate certificate;
        private final X509Certificate issuer;
        private final PrivateKey key;

        private Leaf(String host, X509Certificate certificate, X509Certificate issuer, PrivateKey key) {
            this.host = host;
            this.certificate = certificate;
            this.issuer = issuer;
            this.key = key;
        }

        public String host() {
            return host;
        }

        public X509Certificate certificate() {
            return certificate;
        }

        /** The leaf, then the CA: what a server presents. */
        public List<X509Certificate> chain() {
            return List.of(certificate, issuer);
        }

        PrivateKey privateKey() {
            return key;
        }

        boolean renewDue(Instant now) {
            return certificate.getNotAfter().toInstant().minus(LEAF_RENEW_BEFORE).isBefore(now);
        }

        /** Names the host and the serial; never the key. */
        @Override
        public String toString() {
            return "Leaf[" + host + ", serial " + certificate.getSerialNumber().toString(16) + ", until "
                    + certificate.getNotAfter().toInstant() + "]";
        }
    }

    /**
     * The daemon's CA kept in {@code dir}: loaded from {@value #CERTIFICATE_FILE} and {@value #KEY_FILE} when both are
     * there, else made and written (the key 0600, the certificate 0644, each written to a temporary file, synced and
     * renamed into place, the key first, so a crash leaves either a usable pair or only a key, which is replaced).
     * Processes that share {@code dir} are serialised by a lock file, so two daemons starting at once agree on one CA.
     *
     * @throws IllegalStateException when the files are there but unusable (a certificate without its key, a key that
     *                               does not match, a certificate that is no CA): nothing is overwritten, since
     *                               sandboxes may trust that certificate; the message says which file to move away
     * @throws UncheckedIOException  when {@code dir} cannot be read or written
     */
    public static CertificateAuthority loadOrCreate(Path dir) {
        Objects.requireNonNull(dir, "dir");
        synchronized (CertificateAuthority.class) { // a FileLock is per process: threads need their own exclusion
            try {
                Files.createDirectories(dir);
                try (FileChannel lockChannel = FileChannel.open(dir.resolve(LOCK_FILE), StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE)) {
                    FileLock lock = lockChannel.lock();
                    try {
                        return loadOrCreateLocked(dir);
                    } finally {
                        lock.release();
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot load or create the egress CA in " + dir + ": " + e.getMessage(),
                        e);
            }
        }
    }

    private static CertificateAuthority loadOrCreateLocked(Path dir) throws IOException {
        Path certFile = dir.resolve(CERTIFICATE_FILE);
        Path keyFile = dir.resolve(KEY_FILE);
        boolean haveCert = Files.exists(certFile);
        boolean haveKey = Files.exists(keyFile);
        if (haveCert && !haveKey) {
            throw new IllegalStateException("the egress CA certificate " + certFile + " has no key (" + keyFile
                    + " is missing); sandboxes may trust that certificate, so it is not replaced: move it away to have"
                    + " a new CA made");
        }
        if (haveCert) {
            CertificateAuthority loaded = load(certFile, keyFile);
            Instant renewBy = loaded.certificate.getNotAfter().toInstant().minus(CA_RENEW_BEFORE);
            if (renewBy.isAfter(Instant.now())) {
                LOG.log(INFO, "egress CA {0} loaded from {1}", loaded.subject(), dir);
                return loaded;
            }
            LOG.log(WARNING, "egress CA {0} in {1} expires {2}; making a new one (sandboxes started from now on trust"
                    + " it; running ones keep the old one)", loaded.subject(), dir,
                    loaded.certificate.getNotAfter().toInstant());
        } else if (haveKey) {
            LOG.log(WARNING, "{0} has no certificate beside it (a creation cut short); making a new egress CA", keyFile);
        }
        CertificateAuthority created = create(DEFAULT_LEAF_CACHE);
        writeAtomically(keyFile, pkcs8Pem(created.key), OWNER_ONLY);
        writeAtomically(certFile, created.certificatePem, WORLD_READABLE);
        LOG.log(INFO, "egress CA {0} created in {1}", created.subject(), dir);
        return created;
    }

    /** A CA held only in memory, for an engine without a data directory; it dies with the engine. */
    public static CertificateAuthority ephemeral() {
        return ephemeral(DEFAULT_LEAF_CACHE);
    }

    static CertificateAuthority ephemeral(int leafCacheSize) {
        if (leafCacheSize < 1) {
            throw new IllegalArgumentException("leafCacheSize must be at least 1, got " + leafCacheSize);
        }
        return create(leafCacheSize);
    }

    /** The CA certificate, PEM ({@code -----BEGIN CERTIFICATE-----}), for sandboxes' trust stores. */
    public String certificatePem() {
        return certificatePem;
    }

    public X509Certificate certificate() {
        return certificate;
    }

    /**
     * The leaf for {@code host} (a DNS name, compared case-insensitively, a trailing dot ignored): the cached one, or a
     * new one when none is cached or the cached one is due for renewal.
     *
     * @throws IllegalArgumentException when {@code host} is not a plain DNS name (letters, digits, hyphens, dots)
     */
    public Leaf leafFor(String host) {
        String name = normalizeHost(host);
        if (name == null) {
            throw new IllegalArgumentException("not a DNS host name: '" + host + "'");
        }
        Instant now = Instant.now();
        synchronized (leaves) {
            Leaf cached = leaves.get(name);
            if (cached != null && !cached.renewDue(now)) {
                return cached;
            }
            // Minting under the lock: one EC key and one signature, about a millisecond; it keeps two connections
            // to a new host from minting two leaves.
            Leaf minted = mint(name, now);
            leaves.put(name, minted);
            LOG.log(DEBUG, () -> "egress CA " + subject() + " minted " + minted);
            return minted;
        }
    }

    /** The host names with a leaf in the cache (for tests of the bound). */
    int cachedLeaves() {
        synchronized (leaves) {
            return leaves.size();
        }
    }

    /** Names the CA and its certificate's SHA-256 fingerprint; never the key. */
    @Override
    public String toString() {
        return "CertificateAuthority[" + subject() + ", sha256 " + fingerprint() + "]";
    }

    String subject() {
        return certificate.getSubjectX500Principal().getName();
    }

    /** SHA-256 of the certificate's DER, hex: what an operator compares with a sandbox's trust store. */
    public String fingerprint() {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(certificate.getEncoded()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@code host} lower-cased without one trailing dot, or null when it is not a plain DNS name: labels of 1 to 63
     * letters, digits and inner hyphens, 253 characters at most, and not an IPv4 literal (a TLS client sends no SNI
     * for an address, and a certificate names an address otherwise).
     */
    static String normalizeHost(String host) {
        if (host == null) {
            return null;
        }
        String name = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
        if (name.isEmpty() || name.length() > MAX_NAME_LENGTH) {
            return null;
        }
        name = name.toLowerCase(Locale.ROOT);
        String last = null;
        for (String label : name.split("\\.", -1)) {
            if (label.isEmpty() || label.length() > 63 || label.startsWith("-") || label.endsWith("-")) {
                return null;
            }
            for (int i = 0; i < label.length(); i++) {
                char c = label.charAt(i);
                if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')) {
                    return null;
                }
            }
            last = label;
        }
        if (last.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return null; // 198.51.100.7, or a name whose top label is numeric, which no registry hands out
        }
        return name;
    }

    private static CertificateAuthority create(int leafCacheSize) {
        try {
            KeyPair pair = newKeyPair();
            String shortId = HexFormat.of().formatHex(randomBytes(4));
            X500Name name = new X500NameBuilder(BCStyle.INSTANCE)
                    .addRDN(BCStyle.O, "Paddock")
                    .addRDN(BCStyle.CN, "Paddock egress CA " + shortId)
                    .build();
            Instant now = Instant.now();
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(name, serial(),
                    Date.from(now.minus(BACKDATE)), Date.from(now.plus(CA_VALIDITY)), name, pair.getPublic());
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            extensions.createSubjectKeyIdentifier(pair.getPublic()));
            X509Certificate certificate = sign(builder, pair.getPrivate());
            return new CertificateAuthority(certificate, pair.getPrivate(), leafCacheSize);
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot make an egress CA: " + e.getMessage(), e);
        }
    }

    private Leaf mint(String host, Instant now) {
        try {
            KeyPair pair = newKeyPair();
            Instant notAfter = now.plus(LEAF_VALIDITY);
            Instant caNotAfter = certificate.getNotAfter().toInstant();
            if (notAfter.isAfter(caNotAfter)) {
                notAfter = caNotAfter; // a leaf outliving its CA fails path validation anyway
            }
            X500Name subject = new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, host).build();
            X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(certificate, serial(),
                    Date.from(now.minus(BACKDATE)), Date.from(notAfter), subject, pair.getPublic());
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(KeyPurposeId.id_kp_serverAuth))
                    .addExtension(Extension.subjectAlternativeName, false,
                            new GeneralNames(new GeneralName(GeneralName.dNSName, host)))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            extensions.createSubjectKeyIdentifier(pair.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false,
                            extensions.createAuthorityKeyIdentifier(certificate));
            return new Leaf(host, sign(builder, key), certificate, pair.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("cannot mint a certificate for " + host + ": " + e.getMessage(), e);
        }
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey signer)
            throws GeneralSecurityException {
        try {
            X509CertificateHolder holder = builder.build(new JcaContentSignerBuilder(SIGNATURE).build(signer));
            return new JcaX509CertificateConverter().getCertificate(holder);
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException(e.getMessage(), e);
        }
    }

    private static KeyPair newKeyPair() throws GeneralSecurityException {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
        return generator.generateKeyPair();
    }

    /** 127 random bits, positive and non-zero as RFC 5280 wants, and unguessable (no chosen-prefix games). */
    private static BigInteger serial() {
        BigInteger serial;
        do {
            serial = new BigInteger(127, RANDOM);
        } while (serial.signum() == 0);
        return serial;
    }

    private static byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private static CertificateAuthority load(Path certFile, Path keyFile) throws IOException {
        tightenKeyFile(keyFile);
        X509Certificate certificate;
        PrivateKey key;
        String certText = Files.readString(certFile, StandardCharsets.US_ASCII);
        String keyText = Files.readString(keyFile, StandardCharsets.US_ASCII);
        try (PEMParser parser = new PEMParser(new StringReader(certText))) {
            if (!(parser.readObject() instanceof X509CertificateHolder holder)) {
                throw unusable(certFile, "it holds no PEM certificate");
            }
            certificate = new JcaX509CertificateConverter().getCertificate(holder);
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            throw e instanceof IllegalStateException ise ? ise : unusable(certFile, "unreadable (" + e + ")");
        }
        try (PEMParser parser = new PEMParser(new StringReader(keyText))) {
            if (!(parser.readObject() instanceof PrivateKeyInfo info)) {
                throw unusable(keyFile, "it holds no PKCS#8 PEM private key");
            }
            key = new JcaPEMKeyConverter().getPrivateKey(info);
        } catch (IOException | RuntimeException e) {
            // never the exception's text: it could quote the key
            throw e instanceof IllegalStateException ise ? ise : unusable(keyFile, "unreadable as a PKCS#8 PEM key");
        }
        if (certificate.getBasicConstraints() < 0) {
            throw unusable(certFile, "it is not a CA certificate");
        }
        if (!matches(certificate, key)) {
            throw unusable(keyFile, "it is not the key of " + certFile);
        }
        return new CertificateAuthority(certificate, key, DEFAULT_LEAF_CACHE);
    }

    private static IllegalStateException unusable(Path file, String why) {
        return new IllegalStateException("egress CA file " + file + " is unusable: " + why + "; sandboxes may trust"
                + " the CA, so nothing is overwritten: move " + file.getParent() + "/" + CERTIFICATE_FILE + " and "
                + KEY_FILE + " away to have a new CA made");
    }

    /** Whether {@code key} signs what the certificate's public key verifies: the pair belongs together. */
    private static boolean matches(X509Certificate certificate, PrivateKey key) {
        try {
            byte[] probe = randomBytes(32);
            Signature signer = Signature.getInstance(SIGNATURE);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(SIGNATURE);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    /** A key file others can read is made owner-only again, and said so: someone widened it. */
    private static void tightenKeyFile(Path keyFile) throws IOException {
        Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(keyFile);
        if (!permissions.equals(OWNER_ONLY)) {
            LOG.log(WARNING, "{0} was {1}; made {2} again", keyFile, PosixFilePermissions.toString(permissions),
                    PosixFilePermissions.toString(OWNER_ONLY));
            Files.setPosixFilePermissions(keyFile, OWNER_ONLY);
        }
    }

    /**
     * Writes {@code text} to {@code target} so that a reader sees the old file or the whole new one, never part of
     * it: a temporary file in the same directory created with {@code permissions} (never wider, even for a moment),
     * synced, renamed over {@code target}, and the directory synced.
     */
    private static void writeAtomically(Path target, String text, Set<PosixFilePermission> permissions)
            throws IOException {
        Path dir = target.toAbsolutePath().getParent();
        Path temporary = Files.createTempFile(dir, "." + target.getFileName() + ".", ".tmp",
                PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        try {
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
                channel.force(true);
            }
            Files.setPosixFilePermissions(temporary, permissions); // the umask may have narrowed the 0644
            try {
                Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("cannot rename " + temporary + " to " + target + " atomically", e);
            }
        } finally {
            Files.deleteIfExists(temporary);
        }
        try (FileChannel directory = FileChannel.open(dir, StandardOpenOption.READ)) {
            directory.force(true);
        } catch (IOException e) {
            LOG.log(DEBUG, "syncing " + dir + " failed (the rename is done; only a power cut could undo it)", e);
        }
    }

    private static String pem(X509Certificate certificate) {
        StringWriter text = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
            writer.writeObject(certificate);
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode the egress CA certificate", e);
        }
        return text.toString();
    }

    private static String pkcs8Pem(PrivateKey key) {
        StringWriter text = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
            writer.writeObject(new JcaPKCS8Generator(key, null));
        } catch (IOException e) {
            throw new IllegalStateException("cannot encode the egress CA key", e);
        }
        return text.toString();
    }
}
