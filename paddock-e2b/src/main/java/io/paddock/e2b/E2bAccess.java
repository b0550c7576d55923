package io.paddock.e2b;

import io.paddock.Images;
import io.paddock.Sandbox;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;

import java.util.List;
import java.util.Optional;

/**
 * What the E2B API may do with the daemon's sandboxes: who holds an API key, and what that holder sees. The
 * daemon implements it over its own authentication and tenancy, so E2B callers get exactly the rules of the
 * REST API (a tenant sees only its own sandboxes; another's id answers what an unknown one does). Thread-safe.
 */
public interface E2bAccess {

    /**
     * The holder of {@code apiKey} (a tenant token or the operator's). Throws {@code PERMISSION_DENIED} for an
     * unknown or missing key (the caller answers 401), {@code RESOURCE_EXHAUSTED} when {@code clientAddress} has
     * failed too often (429).
     */
    Holder authenticate(String clientAddress, String apiKey);

    /**
     * Any live or recently stopped sandbox by id, whoever owns it; {@code NOT_FOUND} otherwise. Used only for
     * in-sandbox calls, after their per-sandbox access token has been checked (the token is the credential).
     */
    Sandbox sandbox(String id);

    /**
     * The daemon's image store, for building a template's image from the recipe the operator's options give it
     * ({@link E2bOptions#recipe}) on its first create; empty when templates are never built here.
     */
    default Optional<Images> images() {
        return Optional.empty();
    }

    /** The sandboxes one key may use. */
    interface Holder {
        /** Creates a sandbox owned by this holder (its caps and name rules apply). */
        Sandbox create(SandboxSpec spec);

        /** One of this holder's sandboxes; {@code NOT_FOUND} for any other id. */
        Sandbox get(String id);

        /** This holder's sandboxes matching the query, oldest first. */
        List<SandboxInfo> list(SandboxQuery.Builder query);

        /** The sandbox as this holder may see it (labels reserved by the daemon left out). */
        SandboxInfo view(SandboxInfo info);
    }
}
