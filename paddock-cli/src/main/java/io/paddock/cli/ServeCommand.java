package io.paddock.cli;

import io.paddock.LocalOptions;
import io.paddock.server.Daemon;
import io.paddock.server.DaemonOptions;
import io.paddock.server.ServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code paddock serve}: the daemon. */
@Command(name = "serve", sortOptions = false,
        description = {"Run the Paddock daemon: the REST + WebSocket API (see /v1/openapi.json) over the local engine.",
                "Its sandboxes survive a restart of the daemon. Needs root and runc (runsc for the gVisor tier). The "
                + "token comes from $PADDOCK_TOKEN, or is generated at first start and stored in DATA_DIR/token (mode "
                + "0600). That token is the operator's: it sees every sandbox. Tenants' tokens (each sees only its own "
                + "sandboxes) come from DATA_DIR/tenants if it exists, or --tenants FILE: one 'NAME TOKEN [KEY=VALUE ...]' "
                + "per line (the keys set the tenant's quotas: volumes, volume-bytes, codebases, codebase-bytes, sandbox-disk, builds, build-time, build-cpus, build-memory, image-bytes), mode 0600. With --runtime kubernetes each sandbox is a pod in --namespace (docs/KUBERNETES.md); "
                + "root is then not needed."},
        footer = {"", "Examples:", "  sudo ./paddock serve --listen 127.0.0.1:7070 --data-dir /var/lib/paddock",
                "  paddock serve --runtime kubernetes --namespace paddock-sandboxes --data-dir /var/lib/paddock"})
final class ServeCommand implements Callable<Integer> {
    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "Where to listen (default: " + DaemonOptions.DEFAULT_LISTEN + ").")
    String listen = DaemonOptions.DEFAULT_LISTEN;

    @Option(names = "--data-dir", paramLabel = "DIR", description = "Where the daemon keeps its SQLite file and token (default: /var/lib/paddock).")
    Path dataDir = DaemonOptions.DEFAULT_DATA_DIR;

    @Option(names = "--state-dir", paramLabel = "DIR", description = "Where sandboxes' runtime state lives (default: /run/paddock). Every directory above it must let others pass (o+x): sandboxes reach their roots through it.")
    Path stateDir = LocalOptions.DEFAULT_STATE_DIR;

    @Option(names = "--max-sandboxes", paramLabel = "N", description = "The most live sandboxes at once (default: 1000); more get HTTP 429.")
    int maxSandboxes = DaemonOptions.DEFAULT_MAX_SANDBOXES;

    @Option(names = "--tenants", paramLabel = "FILE",
            description = "The tenants file (default: DATA_DIR/tenants, if it exists): 'NAME TOKEN [KEY=VALUE ...]' per line (quotas: volumes, volume-bytes, codebases, codebase-bytes, sandbox-disk, builds, build-time, build-cpus, build-memory, image-bytes), '#' comments, mode 0600.")
    Path tenants;

    @Option(names = "--max-sandboxes-per-tenant", paramLabel = "N",
            description = "The most live sandboxes one tenant may have at once (default: "
                    + ServerOptions.DEFAULT_MAX_SANDBOXES_PER_TENANT + "); more get HTTP 429.")
    int maxSandboxesPerTenant = ServerOptions.DEFAULT_MAX_SANDBOXES_PER_TENANT;

    @Option(names = {"--default-runtime", "--runtime"}, paramLabel = "TIER",
            description = {"Isolation tier for sandboxes that name none: runc, runsc (gVisor) or kubernetes (a pod each, in "
                    + "--namespace; see docs/KUBERNETES.md) (default: runc)."})
    String defaultRuntime;

    @Option(names = "--namespace", paramLabel = "NS",
            description = "kubernetes tier: the namespace of the sandboxes' pods (default: the kubeconfig context's).")
    String namespace;

    @Option(names = "--kubeconfig", paramLabel = "FILE",
            description = "kubernetes tier: the kubeconfig (default: $KUBECONFIG, ~/.kube/config, or the pod's service account).")
    Path kubeconfig;

    @Option(names = "--kube-master", paramLabel = "URL", description = "kubernetes tier: the API server, overriding the kubeconfig's.")
    String kubeMaster;

    @Option(names = "--kube-init-image", paramLabel = "IMAGE",
            description = "kubernetes tier: the image holding /paddock-init, copied into every pod (deploy/images/paddock-init).")
    String kubeInitImage;

    @Option(names = "--kube-default-image", paramLabel = "IMAGE",
            description = "kubernetes tier: the image of sandboxes whose image is 'host' (a cluster has no host image).")
    String kubeDefaultImage;

    @Option(names = "--kube-runtime-class", paramLabel = "NAME",
            description = "kubernetes tier: the pods' RuntimeClass (gvisor, kata; default: the cluster's).")
    String kubeRuntimeClass;

    @Option(names = "--kube-start-timeout", paramLabel = "SECONDS",
            description = "kubernetes tier: how long a pod may take to be scheduled and started (default: 120).")
    String kubeStartTimeout;

    @Option(names = "--kube-delete-timeout", paramLabel = "SECONDS",
            description = "kubernetes tier: how long a destroy waits for the API to confirm a pod gone before it says"
                    + " it is not and keeps deleting it in the background (default: 60).")
    String kubeDeleteTimeout;

    @Option(names = "--kube-user-namespaces",
            description = "kubernetes tier: run pods in user namespaces of their own (hostUsers: false; needs Kubernetes 1.30+).")
    boolean kubeUserNamespaces;

    @Option(names = "--kube-adopt",
            description = {"kubernetes tier: the namespace is this daemon's alone: take over running pods another daemon "
                    + "started and this one has no record of (its data directory was lost), from their annotations."})
    boolean kubeAdopt;

    @Option(names = "--pool", paramLabel = "KEY=VALUE,...",
            description = {"A warm pool: sandboxes of one shape created ahead, so that creates with that shape take "
                    + "milliseconds. Keys: size (default 4), refill (creations at once, 2), max-idle (10m), and the shape: "
                    + "memory, cpus, pids, disk, open-files, network, allow-net, port, workdir, runtime, image. "
                    + "Repeatable, one per shape. Example: --pool size=16,memory=256m,cpus=1"})
    java.util.List<String> pools = new java.util.ArrayList<>();

    @Option(names = "--dns-upstream", paramLabel = "IP[:PORT]",
            description = {"The DNS server Paddock's resolver asks for sandboxes' allowlisted names (default: "
                    + "$PADDOCK_DNS_UPSTREAM, else the first nameserver of /etc/resolv.conf)."})
    String dnsUpstream;

    @Option(names = "--allow-private", paramLabel = "CIDR",
            description = {"Open a private range (RFC 1918, CGNAT, link-local...) to sandboxes whose policy allows it. "
                    + "Everything else on the deny list stays denied. Repeatable; only the operator can open ranges."})
    java.util.List<String> allowPrivate = new java.util.ArrayList<>();

    @Option(names = "--build-allow", paramLabel = "ENTRY,...",
            description = {"Where image builds' RUN steps may connect to: none, open (every public address), or an "
                    + "allowlist of domain names, *. wildcards, CIDRs and apt-sources (the hosts of this host's apt "
                    + "sources). Add the registries builds need, e.g. --build-allow 'apt-sources,registry.example.org,"
                    + "*.example.net'. The host, other sandboxes and private ranges stay denied (see --allow-private). "
                    + "Default: $PADDOCK_BUILD_ALLOW, else apt-sources."})
    String buildAllow;

    @Option(names = "--max-egress-connections-per-tenant", paramLabel = "N",
            description = {"Connections one tenant's sandboxes may hold at once in the egress proxy, together, of its 256 "
                    + "(default: 64; each sandbox at most 32)."})
    Integer maxEgressConnectionsPerTenant;

    @Option(names = "--max-dns-tcp-per-tenant", paramLabel = "N",
            description = {"TCP connections one tenant's sandboxes may hold at once in Paddock's resolver, of its 64 "
                    + "(default: 16; each sandbox at most 8)."})
    Integer maxDnsTcpPerTenant;

    @Option(names = "--max-port-connections-per-tenant", paramLabel = "N",
            description = {"Port-proxy exchanges and WebSockets one tenant's sandboxes may have relayed at once, together "
                    + "(default: 128); beyond it, 429."})
    Integer maxPortConnectionsPerTenant;

    @Option(names = "--max-exec-sockets-per-tenant", paramLabel = "N",
            description = {"Exec WebSockets (streamed commands and reusable exec sockets) one tenant may have open at "
                    + "once (default: 128); beyond it, 429."})
    Integer maxExecSocketsPerTenant;

    @Option(names = "--max-registry-connections-per-tenant", paramLabel = "N",
            description = {"Connections to registries one tenant's image pulls and pushes may hold at once, together, "
                    + "of the destination gate's 128 (default: 32, 1 to 128); as many pulls and pushes may run at once. "
                    + "Beyond it, 429."})
    Integer maxRegistryConnectionsPerTenant;

    @Option(names = "--egress-trust", paramLabel = "FILE",
            description = {"CA certificates (PEM) the egress proxy trusts, besides the JDK's, when it connects to the hosts of "
                    + "egress secrets (a private PKI)."})
    Path egressTrust;

    @Option(names = "--port-domain", paramLabel = "DOMAIN",
            description = {"Also serve each sandbox port at its own host name PORT-ID.DOMAIN (an origin of its own, for "
                    + "browsers), e.g. --port-domain sandboxes.example.com with a wildcard DNS record "
                    + "*.sandboxes.example.com."})
    String portDomain;

    @Option(names = "--e2b-listen", paramLabel = "HOST:PORT",
            description = {"Also serve an E2B-compatible API there: E2B's SDKs work with E2B_API_URL and E2B_SANDBOX_URL set to "
                    + "http://HOST:PORT and E2B_API_KEY to a Paddock token (see docs/COMPAT.md)."})
    String e2bListen;

    @Option(names = "--audit-max-size", paramLabel = "SIZE",
            description = {"Rotate the audit log (DATA-DIR/audit.log) when it reaches this size (default: 16m; at least 4k)."})
    String auditMaxSize;

    @Option(names = "--audit-keep", paramLabel = "N",
            description = {"Keep this many rotated audit logs, audit.log.1 (newest) to audit.log.N (default: 5)."})
    int auditKeep = io.paddock.server.ServerOptions.DEFAULT_AUDIT_KEEP;

    @Override
    public Integer call() {
        DaemonOptions.Builder options = DaemonOptions.builder().listen(listen).dataDir(dataDir.toAbsolutePath())
                .stateDir(stateDir.toAbsolutePath()).maxSandboxes(maxSandboxes).defaultRuntime(defaultRuntime)
                .tenantsFile(tenants == null ? null : tenants.toAbsolutePath()).maxSandboxesPerTenant(maxSandboxesPerTenant)
                .portDomain(portDomain).e2bListen(e2bListen);
        pools.forEach(p -> options.pool(PoolOption.parse(p)));
        options.runtimeOption("kubernetes.namespace", namespace)
                .runtimeOption("kubernetes.kubeconfig", kubeconfig == null ? null : kubeconfig.toAbsolutePath().toString())
                .runtimeOption("kubernetes.master", kubeMaster)
                .runtimeOption("kubernetes.initImage", kubeInitImage)
                .runtimeOption("kubernetes.defaultImage", kubeDefaultImage)
                .runtimeOption("kubernetes.runtimeClass", kubeRuntimeClass)
                .runtimeOption("kubernetes.startTimeout", kubeStartTimeout)
                .runtimeOption("kubernetes.deleteTimeout", kubeDeleteTimeout)
                .runtimeOption("kubernetes.userNamespaces", kubeUserNamespaces ? "true" : null)
                .runtimeOption("kubernetes.adopt", kubeAdopt ? "true" : null);
        options.dnsUpstream(dnsUpstream);
        allowPrivate.forEach(options::allowPrivate);
        options.buildAllow(buildAllow);
        options.egressTrust(egressTrust == null ? null : egressTrust.toAbsolutePath());
        options.egressConnectionsPerTenant(maxEgressConnectionsPerTenant).dnsTcpPerTenant(maxDnsTcpPerTenant)
                .portConnectionsPerTenant(maxPortConnectionsPerTenant)
                .execSocketsPerTenant(maxExecSocketsPerTenant)
                .registryConnectionsPerTenant(maxRegistryConnectionsPerTenant);
        if (auditMaxSize != null) {
            options.auditMaxBytes(SpecOptions.size("audit-max-size", auditMaxSize).bytes());
        }
        options.auditKeep(auditKeep);
        Daemon.run(options.build());
        return 0;
    }
}
