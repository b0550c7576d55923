package io.paddock.client.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.ErrorCode;
import io.paddock.Images;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.wire.Wire;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * {@link Paddock} backed by a Paddock daemon ({@code paddock serve}) over its HTTP API ({@code openapi.json}):
 * the same interface, behaviour, exceptions and error codes as the embedded engine, so code moves between
 * {@link Paddock#local()} and {@link Paddock#connect(URI, String)} unchanged.
 *
 * <p><b>One difference: ownership.</b> Sandboxes created through this client belong to the daemon, not to
 * this object. {@link #close()} only releases the client (its HTTP connections and any exec streams still
 * open, whose commands the daemon then kills); it does <em>not</em> destroy the sandboxes, which live on
 * until they are destroyed ({@link Sandbox#close()}, {@link Sandbox#destroy()}), their entrypoint exits or
 * their lifetime timeout passes. An embedded {@code Paddock} destroys its sandboxes when closed. Use
 * try-with-resources on each {@link Sandbox} to leave nothing behind either way.
 *
 * <p>{@link Paddock#connect(URI, String)} checks at once that the daemon answers and accepts the token
 * ({@code GET /v1/version}), so a wrong URL fails with {@code UNAVAILABLE} and a wrong token with
 * {@code PERMISSION_DENIED} there rather than at first use.
 *
 * <p>Every request carries the token in its {@code Authorization} header; the token never appears in a
 * URL, a message or {@link #toString()}. Transport failures (connection refused, timeouts) are
 * {@code UNAVAILABLE} naming the daemon's URL. Thread-safe.
 */
final class RemotePaddock implements Paddock {
    /** Page size asked of the list endpoint; {@link #list} follows {@code next_page_token} to the end. */
    static final int PAGE_SIZE = 1000;

    private final Http http;

    /** Its transport (tests look at its exec sockets). */
    Http http() {
        return http;
    }
    private final RemoteImages images;
    private final RemoteCodebases codebases;
    private final RemoteVolumes volumes;

    private RemotePaddock(Http http) {
        this.http = http;
        this.images = new RemoteImages(http);
        this.codebases = new RemoteCodebases(http);
        this.volumes = new RemoteVolumes(http);
    }

    static RemotePaddock connect(URI url, String token) {
        Objects.requireNonNull(url, "url");
        if (url.getRawUserInfo() != null) {
            throw SandboxException.invalid("url", "must not contain user info; pass the token as the token");
        }
        if (url.getHost() == null) {
            throw SandboxException.invalid("url", "no host in " + url);
        }
        if (url.getRawQuery() != null || url.getRawFragment() != null) {
            throw SandboxException.invalid("url", "must not have a query or fragment: " + url);
        }
        if (token == null || token.isBlank()) {
            throw SandboxException.invalid("token", "a bearer token is required (PADDOCK_TOKEN)");
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < 0x21 || c > 0x7E) {
                throw SandboxException.invalid("token", "may hold only visible ASCII characters (no spaces or line breaks)");
            }
        }
        RemotePaddock p = new RemotePaddock(new Http(url, token));
        p.http.call("GET", "/v1/version", null, null, Http.CONTROL_TIMEOUT); // reachable, and the token is good
        return p;
    }

    static String sandboxPath(SandboxId id) {
        return "/v1/sandboxes/" + id.value();
    }

    @Override
    public Sandbox create(SandboxSpec spec) {
        Objects.requireNonNull(spec, "spec");
        JsonNode info = http.call("POST", "/v1/sandboxes", null, Wire.json(spec), null);
        return new RemoteSandbox(http, Wire.sandboxInfo(info));
    }

    @Override
    public Sandbox get(SandboxId id) {
        Objects.requireNonNull(id, "id");
        return new RemoteSandbox(http, Wire.sandboxInfo(http.call("GET", sandboxPath(id), null, null, Http.CONTROL_TIMEOUT)));
    }

    @Override
    public Sandbox getByName(String name) {
        Objects.requireNonNull(name, "name");
        JsonNode info = http.call("GET", "/v1/sandboxes/by-name/" + Http.encode(name), null, null, Http.CONTROL_TIMEOUT);
        return new RemoteSandbox(http, Wire.sandboxInfo(info));
    }

    @Override
    public List<SandboxInfo> list(SandboxQuery query) {
        Objects.requireNonNull(query, "query");
        List<SandboxInfo> out = new ArrayList<>();
        Set<String> seenTokens = new HashSet<>();
        String pageToken = null;
        do {
            Http.Query q = new Http.Query();
            for (Map.Entry<String, String> e : query.labels().entrySet()) {
                q.add("label", e.getKey() + "=" + e.getValue());
            }
            query.name().ifPresent(n -> q.add("name", n));
            for (SandboxState s : query.states()) {
                q.add("state", s.name());
            }
            q.add("limit", Integer.toString(PAGE_SIZE));
            if (pageToken != null) {
                q.add("page_token", pageToken);
            }
            JsonNode page = http.call("GET", "/v1/sandboxes", q, null, Http.CONTROL_TIMEOUT);
            for (JsonNode s : page.path("sandboxes")) {
                out.add(Wire.sandboxInfo(s));
            }
            JsonNode next = page.get("next_page_token");
            pageToken = next == null || next.isNull() || next.asText().isEmpty() ? null : next.asText();
            if (pageToken != null && !seenTokens.add(pageToken)) {
                throw new SandboxException(ErrorCode.INTERNAL, "the daemon at " + http.base()
                        + " returned the same page token twice while listing sandboxes");
            }
        } while (pageToken != null);
        return out;
    }

    /** The daemon's images: its one store, shared by all its clients ({@link RemoteImages}). */
    @Override
    public Images images() {
        return images;
    }

    @Override
    public io.paddock.Codebases codebases() {
        return codebases;
    }

    /** The daemon's volumes: for a tenant's token, that tenant's ({@link RemoteVolumes}). */
    @Override
    public io.paddock.Volumes volumes() {
        return volumes;
    }

    /** Releases this client only; the daemon's sandboxes are not destroyed (see the class comment). */
    @Override
    public void close() {
        http.close();
    }

    @Override
    public String toString() {
        return "RemotePaddock[" + http.base() + "]";
    }
}
