package io.paddock.code;

import java.util.Objects;

/**
 * A figure captured from a run or cell: from {@code plt.show()}, a figure left open at the end, or a figure
 * as the last expression.
 *
 * @param format  PNG (default) or SVG (on request)
 * @param content the image bytes (a copy is returned)
 * @param width   width in pixels (for PNG read from the image itself)
 * @param height  height in pixels
 * @param dpi     the figure's resolution, 0 when unknown
 */
public record Plot(PlotFormat format, byte[] content, int width, int height, double dpi) {
    public Plot {
        Objects.requireNonNull(format, "format");
        content = content.clone();
    }

    @Override
    public byte[] content() {
        return content.clone();
    }

    public int size() {
        return content.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Plot p && p.format == format && java.util.Arrays.equals(p.content, content)
                && p.width == width && p.height == height && Double.compare(p.dpi, dpi) == 0;
    }

    @Override
    public int hashCode() {
        return Objects.hash(format, java.util.Arrays.hashCode(content), width, height, dpi);
    }

    @Override
    public String toString() {
        return "Plot[" + format + " " + width + "x" + height + ", " + content.length + " bytes]";
    }
}
