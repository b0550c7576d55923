package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The host's network configuration tools: {@code ip} (iproute2) for namespaces, veths, addresses and routes,
 * {@code nft} (nftables) for the filter and NAT rules, and the {@code /proc/sys/net} files of the host's own
 * namespace. The network layer decides what to configure; this class is the only code that configures it.
 * Every command is a batch, so that a sandbox's network is a handful of processes, not dozens.
 */
public final class NetHost {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Path PROC_NET = Path.of("/proc/sys/net");

    private final Path ip;
    private final Path nft;

    private NetHost(Path ip, Path nft) {
        this.ip = ip;
        this.nft = nft;
    }

    /**
     * Finds {@code ip} and {@code nft}, or says how to install them.
     *
     * @throws SandboxException FAILED_PRECONDITION when one is missing
     */
    public static NetHost locate() {
        Path ip = HostProcess.locate("ip", "PADDOCK_IP",
                "ip (iproute2) is not installed; sandbox networks need it. Install it: sudo apt-get install -y iproute2");
        Path nft = HostProcess.locate("nft", "PADDOCK_NFT",
                "nft (nftables) is not installed; sandbox network policies need it. Install it: sudo apt-get install -y nftables");
        return new NetHost(ip, nft);
    }

    /** Runs {@code ip -batch -} (in the namespace {@code netns} when given): one command per line. */
    public void ip(String netns, List<String> commands) {
        List<String> argv = netns == null ? List.of(ip.toString(), "-batch", "-")
                : List.of(ip.toString(), "-netns", netns, "-batch", "-");
        HostProcess.Result r = HostProcess.run(argv, (String.join("\n", commands) + "\n").getBytes(StandardCharsets.UTF_8),
                TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "ip failed (exit " + r.exitCode() + "): " + r.output()
                    + " [commands: " + String.join("; ", commands) + "]");
        }
    }

    /**
     * As {@link #ip} of {@code netns add <name>} followed by {@code commands}, but the namespace is owned by the
     * user namespace {@code userns} (a namespace file) instead of the host's: a process enters {@code userns},
     * unshares a network namespace and waits while {@code ip netns attach} pins it under {@code /run/netns}, then
     * ends. The host's root keeps every power over it (its owner is a descendant of the host's user namespace).
     */
    public void ipInNetnsOwnedBy(Path userns, String name, List<String> commands) {
        try (HostProcess.Held held = HostProcess.hold(List.of(Runsc.nsenter().toString(), "--user=" + userns, Runsc.unshare().toString(),
                "--net", "/bin/sh", "-c", "echo ready; exec cat"), HostProcess.HOLD_TIMEOUT)) {
            if (!held.firstLine().equals("ready")) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot make network namespace " + name + " in " + userns
                        + ": " + held.firstLine());
            }
            List<String> batch = new java.util.ArrayList<>(List.of("netns attach " + name + " " + held.process().pid()));
            batch.addAll(commands);
            ip(null, batch);
        }
    }

    /** Runs {@code ip} once with {@code args}, returning its result whatever its exit code. */
    public HostProcess.Result ipQuery(List<String> args) {
        List<String> argv = new java.util.ArrayList<>(List.of(ip.toString()));
        argv.addAll(args);
        return HostProcess.run(argv, TIMEOUT);
    }

    /** Applies an nftables JSON document ({@code nft -j -f -}); all of it or, on an error, none of it. */
    public void nftApply(String json) {
        HostProcess.Result r = HostProcess.run(List.of(nft.toString(), "-j", "-f", "-"),
                json.getBytes(StandardCharsets.UTF_8), TIMEOUT);
        if (!r.ok()) {
            throw new SandboxException(ErrorCode.INTERNAL, "nft failed (exit " + r.exitCode() + "): " + r.output());
        }
    }

    /** {@code nft -j list …}: the JSON listing, or empty text when the object does not exist. */
    public String nftList(List<String> what) {
        List<String> argv = new java.util.ArrayList<>(List.of(nft.toString(), "-j", "list"));
        argv.addAll(what);
        HostProcess.Result r = HostProcess.run(argv, TIMEOUT);
        if (!r.ok()) {
            if (r.output().contains("No such file or directory")) {
                return "";
            }
            throw new SandboxException(ErrorCode.INTERNAL, "nft list failed (exit " + r.exitCode() + "): " + r.output());
        }
        return r.output();
    }

    /**
     * Writes a sysctl of the host's own network namespace, {@code key} relative to {@code /proc/sys/net} (for
     * example {@code ipv4/conf/pdk7/rp_filter}); no process is started.
     */
    public void sysctl(String key, String value) {
        Path file = PROC_NET.resolve(key).normalize();
        if (!file.startsWith(PROC_NET)) {
            throw new IllegalArgumentException("not a network sysctl: " + key);
        }
        try {
            Files.writeString(file, value, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            throw new SandboxException(ErrorCode.NOT_FOUND, "no sysctl " + file);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot write " + value + " to " + file + ": " + e, e);
        }
    }

    /** Reads a sysctl of the host's own network namespace; empty text when it does not exist. */
    public String readSysctl(String key) {
        try {
            return Files.readString(PROC_NET.resolve(key), StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            return "";
        }
    }
}
