package io.paddock.client.internal;

import io.paddock.ByteSize;
import io.paddock.VolumeInfo;
import io.paddock.Volumes;
import io.paddock.internal.Validate;
import io.paddock.wire.VolumeWire;

import java.util.List;
import java.util.Objects;

/**
 * {@link Volumes} of a Paddock daemon, over {@code /v1/volumes} ({@code openapi.json}). A tenant's token sees
 * and names only that tenant's volumes. Names are checked here first, so that one never travels as anything
 * but a single path segment. Thread-safe: it holds no mutable state.
 */
final class RemoteVolumes implements Volumes {
    private final Http http;

    RemoteVolumes(Http http) {
        this.http = http;
    }

    @Override
    public VolumeInfo create(String name, ByteSize size) {
        Validate.name("name", name);
        Objects.requireNonNull(size, "size");
        return VolumeWire.volumeInfo(http.call("POST", "/v1/volumes", null, VolumeWire.createRequest(name, size),
                Http.CONTROL_TIMEOUT));
    }

    @Override
    public List<VolumeInfo> list() {
        return VolumeWire.volumeList(http.call("GET", "/v1/volumes", null, null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public VolumeInfo get(String name) {
        return VolumeWire.volumeInfo(http.call("GET", path(name), null, null, Http.CONTROL_TIMEOUT));
    }

    @Override
    public void remove(String name) {
        http.call("DELETE", path(name), null, null, Http.CONTROL_TIMEOUT);
    }

    private static String path(String name) {
        Objects.requireNonNull(name, "name");
        return "/v1/volumes/" + Http.encode(name);
    }
}
