package io.paddock.engine.internal;

import io.paddock.ExecRequest;
import io.paddock.SandboxSpec;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The complete environment of a tenant process, rebuilt from scratch for every command: a fixed base,
 * then the sandbox's variables and secrets, then the command's own. Nothing of the engine's environment
 * is ever inherited.
 */
final class ExecEnvironment {
    static final Map<String, String> BASE = baseEnv();

    private ExecEnvironment() {
    }

    private static Map<String, String> baseEnv() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        m.put("HOME", SandboxSpec.DEFAULT_WORKDIR);
        m.put("USER", "sandbox");
        m.put("LOGNAME", "sandbox");
        m.put("SHELL", "/bin/bash");
        m.put("LANG", "C.UTF-8");
        m.put("TMPDIR", "/tmp");
        m.put("HOSTNAME", "sandbox");
        return Map.copyOf(m);
    }

    static List<String> build(SandboxSpec spec, Map<String, String> requestEnv) {
        return build(BASE, spec, requestEnv);
    }

    /** As {@link #build(SandboxSpec, Map)} from another base: an image's environment. */
    static List<String> build(Map<String, String> base, SandboxSpec spec, Map<String, String> requestEnv) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", base.getOrDefault("PATH", BASE.get("PATH")));
        base.forEach(env::putIfAbsent);
        env.putAll(spec.env());
        env.putAll(spec.secrets());
        // Egress secrets: only their placeholders; the proxy puts the values in on the way out.
        spec.egressSecrets().forEach(e -> env.put(e.key(), e.placeholder()));
        if (!spec.egressSecrets().isEmpty()) {
            // The egress proxy's CA is in the sandbox's system bundle; these tools read their own unless told.
            for (String var : List.of("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")) {
                env.putIfAbsent(var, "/etc/ssl/certs/ca-certificates.crt");
            }
        }
        env.putAll(requestEnv);
        List<String> out = new ArrayList<>(env.size());
        env.forEach((k, v) -> out.add(k + "=" + v));
        return out;
    }

    /** The terminal type of a command run on a pseudo-terminal, unless the image, spec or request set one. */
    static final String TERM = "xterm-256color";

    static List<String> build(SandboxSpec spec, ExecRequest request) {
        return build(BASE, spec, request);
    }

    /** As {@link #build(Map, SandboxSpec, Map)} for this request, with {@code TERM} for one on a terminal. */
    static List<String> build(Map<String, String> base, SandboxSpec spec, ExecRequest request) {
        List<String> env = build(base, spec, request.env());
        if (request.terminal().isPresent() && env.stream().noneMatch(e -> e.startsWith("TERM="))) {
            env.add("TERM=" + TERM);
        }
        return env;
    }
}
