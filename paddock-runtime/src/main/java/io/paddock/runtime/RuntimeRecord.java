package io.paddock.runtime;

import io.paddock.SandboxId;

/** A sandbox found on the host: its id and the owner token it was started with ("" if unknown). */
public record RuntimeRecord(SandboxId id, String owner) {
}
