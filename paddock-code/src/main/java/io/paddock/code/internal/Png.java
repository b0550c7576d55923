package io.paddock.code.internal;

import java.util.Arrays;

/** Reads a PNG's width and height from its IHDR chunk. */
final class Png {
    static final byte[] SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

    private Png() {
    }

    /** {width, height}, or null when the bytes are not a PNG. */
    static int[] size(byte[] png) {
        if (png.length < 24 || !Arrays.equals(Arrays.copyOf(png, 8), SIGNATURE)
                || png[12] != 'I' || png[13] != 'H' || png[14] != 'D' || png[15] != 'R') {
            return null;
        }
        return new int[] {readInt(png, 16), readInt(png, 20)};
    }

    private static int readInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    }
}
