package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.runc.RuncRuntime;
import io.paddock.runtime.internal.runsc.RunscRuntime;
import io.paddock.runtime.spi.RuntimeProvider;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The isolation tiers this host has, found at engine start: each known tier ({@link SandboxSpec#RUNTIMES})
 * is either open (its binary is there and usable) or absent with the reason and how to install it. Picks
 * the default tier: the configured one, else runc, else runsc, and never a platform that hangs here (runsc
 * is always run on its default platform).
 */
final class Runtimes {
    private static final System.Logger LOG = System.getLogger("io.paddock.engine");

    // @GuardedBy("this") for changes: a module's tier is opened on first use
    private final Map<String, SandboxRuntime> open;
    private final Map<String, String> absent;
    private final String defaultName;
    /** Tiers in their own modules ({@link RuntimeProvider}), by name, not opened yet. */
    private final Map<String, RuntimeProvider> providers;
    private final Map<String, String> options;
    private final java.util.function.UnaryOperator<SandboxRuntime> wrap;

    private final OciHost host;

    Runtimes(OciHost host, Map<String, SandboxRuntime> open, Map<String, String> absent, String defaultName) {
        this(host, open, absent, defaultName, Map.of(), Map.of(), r -> r);
    }

    private Runtimes(OciHost host, Map<String, SandboxRuntime> open, Map<String, String> absent, String defaultName,
                     Map<String, RuntimeProvider> providers, Map<String, String> options,
                     java.util.function.UnaryOperator<SandboxRuntime> wrap) {
        this.host = host;
        this.open = new java.util.concurrent.ConcurrentHashMap<>(open);
        this.absent = new java.util.concurrent.ConcurrentHashMap<>(absent);
        this.defaultName = defaultName;
        this.providers = new LinkedHashMap<>(providers);
        this.options = Map.copyOf(options);
        this.wrap = wrap;
    }

    /**
     * Detects the tiers and picks the default.
     *
     * @throws SandboxException FAILED_PRECONDITION when the configured default tier (or, with none
     *                          configured, every tier) is missing, saying how to install it
     */
    static Runtimes detect(LocalOptions options, Path initBinary, io.paddock.network.SandboxNetworks networks) {
        Map<String, SandboxRuntime> open = new LinkedHashMap<>();
        Map<String, String> absent = new LinkedHashMap<>();
        Map<String, RuntimeProvider> providers = new LinkedHashMap<>();
        for (RuntimeProvider p : java.util.ServiceLoader.load(RuntimeProvider.class, Runtimes.class.getClassLoader())) {
            providers.putIfAbsent(p.name(), p);
        }
        // A tier from a module is this engine's default, or named by its options: the host's OCI tiers are then
        // optional (a daemon in a pod has no root, runc or btrfs, and needs none).
        boolean moduleDefault = options.defaultRuntime().map(providers::containsKey).orElse(false);
        OciHost host = null;
        try {
            host = OciHost.open(options.stateDir(), options.storageDir(), initBinary);
        } catch (SandboxException e) {
            if (!moduleDefault) {
                throw e;
            }
            absent.put(RuncRuntime.NAME, e.getMessage());
            absent.put(RunscRuntime.NAME, e.getMessage());
        }
        if (host != null) {
            try {
                open.put(RuncRuntime.NAME, new NetworkedRuntime(RuncRuntime.open(host), networks));
            } catch (SandboxException e) {
                absent.put(RuncRuntime.NAME, e.getMessage());
            }
            try {
                open.put(RunscRuntime.NAME, new NetworkedRuntime(RunscRuntime.open(host), networks));
            } catch (SandboxException e) {
                absent.put(RunscRuntime.NAME, e.getMessage());
            }
        }
        for (String name : SandboxSpec.RUNTIMES) {
            if (!open.containsKey(name) && !absent.containsKey(name) && !providers.containsKey(name)) {
                absent.put(name, "its module (paddock-" + name + ") is not on the class path");
            }
        }
        String def = options.defaultRuntime().orElse(open.containsKey(RuncRuntime.NAME) || open.isEmpty()
                ? RuncRuntime.NAME : RunscRuntime.NAME);
        Runtimes r = new Runtimes(host, open, absent, def, providers, options.runtimeOptions(),
                rt -> rt.ownsNetwork() ? rt : new NetworkedRuntime(rt, networks));
        r.require(def);
        for (String name : providers.keySet()) {
            if (options.runtimeOptions().keySet().stream().anyMatch(k -> k.startsWith(name + "."))) {
                r.require(name);
            }
        }
        LOG.log(System.Logger.Level.INFO, "isolation tiers: " + r.summary());
        return r;
    }

    /**
     * What the host's tiers share: its state and storage directories, its writable filesystem, its tools; null
     * for an engine whose only tier is a module's (it may run without root).
     */
    OciHost host() {
        return host;
    }

    String defaultName() {
        return defaultName;
    }

    /** The tier a spec runs on: the one it names, or the default. */
    String nameFor(SandboxSpec spec) {
        return spec.runtime().orElse(defaultName);
    }

    /**
     * The open tier of this name.
     *
     * @throws SandboxException FAILED_PRECONDITION when this host lacks it, with how to install it
     */
    SandboxRuntime require(String name) {
        SandboxRuntime rt = open.get(name);
        if (rt != null) {
            return rt;
        }
        if (providers.containsKey(name)) {
            return openModule(name);
        }
        String why = absent.getOrDefault(name, "unknown runtime '" + name + "'");
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the " + name + " isolation tier is not available on"
                + " this host: " + why + (why.contains("apt-get") || !List.of(RuncRuntime.NAME, RunscRuntime.NAME).contains(name) ? ""
                : " (install: apt-get install -y " + name + ")"));
    }

    /**
     * Opens a module's tier (once; a failure is reported to the caller and tried again on the next use, since a
     * cluster may come back).
     */
    private synchronized SandboxRuntime openModule(String name) {
        SandboxRuntime rt = open.get(name);
        if (rt != null) {
            return rt;
        }
        try {
            rt = wrap.apply(providers.get(name).open(options));
        } catch (SandboxException e) {
            absent.put(name, e.getMessage());
            throw new SandboxException(e.code() == ErrorCode.UNAVAILABLE ? ErrorCode.UNAVAILABLE
                    : ErrorCode.FAILED_PRECONDITION, "the " + name + " isolation tier is not available: "
                    + e.getMessage(), e);
        }
        absent.remove(name);
        open.put(name, rt);
        LOG.log(System.Logger.Level.INFO, "isolation tier opened: " + rt.describe());
        return rt;
    }

    Optional<SandboxRuntime> find(String name) {
        return Optional.ofNullable(open.get(name));
    }

    /** The tiers open now (a module's tier that was never used is not among them). */
    Collection<SandboxRuntime> all() {
        return List.copyOf(open.values());
    }

    /** One line: the default tier first, then the others, each with its version or why it is missing. */
    String summary() {
        List<String> parts = new ArrayList<>();
        List<String> order = new ArrayList<>(List.of(defaultName));
        SandboxSpec.RUNTIMES.stream().filter(n -> !n.equals(defaultName)).forEach(order::add);
        String cgroups = "";
        for (String name : order) {
            SandboxRuntime rt = open.get(name);
            String tag = name.equals(defaultName) ? " (default)" : "";
            if (rt != null) {
                // describe() is "<version>, cgroup …": the version per tier, the cgroup layout once at the end
                String[] d = rt.describe().split(", cgroup ", 2);
                parts.add(d[0] + tag);
                if (d.length == 2) {
                    cgroups = ", cgroup " + d[1];
                }
            } else {
                parts.add(name + ": not available" + tag + " (" + absent.getOrDefault(name, providers.containsKey(name) ? "opened on first use" : "?").replace(",", ";") + ")");
            }
        }
        return String.join("; ", parts) + cgroups;
    }
}
