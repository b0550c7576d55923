package io.paddock.server.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The daemon's tenants file: one {@code NAME TOKEN [KEY=VALUE ...]} per line, blank lines and {@code #} comments
 * ignored; the fields after the token set the tenant's quota on the shared store ({@link TenantQuota}).
 * It holds secrets, so it must be a regular file that neither group nor others may read or write. Parsing
 * only; names and tokens are validated by {@code ServerOptions.Builder.tenant}. No message names a token.
 */
public final class TenantsFile {
    private static final long MAX_BYTES = 1 << 20;

    private TenantsFile() {
    }

    /**
     * One line of the file.
     *
     * @param line  its 1-based line number, for messages
     * @param name  the tenant's name
     * @param token the tenant's token
     * @param quota the tenant's quota: {@link TenantQuota#DEFAULT} with the line's fields applied
     */
    public record Entry(int line, String name, String token, TenantQuota quota) {
        @Override
        public String toString() {
            return "Entry{line=" + line + ", name=" + name + ", token=<redacted>, quota=" + quota + "}";
        }
    }

    /** Reads the file; an IOException's message says what is wrong and how to fix it. */
    public static List<Entry> read(Path file) throws IOException {
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(file + " does not exist (create it with one 'NAME TOKEN' per line, mode 0600)");
        }
        if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException(file + " is not a regular file (symbolic links are not followed)");
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS);
        for (PosixFilePermission p : List.of(PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_WRITE,
                PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE)) {
            if (perms.contains(p)) {
                throw new IOException(file + " holds tokens but is readable or writable by other users; run chmod 600 "
                        + file);
            }
        }
        if (Files.size(file) > MAX_BYTES) {
            throw new IOException(file + " is larger than " + MAX_BYTES + " bytes");
        }
        List<Entry> out = new ArrayList<>();
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i).strip();
            if (l.isEmpty() || l.startsWith("#")) {
                continue;
            }
            String[] f = l.split("\\s+");
            if (f.length < 2) {
                throw new IOException(file + ":" + (i + 1) + ": expected 'NAME TOKEN [KEY=VALUE ...]', got " + f.length
                        + " field");
            }
            TenantQuota quota = TenantQuota.DEFAULT;
            for (int k = 2; k < f.length; k++) {
                try {
                    quota = quota.with(f[k]);
                } catch (IllegalArgumentException e) {
                    throw new IOException(file + ":" + (i + 1) + ": " + e.getMessage() + "; a line is"
                            + " 'NAME TOKEN [KEY=VALUE ...]'");
                }
            }
            out.add(new Entry(i + 1, f[0], f[1], quota));
        }
        return out;
    }
}
