package io.paddock.cli;

import io.paddock.NetworkMode;
import io.paddock.NetworkPolicy;
import io.paddock.PoolConfig;
import io.paddock.SandboxException;
import io.paddock.SandboxSpec;

import java.util.Locale;

/**
 * {@code --pool size=8,memory=256m,cpus=1,runtime=runc,refill=2,max-idle=10m}: one warm pool of the daemon.
 * Shape keys: memory, cpus, pids, disk, open-files, network (none, allow, open), allow-net (repeatable), port
 * (repeatable), workdir, runtime, image; pool keys: size,
 * refill (creations at once), max-idle. Every key is optional; the shape's defaults are the spec's.
 */
final class PoolOption {
    private PoolOption() {
    }

    static PoolConfig parse(String text) {
        PoolConfig.Builder pool = PoolConfig.builder();
        SandboxSpec.Builder shape = SandboxSpec.builder();
        NetworkMode mode = null;
        java.util.List<String> allow = new java.util.ArrayList<>();
        if (!text.isBlank()) {
            for (String part : text.split(",")) {
                String[] kv = SpecOptions.keyValue("pool", part.trim());
                String v = kv[1].trim();
                try {
                    switch (kv[0].trim().toLowerCase(Locale.ROOT)) {
                        case "size" -> pool.size(Integer.parseInt(v));
                        case "refill" -> pool.refillConcurrency(Integer.parseInt(v));
                        case "max-idle" -> pool.maxIdle(SpecOptions.duration("pool max-idle", v));
                        case "memory" -> shape.memory(SpecOptions.size("pool memory", v));
                        case "disk" -> shape.disk(SpecOptions.size("pool disk", v));
                        case "cpus" -> shape.cpus(Double.parseDouble(v));
                        case "pids" -> shape.pids(Integer.parseInt(v));
                        case "open-files" -> shape.openFiles(Integer.parseInt(v));
                        case "network" -> mode = NetworkMode.valueOf(v.toUpperCase(Locale.ROOT));
                        case "allow-net" -> allow.add(v);
                        case "port" -> shape.port(Integer.parseInt(v));
                        case "workdir" -> shape.workdir(v);
                        case "runtime" -> shape.runtime(v);
                        case "image" -> shape.image(v);
                        default -> throw SandboxException.invalid("pool", "unknown key '" + kv[0] + "' in --pool; known:"
                                + " size, refill, max-idle, memory, disk, cpus, pids, open-files, network, allow-net, port, workdir,"
                                + " runtime, image");
                    }
                } catch (IllegalArgumentException e) {
                    throw SandboxException.invalid("pool", "bad value for " + kv[0] + ": '" + v + "'");
                }
            }
        }
        if (!allow.isEmpty() && mode != null && mode != NetworkMode.ALLOW) {
            throw SandboxException.invalid("pool", "allow-net needs network=allow (or no network key), not network="
                    + mode.name().toLowerCase(Locale.ROOT));
        }
        if (!allow.isEmpty() || mode == NetworkMode.ALLOW) {
            shape.network(NetworkPolicy.allow(allow));
        } else if (mode != null) {
            shape.network(mode);
        }
        return pool.shape(shape.build()).build();
    }
}
