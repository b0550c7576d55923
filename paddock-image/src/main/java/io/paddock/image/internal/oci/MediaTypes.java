package io.paddock.image.internal.oci;

/** The media types of the OCI image spec and their Docker schema 2 equivalents. */
public final class MediaTypes {
    public static final String OCI_INDEX = "application/vnd.oci.image.index.v1+json";
    public static final String OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
    public static final String OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
    public static final String OCI_LAYER = "application/vnd.oci.image.layer.v1.tar";
    public static final String OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip";
    public static final String OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd";
    public static final String DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
    public static final String DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
    public static final String DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json";
    public static final String DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip";

    private MediaTypes() {
    }

    public static boolean isIndex(String mediaType) {
        return OCI_INDEX.equals(mediaType) || DOCKER_LIST.equals(mediaType);
    }

    public static boolean isManifest(String mediaType) {
        return OCI_MANIFEST.equals(mediaType) || DOCKER_MANIFEST.equals(mediaType);
    }
}
