package io.paddock;

import io.paddock.spi.PaddockProvider;

import java.net.URI;
import java.util.List;
import java.util.ServiceLoader;

/**
 * The entry point: creates, finds and lists sandboxes. The same interface whether the engine runs in this
 * JVM ({@link #local()}) or in a Paddock daemon, so code moves from one to the other unchanged.
 *
 * <pre>{@code
 * try (Paddock paddock = Paddock.local();
 *      Sandbox sb = paddock.create(SandboxSpec.builder().memory(ByteSize.mib(256)).build())) {
 *     ExecResult r = sb.exec("python3", "-c", "print(6*7)");
 * }
 * }</pre>
 *
 * <p>Closing an embedded {@code Paddock} destroys the sandboxes it created.
 */
public interface Paddock extends AutoCloseable {

    /** Creates a sandbox and returns once its init answers. */
    Sandbox create(SandboxSpec spec);

    /** The sandbox with this id; {@code NOT_FOUND} if there is none. */
    Sandbox get(SandboxId id);

    default Sandbox get(String id) {
        return get(SandboxId.parse(id));
    }

    /** The live sandbox with this name; {@code NOT_FOUND} if there is none. */
    Sandbox getByName(String name);

    /** Snapshots of the sandboxes matching the query, oldest first. */
    List<SandboxInfo> list(SandboxQuery query);

    default List<SandboxInfo> list() {
        return list(SandboxQuery.all());
    }

    /** The images sandboxes are made from: pull, push, build, list, remove. */
    default Images images() {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Paddock does not manage images");
    }

    /** The codebases sandboxes can work on under permission rules. */
    default Codebases codebases() {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Paddock does not manage codebases");
    }

    /** The volumes sandboxes can share. */
    default Volumes volumes() {
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "this Paddock does not manage volumes");
    }

    @Override
    void close();

    /** Starts the embedded engine with default options (needs root and runc on this host). */
    static Paddock local() {
        return local(LocalOptions.defaults());
    }

    static Paddock local(LocalOptions options) {
        return provider("local").local(options);
    }

    /**
     * Connects to a Paddock daemon ({@code paddock serve}). The returned {@code Paddock} behaves as
     * {@link #local()} does; wire errors come back as the same {@link SandboxException} codes.
     *
     * @param url   the daemon's base URL, for example {@code http://127.0.0.1:7070}
     * @param token the daemon's bearer token
     */
    static Paddock connect(URI url, String token) {
        if (url == null || url.getScheme() == null || !(url.getScheme().equals("http") || url.getScheme().equals("https"))) {
            throw SandboxException.invalid("url", "an http:// or https:// URL is expected, got " + url);
        }
        if (token == null || token.isBlank()) {
            throw SandboxException.invalid("token", "a bearer token is required (PADDOCK_TOKEN)");
        }
        return provider("remote").connect(url, token);
    }

    /** Connects to the daemon named by the environment: {@code PADDOCK_URL} and {@code PADDOCK_TOKEN}. */
    static Paddock connect() {
        String url = System.getenv("PADDOCK_URL");
        if (url == null || url.isBlank()) {
            throw SandboxException.invalid("PADDOCK_URL", "not set; set it to the daemon's URL, e.g. http://127.0.0.1:7070");
        }
        return connect(URI.create(url.trim()), System.getenv("PADDOCK_TOKEN"));
    }

    private static PaddockProvider provider(String kind) {
        for (PaddockProvider p : ServiceLoader.load(PaddockProvider.class, Paddock.class.getClassLoader())) {
            if (p.kind().equals(kind)) {
                return p;
            }
        }
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "no Paddock " + kind + " provider on the class path;"
                + ("local".equals(kind) ? " add the io.paddock:paddock-engine dependency"
                        : " add the io.paddock:paddock-client dependency"));
    }
}
