package io.paddock;

import io.paddock.internal.Validate;

import java.util.Objects;

/**
 * A volume given to a sandbox at {@code path}: its files are shared with every other sandbox that mounts it
 * and outlive them all ({@link Volumes}). Writes past the volume's size fail with "Disk quota exceeded".
 */
public record VolumeMount(String volume, String path, boolean readOnly) {
    public VolumeMount {
        Validate.name("volume", volume);
        MountPaths.check("volumes", path);
    }

    /**
     * Parses the CLI's {@code NAME:/path[:ro|:rw]}.
     *
     * @throws SandboxException INVALID_ARGUMENT naming what is wrong
     */
    public static VolumeMount parse(String text) {
        Objects.requireNonNull(text, "volume");
        String[] parts = text.split(":", -1);
        if (parts.length < 2 || parts.length > 3 || (parts.length == 3 && !parts[2].equals("ro") && !parts[2].equals("rw"))) {
            throw SandboxException.invalid("volumes", "'" + Validate.shorten(text) + "' is not NAME:/path[:ro|:rw]");
        }
        return new VolumeMount(parts[0], parts[1], parts.length == 3 && parts[2].equals("ro"));
    }

    @Override
    public String toString() {
        return volume + ":" + path + (readOnly ? ":ro" : "");
    }
}
