package io.paddock.engine.internal;

import io.paddock.ErrorCode;
import io.paddock.LocalOptions;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;
import io.paddock.runtime.SandboxRuntime;
import io.paddock.runtime.internal.bundle.OciHost;
import io.paddock.runtime.internal.runc.RuncRuntime;
import io.paddock.runtime.internal.runsc.RunscRuntime;

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

    private final Map<String, SandboxRuntime> open;
    private final Map<String, String> absent;
    private final String defaultName;

    private final OciHost host;

    Runtimes(OciHost host, Map<String, SandboxRuntime> open, Map<String, String> absent, String defaultName) {
        this.host = host;
        this.open = Map.copyOf(open);
        this.absent = Map.copyOf(absent);
        this.defaultName = defaultName;
    }

    /**
     * Detects the tiers and picks the default.
     *
     * @throws SandboxException FAILED_PRECONDITION when the configured default tier (or, with none
     *                          configured, every tier) is missing, saying how to install it
     */
    static Runtimes detect(LocalOptions options, Path initBinary, io.paddock.network.SandboxNetworks networks) {
        OciHost host = OciHost.open(options.stateDir(), options.storageDir(), initBinary);
        Map<String, SandboxRuntime> open = new LinkedHashMap<>();
        Map<String, String> absent = new LinkedHashMap<>();
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
        String def = options.defaultRuntime().orElse(open.containsKey(RuncRuntime.NAME) || open.isEmpty()
                ? RuncRuntime.NAME : RunscRuntime.NAME);
        Runtimes r = new Runtimes(host, open, absent, def);
        r.require(def);
        LOG.log(System.Logger.Level.INFO, "isolation tiers: " + r.summary());
        return r;
    }

    /** What the host's tiers share: its state and storage directories, its writable filesystem, its tools. */
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
        String why = absent.getOrDefault(name, "unknown runtime '" + name + "'");
        throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the " + name + " isolation tier is not available on"
                + " this host: " + why + (why.contains("apt-get") ? "" : " (install: apt-get install -y " + name + ")"));
    }

    Optional<SandboxRuntime> find(String name) {
        return Optional.ofNullable(open.get(name));
    }

    Collection<SandboxRuntime> all() {
        return open.values();
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
                parts.add(name + ": not available" + tag + " (" + absent.getOrDefault(name, "?").replace(",", ";") + ")");
            }
        }
        return String.join("; ", parts) + cgroups;
    }
}
