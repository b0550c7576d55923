package io.paddock.code;

import io.paddock.ErrorCode;
import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.SandboxException;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Paddock's images for running code, built from Debian's packages through the ordinary builder on first use
 * or ahead of time ({@code paddock image prepare}):
 * <ul>
 *   <li>the <b>full</b> image ({@link #FULL}): every language of the code table with the libraries its plots
 *       and data work need; what {@code paddock image prepare} builds and E2B's code interpreter runs;</li>
 *   <li>a <b>lean</b> image per language ({@link #forLanguage}): Debian's base and that language's row's
 *       {@link Language#debian() packages} only, so that a first {@code paddock run --lang python} builds
 *       Python with its plotting libraries and nothing else. They share the base layer.</li>
 * </ul>
 * A code run uses the full image when it is here, else its language's lean image. Each name carries a version:
 * a new package list gets a new tag, so an old image is never mistaken for the current one.
 */
public final class CodeImages {
    /** The Debian suite the images are built from. */
    public static final String SUITE = "bookworm";
    /** The full image's name. */
    public static final String FULL = "paddock/code:bookworm-1";
    /** What every code image has besides its languages' packages. */
    public static final List<String> COMMON = List.of("ca-certificates", "procps");
    /** The full image's packages, in the order it installs them. */
    public static final List<String> FULL_PACKAGES = List.of(
            "python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pip", "fonts-dejavu-core",
            "nodejs", "default-jdk-headless", "gcc", "g++", "libc6-dev", "perl", "ruby", "golang-go", "r-base-core",
            "ca-certificates", "procps");

    private CodeImages() {
    }

    /** The full image's recipe. */
    public static Image full() {
        return Image.debian(SUITE).apt(FULL_PACKAGES).env("MPLBACKEND", "Agg");
    }

    /**
     * The lean image of {@code language}: its name ({@code paddock/code-python:bookworm-1}) and recipe (the
     * row's Debian packages and {@link #COMMON}).
     */
    public static Named forLanguage(Language language) {
        Set<String> packages = new LinkedHashSet<>(language.debian());
        packages.addAll(COMMON);
        Image recipe = Image.debian(SUITE).apt(new ArrayList<>(packages)).env("MPLBACKEND", "Agg");
        return new Named("paddock/code-" + language.name().replaceAll("[^a-z0-9._-]", "-") + ":" + SUITE + "-1", recipe,
                "Debian " + SUITE + " with " + String.join(", ", packages));
    }

    /** The full image as a {@link Named}. */
    public static Named fullNamed() {
        return new Named(FULL, full(), "Debian " + SUITE + " with every language's toolchain (Python with numpy,"
                + " pandas and matplotlib, Node.js, a JDK, gcc/g++, Perl, Ruby, Go and R)");
    }

    /**
     * The image a code run of {@code language} uses on {@code images}: the full image when it is stored, else the
     * language's lean image (which may not be built yet; see {@link Named#ensure}).
     */
    public static Named forRun(Images images, Language language) {
        return stored(images, FULL).isPresent() ? fullNamed() : forLanguage(language);
    }

    /** The stored image {@code reference} names, if there is one. */
    public static Optional<ImageInfo> stored(Images images, String reference) {
        try {
            return Optional.of(images.inspect(reference));
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * A code image: its name, the recipe that builds it, and what it holds in words.
     *
     * @param name        the reference it is stored under
     * @param recipe      what builds it
     * @param description what it holds, for progress messages
     */
    public record Named(String name, Image recipe, String description) {
        /**
         * The stored image, built now (each step cached, so a half-built one resumes) if it is not here yet.
         *
         * @param listener the build's progress
         */
        public ImageInfo ensure(Images images, ImageListener listener) {
            Optional<ImageInfo> found = stored(images, name);
            return found.isPresent() ? found.get() : images.build(recipe, List.of(name), listener);
        }
    }
}
