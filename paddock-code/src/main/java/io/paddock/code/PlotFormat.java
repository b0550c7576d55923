package io.paddock.code;

/** The image format plots are returned in. */
public enum PlotFormat {
    PNG("png", "image/png"),
    SVG("svg", "image/svg+xml");

    private final String extension;
    private final String mimeType;

    PlotFormat(String extension, String mimeType) {
        this.extension = extension;
        this.mimeType = mimeType;
    }

    public String extension() {
        return extension;
    }

    public String mimeType() {
        return mimeType;
    }
}
