package io.paddock.cli;

import io.paddock.ByteSize;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The sandbox limits and settings every command that creates a sandbox accepts. */
final class SpecOptions {
    @Option(names = "--image", paramLabel = "REF",
            description = "The image: host (the host's /usr, read-only; the default), a stored image's name or id, or"
                    + " debian:<suite>[-slim] (built from Debian's packages on first use).")
    String image;

    @Option(names = "--memory", paramLabel = "SIZE", description = "Memory limit, e.g. 256m, 1g (default: 512m).")
    String memory;

    @Option(names = "--cpus", paramLabel = "N", description = "CPU limit in cores, e.g. 0.5, 2 (default: 1).")
    Double cpus;

    @Option(names = "--pids", paramLabel = "N", description = "Maximum number of processes (default: 256).")
    Integer pids;

    @Option(names = "--disk", paramLabel = "SIZE", description = "Disk the sandbox may write (default: 1g): /workspace and /tmp;"
            + " with an image other than host, everything it writes, on disk, not counted as memory.")
    String disk;

    @Option(names = "--open-files", paramLabel = "N", description = "Maximum open files per process (default: 1024).")
    Integer openFiles;

    @Option(names = {"-e", "--env"}, paramLabel = "KEY=VALUE", description = "Set an environment variable (repeatable).")
    List<String> env = new ArrayList<>();

    @Option(names = "--secret", paramLabel = "KEY=VALUE",
            description = "Set a secret environment variable; its value is never echoed (repeatable).")
    List<String> secrets = new ArrayList<>();

    @Option(names = "--workdir", paramLabel = "DIR", description = "Working directory (default: /workspace).")
    String workdir;

    @Option(names = "--runtime", paramLabel = "TIER",
            description = "Isolation tier: runc, runsc (gVisor) or kubernetes (a pod; docs/KUBERNETES.md) (default: the engine's or daemon's default tier).")
    String runtime;

    @Option(names = "--on-timeout", paramLabel = "ACTION",
            description = {"What the lifetime deadline does: destroy (default) or pause (checkpointed with --runtime runsc, "
                    + "frozen on runc; kept paused one more day, then destroyed; 'paddock resume' gives a fresh lifetime)."})
    String onTimeout;

    @Option(names = "--network", paramLabel = "MODE",
            description = {"none (default: loopback only), allow (only --allow-net entries) or open (every public address). "
                    + "--allow-net alone implies allow. Private ranges, the host and other sandboxes stay denied."})
    String network;

    @Option(names = "--allow-net", paramLabel = "CIDR|DOMAIN",
            description = {"Allow egress to a CIDR (198.18.0.0/24) or a domain (api.example.com, *.example.com: names under "
                    + "it). Names resolve only through Paddock's resolver. Repeatable."})
    java.util.List<String> allowNet = new java.util.ArrayList<>();

    @Option(names = "--port", paramLabel = "PORT",
            description = {"Expose a port of the sandbox through the daemon (/v1/sandboxes/ID/ports/PORT/, or `paddock port ID "
                    + "PORT` for a URL). Repeatable."})
    java.util.List<Integer> ports = new java.util.ArrayList<>();

    @Option(names = "--egress-secret", paramLabel = "KEY@HOST",
            description = {"A secret the sandbox never sees: its value is read from this command's $KEY; inside, $KEY holds a "
                    + "placeholder, which requests to HOST (HTTPS or HTTP) carry in their headers and Paddock replaces "
                    + "with the value on the way out. HOST must be allowed (--allow-net HOST). Repeatable."})
    java.util.List<String> egressSecrets = new java.util.ArrayList<>();

    @Option(names = "--volume", paramLabel = "NAME:/PATH[:ro]",
            description = {"Mount volume NAME (see `paddock volume`) at PATH, read-only with :ro. Repeatable."})
    java.util.List<String> volumes = new java.util.ArrayList<>();

    @Option(names = "--idle-timeout", paramLabel = "DURATION",
            description = {"Apply the timeout's action (destroy, or --on-timeout pause) after this long without a command, file "
                    + "operation or code run, e.g. 10m."})
    String idleTimeout;

    @Option(names = "--codebase", paramLabel = "NAME[:/PATH]",
            description = {"Work on a codebase (paddock codebase create), at PATH (default: /workspace), under --preset and "
                    + "--permission rules. Its changes stay the sandbox's until `codebase commit`."})
    String codebase;

    @Option(names = "--preset", paramLabel = "PRESET",
            description = {"The codebase's base rules: view-only (default), read-only, agent-safe (secrets hidden, everything "
                    + "readable, out/ and tmp/ writable), development (secrets hidden, all writable), full-access."})
    String preset;

    @Option(names = "--permission", paramLabel = "PATTERN:LEVEL",
            description = {"A rule for the codebase (repeatable): LEVEL none (absent), view (listed, unreadable), read or "
                    + "write; e.g. 'secrets/**:none', 'docs/**:view', 'out/**:write'. The most specific pattern wins."})
    java.util.List<String> permissions = new java.util.ArrayList<>();

    SandboxSpec.Builder apply(SandboxSpec.Builder b) {
        if (idleTimeout != null) {
            b.idleTimeout(duration("idle-timeout", idleTimeout));
        }
        if (codebase != null) {
            b.codebase(io.paddock.CodebaseMount.parse(codebase,
                    preset == null ? io.paddock.PermissionPreset.defaultPreset() : io.paddock.PermissionPreset.parse(preset),
                    permissions.stream().map(io.paddock.PermissionRule::parse).toList()));
        } else if (preset != null || !permissions.isEmpty()) {
            throw io.paddock.SandboxException.invalid("permission", "--preset and --permission need --codebase NAME");
        }
        for (String v : volumes) {
            b.volume(io.paddock.VolumeMount.parse(v));
        }
        for (String es : egressSecrets) {
            int at = es.indexOf('@');
            if (at <= 0 || at == es.length() - 1) {
                throw io.paddock.SandboxException.invalid("egress-secret", "'" + es + "': give KEY@HOST, for example"
                        + " OPENAI_API_KEY@api.openai.com");
            }
            String key = es.substring(0, at);
            String value = System.getenv(key);
            if (value == null || value.isEmpty()) {
                throw io.paddock.SandboxException.invalid("egress-secret", "$" + key + " is not set in this command's"
                        + " environment; the secret's value is read from it (export " + key + "=...)");
            }
            b.egressSecret(key, es.substring(at + 1), value);
        }
        io.paddock.NetworkPolicy policy = networkPolicy(network, allowNet);
        if (policy != null) {
            b.network(policy);
        }
        ports.forEach(b::port);
        if (image != null) {
            b.image(image);
        }
        if (memory != null) {
            b.memory(size("memory", memory));
        }
        if (cpus != null) {
            b.cpus(cpus);
        }
        if (pids != null) {
            b.pids(pids);
        }
        if (disk != null) {
            b.disk(size("disk", disk));
        }
        if (openFiles != null) {
            b.openFiles(openFiles);
        }
        for (String kv : env) {
            String[] p = keyValue("env", kv);
            b.env(p[0], p[1]);
        }
        for (String kv : secrets) {
            String[] p = keyValue("secret", kv);
            b.secret(p[0], p[1]);
        }
        if (workdir != null) {
            b.workdir(workdir);
        }
        if (onTimeout != null) {
            b.onTimeout(io.paddock.wire.Wire.timeoutAction(onTimeout));
        }
        if (runtime != null) {
            b.runtime(runtime);
        }
        return b;
    }

    /** The policy of {@code --network} and {@code --allow-net}; null when neither is given. */
    static io.paddock.NetworkPolicy networkPolicy(String mode, java.util.List<String> allow) {
        if (mode == null) {
            return allow.isEmpty() ? null : io.paddock.NetworkPolicy.allow(allow);
        }
        io.paddock.NetworkMode m = switch (mode.toLowerCase(java.util.Locale.ROOT)) {
            case "none" -> io.paddock.NetworkMode.NONE;
            case "allow" -> io.paddock.NetworkMode.ALLOW;
            case "open" -> io.paddock.NetworkMode.OPEN;
            default -> throw io.paddock.SandboxException.invalid("network", "unknown mode '" + mode
                    + "' (known: none, allow, open)");
        };
        if (m != io.paddock.NetworkMode.ALLOW && !allow.isEmpty()) {
            throw io.paddock.SandboxException.invalid("network", "--allow-net needs --network allow (or no --network),"
                    + " not --network " + mode);
        }
        return m == io.paddock.NetworkMode.ALLOW ? io.paddock.NetworkPolicy.allow(allow) : io.paddock.NetworkPolicy.of(m);
    }

    static ByteSize size(String field, String text) {
        try {
            return ByteSize.parse(text);
        } catch (IllegalArgumentException e) {
            throw SandboxException.invalid(field, e.getMessage());
        }
    }

    static String[] keyValue(String field, String kv) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
            throw SandboxException.invalid(field, "expected KEY=VALUE, got '" + kv + "'");
        }
        return new String[] {kv.substring(0, eq), kv.substring(eq + 1)};
    }

    private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h|d)?");

    /** Parses {@code 30s}, {@code 500ms}, {@code 5m}, {@code 1h}, {@code 2d} or a number of seconds. */
    static Duration duration(String field, String text) {
        Matcher m = DURATION.matcher(text.trim().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw SandboxException.invalid(field, "not a duration: '" + text + "' (examples: 500ms, 30s, 5m, 1h)");
        }
        double n = Double.parseDouble(m.group(1));
        String unit = m.group(2) == null ? "s" : m.group(2);
        double millis = switch (unit) {
            case "ms" -> n;
            case "s" -> n * 1000;
            case "m" -> n * 60_000;
            case "h" -> n * 3_600_000;
            default -> n * 86_400_000;
        };
        return Duration.ofMillis(Math.round(millis));
    }
}
