package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.SandboxException;
import io.paddock.VolumeInfo;
import io.paddock.Volumes;
import io.paddock.wire.VolumeWire;

/**
 * The volume endpoints ({@code /v1/volumes…}): translates requests to the engine's {@link Volumes} and back,
 * with names scoped per tenant by {@link Tenancy}: a tenant's volume that another tenant names answers 404
 * exactly as an unknown one does. Thread-safe: it holds no state.
 */
final class VolumeApi {
    private final Paddock paddock;
    private final Tenancy tenancy;

    VolumeApi(Paddock paddock, Tenancy tenancy) {
        this.paddock = paddock;
        this.tenancy = tenancy;
    }

    JsonNode create(Caller caller, JsonNode body) {
        VolumeWire.CreateRequest r = VolumeWire.createRequest(body);
        String name = tenancy.volumeName(caller, r.name(), true);
        try {
            io.paddock.ByteSize size = r.size().orElse(Volumes.DEFAULT_SIZE);
            return VolumeWire.json(tenancy.view(caller, tenancy.createVolume(caller, size,
                    () -> paddock.volumes().create(name, size))));
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.ALREADY_EXISTS) {
                throw new SandboxException(ErrorCode.ALREADY_EXISTS, "a volume named '" + r.name() + "' already exists", e);
            }
            throw e;
        }
    }

    JsonNode list(Caller caller) {
        return VolumeWire.json(paddock.volumes().list().stream().filter(v -> tenancy.seesVolume(caller, v.name()))
                .map(v -> tenancy.view(caller, v)).toList());
    }

    JsonNode get(Caller caller, String name) {
        return VolumeWire.json(tenancy.view(caller, lookup(caller, name)));
    }

    void remove(Caller caller, String name) {
        VolumeInfo v = lookup(caller, name);
        try {
            paddock.volumes().remove(v.name());
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw noVolume(name);
            }
            if (e.code() == ErrorCode.FAILED_PRECONDITION) {
                throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "volume '" + name + "' is mounted by "
                        + tenancy.view(caller, paddock.volumes().get(v.name())).sandboxes().stream()
                        .map(io.paddock.SandboxId::value).toList() + "; destroy them first", e);
            }
            throw e;
        }
    }

    /** The engine's volume the caller names; malformed, unknown and foreign names get the same 404. */
    private VolumeInfo lookup(Caller caller, String name) {
        String engineName;
        try {
            engineName = tenancy.volumeName(caller, name, false);
            io.paddock.internal.Validate.name("name", engineName);
        } catch (SandboxException e) {
            throw noVolume(name);
        }
        try {
            return paddock.volumes().get(engineName);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw noVolume(name);
            }
            throw e;
        }
    }

    private static SandboxException noVolume(String name) {
        return new SandboxException(ErrorCode.NOT_FOUND, "no volume named '" + Limits.shorten(name) + "'");
    }
}
