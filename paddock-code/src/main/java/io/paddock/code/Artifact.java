package io.paddock.code;

import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * A file the code wrote under its artifacts directory ({@code $PADDOCK_ARTIFACTS_DIR}).
 *
 * @param name     its path relative to the artifacts directory, for example {@code out/report.csv}
 * @param path     its absolute path in the sandbox (it stays there until the sandbox ends; read it with
 *                 {@code sandbox.files().read(path)})
 * @param mimeType guessed from the file name, {@code application/octet-stream} when unknown
 * @param size     its size in bytes
 * @param content  its bytes, when the request asked for them ({@link CodeRequest.Builder#artifactContent})
 */
public record Artifact(String name, String path, String mimeType, long size, Optional<byte[]> content) {
    public Artifact {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(mimeType, "mimeType");
        content = Objects.requireNonNull(content, "content").map(byte[]::clone);
    }

    @Override
    public Optional<byte[]> content() {
        return content.map(byte[]::clone);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Artifact a && a.name.equals(name) && a.path.equals(path) && a.mimeType.equals(mimeType)
                && a.size == size && a.content.isPresent() == content.isPresent()
                && (content.isEmpty() || Arrays.equals(a.content.get(), content.get()));
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, path, mimeType, size);
    }

    @Override
    public String toString() {
        return "Artifact[" + name + ", " + mimeType + ", " + size + " bytes" + (content.isPresent() ? ", with content" : "") + "]";
    }
}
