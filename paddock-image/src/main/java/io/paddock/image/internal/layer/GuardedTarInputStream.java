package io.paddock.image.internal.layer;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

import java.io.IOException;

/**
 * commons-compress's tar reader with the bounds a hostile layer needs:
 * <ul>
 *   <li>the headers of one entry (PAX records, GNU long names and link names, sparse maps), which the reader
 *       keeps in memory, may take at most {@code maxHeaderBytes} of the stream;</li>
 *   <li>at most {@code maxChained} header entries may precede one entry (the reader handles each by calling
 *       {@link #getNextEntry()} again, so an endless chain would otherwise end in a stack overflow);</li>
 *   <li>{@link #endMarkerMissing()} tells a stream that ended without the end-of-archive block (a truncated
 *       layer) from one that has it; the reader treats both as the end.</li>
 * </ul>
 * Names are read as UTF-8.
 */
final class GuardedTarInputStream extends TarArchiveInputStream {
    private final MeteredInputStream source;
    private final int maxHeaderBytes;
    private final int maxChained;
    private int depth;
    private boolean endSeen;
    private boolean endMarkerMissing;

    GuardedTarInputStream(MeteredInputStream source, int maxHeaderBytes, int maxChained) {
        super(source, "UTF-8");
        this.source = source;
        this.maxHeaderBytes = maxHeaderBytes;
        this.maxChained = maxChained;
    }

    /**
     * The next entry. The caller must have read the current entry's data to its end first: otherwise the
     * rest of it would count against the header budget.
     */
    @Override
    public TarArchiveEntry getNextEntry() throws IOException {
        if (depth >= maxChained) {
            throw new IOException("more than " + maxChained + " header entries (PAX, GNU long names) in a row");
        }
        if (depth == 0) {
            source.startHeaders(maxHeaderBytes);
        }
        depth++;
        try {
            return super.getNextEntry();
        } finally {
            if (--depth == 0) {
                source.endHeaders();
            }
        }
    }

    @Override
    protected boolean isEOFRecord(byte[] record) {
        boolean eof = super.isEOFRecord(record);
        if (eof && !endSeen) {
            // The reader passes null for a record it could not read in full: the stream ended early.
            endSeen = true;
            endMarkerMissing = record == null;
        }
        return eof;
    }

    boolean endMarkerMissing() {
        return endMarkerMissing;
    }
}
