package io.paddock.image.internal.layer;

import com.github.luben.zstd.ZstdOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

/**
 * Builds tars for tests, hostile ones included: names are kept exactly as given ({@code ../x}, {@code /abs}),
 * owners and modes as set. Every entry gets a fixed modification time unless one is given.
 */
final class TarBuilder {
    static final FileTime MTIME = FileTime.fromMillis(1_600_000_000_000L);

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final TarArchiveOutputStream tar;

    TarBuilder() {
        this(TarArchiveOutputStream.LONGFILE_POSIX);
    }

    TarBuilder(int longFileMode) {
        tar = new TarArchiveOutputStream(bytes, "UTF-8");
        tar.setLongFileMode(longFileMode);
        tar.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
    }

    static TarArchiveEntry entry(String name, byte type) {
        TarArchiveEntry e = new TarArchiveEntry(name, type, true);
        e.setUserName("");
        e.setGroupName("");
        e.setModTime(MTIME);
        return e;
    }

    TarBuilder dir(String name, int mode) {
        TarArchiveEntry e = entry(name.endsWith("/") ? name : name + "/", TarConstants.LF_DIR);
        e.setMode(040000 | mode);
        return add(e, null);
    }

    TarBuilder dir(String name) {
        return dir(name, 0755);
    }

    TarBuilder file(String name, String content) {
        return file(name, content.getBytes(StandardCharsets.UTF_8), 0644, 0, 0);
    }

    TarBuilder file(String name, byte[] content, int mode, long uid, long gid) {
        TarArchiveEntry e = entry(name, TarConstants.LF_NORMAL);
        e.setMode(0100000 | mode);
        e.setUserId(uid);
        e.setGroupId(gid);
        return add(e, content);
    }

    TarBuilder symlink(String name, String target) {
        TarArchiveEntry e = entry(name, TarConstants.LF_SYMLINK);
        e.setLinkName(target);
        e.setMode(0120777);
        return add(e, null);
    }

    TarBuilder hardlink(String name, String target) {
        TarArchiveEntry e = entry(name, TarConstants.LF_LINK);
        e.setLinkName(target);
        e.setMode(0100644);
        return add(e, null);
    }

    TarBuilder device(String name, byte type, int major, int minor) {
        TarArchiveEntry e = entry(name, type);
        e.setMode(0644);
        e.setDevMajor(major);
        e.setDevMinor(minor);
        return add(e, null);
    }

    /** An entry carrying extra PAX records (xattrs, for example). */
    TarBuilder withPax(TarArchiveEntry e, Map<String, String> pax, byte[] content) {
        pax.forEach(e::addPaxHeader);
        return add(e, content);
    }

    TarBuilder add(TarArchiveEntry e, byte[] content) {
        try {
            if (content != null) {
                e.setSize(content.length);
            }
            tar.putArchiveEntry(e);
            if (content != null) {
                tar.write(content);
            }
            tar.closeArchiveEntry();
            return this;
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /** Writes raw data as an entry of any type, bypassing nothing but the caller's good sense. */
    TarBuilder raw(String name, byte type, byte[] content) {
        TarArchiveEntry e = entry(name, type);
        e.setMode(0100644);
        return add(e, content);
    }

    byte[] build() {
        try {
            tar.finish();
            tar.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    static byte[] gzip(byte[] data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (OutputStream gz = new GZIPOutputStream(out)) {
            gz.write(data);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static byte[] zstd(byte[] data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (OutputStream z = new ZstdOutputStream(out)) {
            z.write(data);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
