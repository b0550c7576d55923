package io.paddock.image.internal;

import io.paddock.Image;

import java.util.List;

/**
 * Paddock's image for running code ({@code paddock run --lang}): Debian bookworm with a toolchain for every
 * language of the code layer's table, and the libraries its plots and data work need. Built from Debian's
 * packages through the ordinary builder (one cached layer), on first use or by {@code paddock image prepare}.
 */
public final class CodeImage {
    /** Its name; a new package list gets a new tag, so an old image is never mistaken for the current one. */
    public static final String NAME = "paddock/code:bookworm-1";
    public static final List<String> PACKAGES = List.of(
            "python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pip", "fonts-dejavu-core",
            "nodejs", "default-jdk-headless", "gcc", "g++", "libc6-dev", "perl", "ruby", "golang-go", "r-base-core",
            "ca-certificates", "procps");

    private CodeImage() {
    }

    /** What it is made of, as the Java builder writes it. */
    public static Image image() {
        return Image.debian("bookworm").apt(PACKAGES).env("MPLBACKEND", "Agg");
    }
}
