package io.paddock.code;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot of a code context.
 *
 * @param id        the context's id, unique in its interpreter
 * @param name      the name given at creation, if any (unique among live contexts)
 * @param language  the language's canonical name
 * @param state     {@link State#READY}, {@link State#BUSY} running a cell, or {@link State#CLOSED}
 * @param cells     cells run since creation
 * @param restarts  how many times its process was restarted (by {@code restart()} or after a timeout it
 *                  did not survive)
 * @param createdAt when it was created
 */
public record ContextInfo(String id, Optional<String> name, String language, State state, long cells, int restarts,
                          Instant createdAt) {
    public enum State { READY, BUSY, CLOSED }

    public ContextInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(language, "language");
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(createdAt, "createdAt");
    }
}
