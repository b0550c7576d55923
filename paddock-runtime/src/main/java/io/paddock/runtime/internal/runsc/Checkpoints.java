package io.paddock.runtime.internal.runsc;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

/** The digest of a checkpoint directory, so that a restore runs only what the engine saw written. */
final class Checkpoints {
    private Checkpoints() {
    }

    /**
     * SHA-256 over every entry of {@code dir} (runsc writes a flat directory): each name, its kind and, for a
     * regular file, its length and bytes, in name order. A link or a subdirectory is part of the digest by
     * name and kind only, and is never followed, so any entry added, removed, renamed or changed changes it.
     */
    static String digest(Path dir) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        List<Path> entries;
        try (Stream<Path> s = Files.list(dir)) {
            entries = s.sorted().toList();
        }
        byte[] buf = new byte[1 << 20];
        for (Path p : entries) {
            md.update(p.getFileName().toString().getBytes(StandardCharsets.UTF_8));
            md.update((byte) 0);
            if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
                md.update((byte) (Files.isSymbolicLink(p) ? 'l' : 'o'));
                continue;
            }
            md.update((byte) 'f');
            md.update(Long.toString(Files.size(p)).getBytes(StandardCharsets.US_ASCII));
            md.update((byte) 0);
            try (InputStream in = Files.newInputStream(p, LinkOption.NOFOLLOW_LINKS)) {
                int n;
                while ((n = in.read(buf)) > 0) {
                    md.update(buf, 0, n);
                }
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }
}
