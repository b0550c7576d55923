package io.paddock.server.internal;

import io.paddock.DestinationRule;
import io.paddock.ErrorCode;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxId;
import io.paddock.SandboxInfo;
import io.paddock.SandboxQuery;
import io.paddock.SandboxSpec;
import io.paddock.SandboxState;
import io.paddock.internal.Validate;
import io.paddock.network.DestinationGate;
import io.paddock.network.Destinations;

import java.net.ProxySelector;
import java.net.URI;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

/**
 * The engine as one {@link Caller} may see it (ATTACKS.md A62, A57). The operator sees the engine as it
 * is. A tenant sees only the sandboxes it created, as if no other existed:
 * <ul>
 *   <li>ownership is the reserved label {@value #LABEL}, set by the daemon at create and persisted with
 *       the sandbox by the engine, so it survives a restart; no client may set it, tenants may not filter
 *       on it, and tenants' views leave it out;</li>
 *   <li>names are scoped per tenant: a tenant's {@code web} is the engine's {@code <tenant>-web}, mapped
 *       back in every answer. Tenant names have no '-', so the mapping is one-to-one, and the operator may
 *       not create names in a tenant's prefix, so a tenant's create never meets a name it cannot see;</li>
 *   <li>a sandbox of someone else answers exactly what an unknown one does (404, same message);</li>
 *   <li>each tenant has at most {@code maxPerTenant} live sandboxes (429), counting creates in flight, whose specs
 *       reserve at most its {@code sandbox-disk} of disk in all (429 naming the key): each sandbox's disk is the
 *       reserved label {@value #DISK_LABEL}, set by the daemon at create as the tenant's label is (a fork keeps it,
 *       and the source's disk);</li>
 *   <li>images are shared (one store per host): a tenant reads all of them, but writes names only in its own
 *       namespace {@code <tenant>/…} (builds) or under a registry's name (pulls, never into another
 *       tenant's namespace), removes only its own names, and never prunes ({@link #checkImageTags} and the
 *       others).</li>
 *   <li>each tenant keeps at most its {@link TenantQuota} of volumes and codebases on the shared store (429
 *       naming the tenants file's key), checked and created under a lock of the tenant's own.</li>
 * </ul>
 * Thread-safe: the tenant set is fixed; the per-tenant counters are atomic and checked under their own lock,
 * which is held only for the engine's in-memory list, never across a create.
 */
public final class Tenancy implements AutoCloseable {
    /** The label that records which tenant created a sandbox; absent on the operator's. */
    public static final String LABEL = "paddock.io/tenant";
    /** The label that records, in bytes, the disk a tenant's sandbox reserves; set by the daemon with {@link #LABEL}. */
    public static final String DISK_LABEL = "paddock.io/disk";
    /** Labels the daemon sets on a tenant's sandbox, out of the engine's {@link Validate#MAX_LABELS}. */
    private static final int RESERVED_LABELS = 2;
    /** Tenant names: 1-16 lower-case letters and digits, starting with a letter (no '-': see above). */
    public static final Pattern NAME = Pattern.compile("[a-z][a-z0-9]{0,15}");
    /** The default of {@code ServerOptions.maxExecSocketsPerTenant()}: a quarter of the server's connections. */
    public static final int DEFAULT_MAX_EXEC_SOCKETS_PER_TENANT = 128;
    /** The default of {@code ServerOptions.maxRegistryConnectionsPerTenant()}: a quarter of the gate's tunnels. */
    public static final int DEFAULT_MAX_REGISTRY_CONNECTIONS_PER_TENANT = DestinationGate.MAX_CONNECTIONS / 4;
    private static final int MAX_ENGINE_NAME = 63;

    private final Paddock paddock;
    private final Set<String> tenants;
    private final int maxPerTenant;
    private final Map<String, AtomicInteger> creating = new HashMap<>();
    /** Per tenant: the disk its creates and forks in flight reserve; guarded by the tenant's {@link #creating}. */
    private final Map<String, long[]> creatingDisk = new HashMap<>();
    /** Image builds running per tenant, each tenant to its quota's {@code builds}. */
    private final TenantSlots builds = new TenantSlots("image builds", "builds", Integer.MAX_VALUE);
    /** Where a tenant's pulls and pushes may connect; nothing opened: --allow-private opens ranges to sandboxes only. */
    private final Destinations destinations = Destinations.defaults();
    /** Where a tenant's pulls and pushes connect through, to the address it checked; started at the first one. */
    private DestinationGate gate;
    /** How many of the gate's tunnels one tenant's pulls and pushes hold at once, together. */
    private volatile int registryConnections = DEFAULT_MAX_REGISTRY_CONNECTIONS_PER_TENANT;
    private boolean closed;
    private final Map<String, TenantQuota> quotas;
    /** Per tenant: held while its volumes or codebases are counted and one is created, so two creates never both fit. */
    private final Map<String, Object> storeLocks = new HashMap<>();
    /** Exec WebSockets (bound and reusable) open per tenant. */
    private final TenantSlots execSockets = new TenantSlots("exec WebSockets", "maxExecSocketsPerTenant",
            DEFAULT_MAX_EXEC_SOCKETS_PER_TENANT);

    public Tenancy(Paddock paddock, Set<String> tenants, int maxPerTenant) {
        this(paddock, tenants, maxPerTenant, Map.of());
    }

    /** @param quotas each tenant's quota on the shared store; one not here has {@link TenantQuota#DEFAULT} */
    public Tenancy(Paddock paddock, Set<String> tenants, int maxPerTenant, Map<String, TenantQuota> quotas) {
        this.paddock = paddock;
        this.tenants = Set.copyOf(tenants);
        this.maxPerTenant = maxPerTenant;
        this.quotas = Map.copyOf(quotas);
        this.tenants.forEach(t -> {
            creating.put(t, new AtomicInteger());
            creatingDisk.put(t, new long[1]);
            storeLocks.put(t, new Object());
        });
    }

    /** Sets how many exec WebSockets one tenant may have open at once; returns this. */
    public Tenancy maxExecSocketsPerTenant(int max) {
        execSockets.max(max);
        return this;
    }

    /**
     * Counts one exec WebSocket for the caller's tenant (the operator's are not counted) and returns the action,
     * idempotent, that gives it back when the socket ends; beyond the tenant's share, 429 RESOURCE_EXHAUSTED
     * before the upgrade.
     */
    public Runnable admitExecSocket(Caller caller) {
        return execSockets.admit(caller.tenant().orElse(null));
    }

    /**
     * Runs {@code build}, an image build by the caller, within the tenant's quota (ATTACKS.md A83g): at most its
     * {@code builds} at once (429 RESOURCE_EXHAUSTED naming the key), each given the tenant's {@link
     * TenantQuota#buildLimits()}; past its {@code build-time} the engine stops the build (DEADLINE_EXCEEDED, said here
     * naming the key). The operator's builds are not counted and run with the engine's defaults ({@code limits} null).
     */
    public <T> T build(Caller caller, java.util.function.Function<io.paddock.BuildLimits, T> build) {
        if (caller.isOperator()) {
            return build.apply(null);
        }
        String tenant = caller.tenant().orElseThrow();
        TenantQuota q = quota(tenant);
        Runnable release = builds.admit(tenant, q.builds(), "builds=" + q.builds() + " in the tenants file",
                "retry when one has ended");
        try {
            return build.apply(q.buildLimits());
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.DEADLINE_EXCEEDED) {
                throw new SandboxException(ErrorCode.DEADLINE_EXCEEDED, "tenant '" + tenant + "''s build ran past its"
                        + " maximum time (build-time=" + TenantQuota.shown(q.buildTime()) + " in the tenants file) and"
                        + " was stopped", e);
            }
            throw e;
        } finally {
            release.run();
        }
    }

    /**
     * The images as the caller pulls, builds and removes them (ATTACKS.md A83h): a tenant's are the engine's {@link
     * io.paddock.Images#chargedTo charged} to it up to its {@code image-bytes}, so that what its pulls and builds bring
     * into the shared store counts against it, and removing one of its names deletes its layers no image needs; the
     * operator's are the engine's as they are.
     */
    public io.paddock.Images images(Caller caller) {
        if (caller.isOperator()) {
            return paddock.images();
        }
        String tenant = caller.tenant().orElseThrow();
        return paddock.images().chargedTo(tenant, quota(tenant).imageBytes());
    }

    /**
     * Runs {@code operation}, a pull or build by the caller, on {@link #images(Caller)}: for a tenant at or past its
     * {@code image-bytes} it is refused before it starts, and one that would take the tenant past it fails and keeps
     * nothing, both 429 RESOURCE_EXHAUSTED naming the key.
     */
    public <T> T chargeImages(Caller caller, java.util.function.Function<io.paddock.Images, T> operation) {
        io.paddock.Images images = images(caller);
        if (caller.isOperator()) {
            return operation.apply(images);
        }
        String tenant = caller.tenant().orElseThrow();
        try {
            return operation.apply(images);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.RESOURCE_EXHAUSTED && e.getMessage().startsWith("'" + tenant + "' holds ")) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant " + e.getMessage() + " (image-bytes="
                        + quota(tenant).imageBytes() + " in the tenants file); remove some of its images first", e);
            }
            throw e;
        }
    }

    /** The tenant's quota on the shared store. */
    public TenantQuota quota(String tenant) {
        return quotas.getOrDefault(tenant, TenantQuota.DEFAULT);
    }

    /** The longest sandbox name this tenant may use: the engine's 63 less its prefix. */
    public static int maxNameLength(String tenant) {
        return MAX_ENGINE_NAME - tenant.length() - 1;
    }

    // ---- create ----

    /** Creates a sandbox for the caller: reserved fields checked, the name scoped, the tenant's cap held. */
    public Sandbox create(Caller caller, SandboxSpec requested) {
        checkReserved(requested.labels());
        if (caller.isOperator()) {
            requested.name().ifPresent(this::checkOperatorName);
            return paddock.create(scopeResources(caller, requested, requested.toBuilder()).build());
        }
        String tenant = caller.tenant().orElseThrow();
        if (requested.labels().size() > Validate.MAX_LABELS - RESERVED_LABELS) {
            throw SandboxException.invalid("labels", "at most " + (Validate.MAX_LABELS - RESERVED_LABELS) + " labels on"
                    + " a tenant's sandbox (the daemon adds '" + LABEL + "' and '" + DISK_LABEL + "'), got "
                    + requested.labels().size());
        }
        SandboxSpec.Builder b = scopeResources(caller, requested, requested.toBuilder().label(LABEL, tenant)
                .label(DISK_LABEL, Long.toString(requested.disk().bytes())));
        requested.name().ifPresent(n -> b.name(engineName(tenant, n, "name")));
        if (!requested.volumes().isEmpty()) { // a tenant mounts only its own volumes, named in its terms
            b.volumes(requested.volumes().stream().map(v -> new io.paddock.VolumeMount(engineName(tenant, v.volume(),
                    "volumes"), v.path(), v.readOnly())).toList());
        }
        SandboxSpec spec = b.build();
        AtomicInteger inFlight = creating.get(tenant);
        long disk = spec.disk().bytes();
        synchronized (inFlight) {
            List<SandboxInfo> live = live(tenant);
            if (live.size() + inFlight.get() >= maxPerTenant) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' already has "
                        + maxPerTenant + " live sandboxes, its maximum; destroy some first");
            }
            checkSandboxDisk(tenant, live, disk, "a sandbox of " + spec.disk());
            inFlight.incrementAndGet();
            creatingDisk.get(tenant)[0] += disk;
        }
        try {
            return paddock.create(spec);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.ALREADY_EXISTS && requested.name().isPresent()) {
                // The engine's message names the prefixed name and the holder; say it in the tenant's terms.
                throw new SandboxException(ErrorCode.ALREADY_EXISTS, "a live sandbox of tenant '" + tenant
                        + "' is already named '" + requested.name().get() + "'", e);
            }
            throw e;
        } finally {
            synchronized (inFlight) {
                inFlight.decrementAndGet();
                creatingDisk.get(tenant)[0] -= disk;
            }
        }
    }

    /** The tenant's sandboxes that hold resources: creating, running or paused. */
    private List<SandboxInfo> live(String tenant) {
        return paddock.list(SandboxQuery.builder().label(LABEL, tenant)
                .state(SandboxState.CREATING, SandboxState.RUNNING, SandboxState.PAUSED).build());
    }

    /** The disk a tenant's sandbox reserves: its {@value #DISK_LABEL}, or the default disk on one made without it. */
    private static long diskOf(SandboxInfo info) {
        try {
            return Long.parseLong(info.labels().getOrDefault(DISK_LABEL, ""));
        } catch (NumberFormatException e) {
            return SandboxSpec.DEFAULT_DISK.bytes(); // made before the daemon set the label
        }
    }

    /**
     * RESOURCE_EXHAUSTED naming {@code sandbox-disk} when {@code more} bytes of disk, with what the tenant's live
     * sandboxes and creates in flight reserve, would pass its quota. Called holding the tenant's {@link #creating}.
     */
    private void checkSandboxDisk(String tenant, List<SandboxInfo> live, long more, String what) {
        TenantQuota q = quota(tenant);
        long reserved = live.stream().mapToLong(Tenancy::diskOf).sum() + creatingDisk.get(tenant)[0];
        if (more > q.sandboxDisk().bytes() - reserved) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' has live sandboxes"
                    + " reserving " + io.paddock.ByteSize.bytes(reserved) + " of disk; " + what + " would pass its"
                    + " maximum (sandbox-disk=" + q.sandboxDisk() + " in the tenants file); destroy some first");
        }
    }

    /** Refuses the labels only the daemon sets. */
    private static void checkReserved(Map<String, String> labels) {
        for (String reserved : List.of(LABEL, DISK_LABEL)) {
            if (labels.containsKey(reserved)) {
                throw SandboxException.invalid("labels", "'" + reserved + "' is reserved: the daemon sets it on the"
                        + " sandboxes a tenant creates");
            }
        }
    }

    /**
     * Forks a sandbox the caller may see ({@link #get}): the forks keep its labels, so a tenant's are its own, and
     * count against the tenant's maximum of live sandboxes, all of them before any is made.
     */
    public java.util.List<Sandbox> fork(Caller caller, Sandbox source, int count) {
        if (caller.tenant().isEmpty()) {
            return source.fork(count);
        }
        String tenant = caller.tenant().get();
        AtomicInteger inFlight = creating.get(tenant);
        int n = Math.max(count, 0);
        long each = diskOf(source.info());
        synchronized (inFlight) {
            List<SandboxInfo> live = live(tenant);
            if (live.size() + inFlight.get() + n > maxPerTenant) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' has " + live.size()
                        + " live sandboxes and a maximum of " + maxPerTenant + ": " + count + " more would exceed it");
            }
            checkSandboxDisk(tenant, live, each * n, n + " fork" + (n == 1 ? "" : "s") + " of "
                    + io.paddock.ByteSize.bytes(each));
            inFlight.addAndGet(n);
            creatingDisk.get(tenant)[0] += each * n;
        }
        try {
            return source.fork(count);
        } finally {
            synchronized (inFlight) {
                inFlight.addAndGet(-n);
                creatingDisk.get(tenant)[0] -= each * n;
            }
        }
    }

    /**
     * The engine's name of a caller's codebase or volume: a tenant's are kept per tenant as sandbox names are
     * ({@code <tenant>-name}); the operator's may not take a tenant's prefix.
     */
    public String resourceName(Caller caller, String name, String field) {
        if (caller.isOperator()) {
            Validate.name(field, name);
            int dash = name.indexOf('-');
            if (dash > 0 && tenants.contains(name.substring(0, dash))) {
                throw SandboxException.invalid(field, "names starting with '" + name.substring(0, dash + 1)
                        + "' are reserved for tenant '" + name.substring(0, dash) + "'");
            }
            return name;
        }
        return engineName(caller.tenant().orElseThrow(), name, field);
    }

    /**
     * Labels a caller adds to a running sandbox: the reserved {@value #LABEL} is refused (400 naming it), and a
     * tenant's sandbox keeps room for it within the 64 labels.
     */
    public Map<String, String> checkLabels(Caller caller, Sandbox sb, Map<String, String> labels) {
        checkReserved(labels);
        Map<String, String> all = new HashMap<>(sb.info().labels());
        all.putAll(labels);
        if (all.size() > Validate.MAX_LABELS) {
            int daemons = (int) java.util.stream.Stream.of(LABEL, DISK_LABEL).filter(all::containsKey).count();
            throw SandboxException.invalid("labels", "at most " + (caller.isOperator() ? Validate.MAX_LABELS
                    : Validate.MAX_LABELS - daemons) + " labels, got " + (caller.isOperator() ? all.size()
                    : all.size() - daemons));
        }
        return labels;
    }

    /** A codebase's or volume's name as the caller knows it. */
    public String clientResourceName(Caller caller, String engineName) {
        if (caller.isOperator()) {
            return engineName;
        }
        String prefix = caller.tenant().orElseThrow() + "-";
        return engineName.startsWith(prefix) ? engineName.substring(prefix.length()) : engineName;
    }

    /** Whether the caller sees this codebase or volume (the operator sees all). */
    public boolean ownsResource(Caller caller, String engineName) {
        return caller.isOperator() || engineName.startsWith(caller.tenant().orElseThrow() + "-");
    }

    /** The spec with its codebase's and volumes' names in the engine's terms. */
    private SandboxSpec.Builder scopeResources(Caller caller, SandboxSpec spec, SandboxSpec.Builder b) {
        spec.codebase().ifPresent(c -> b.codebase(new io.paddock.CodebaseMount(resourceName(caller, c.codebase(), "codebase"),
                c.path(), c.preset(), c.rules())));
        b.volumes(spec.volumes().stream().map(v -> new io.paddock.VolumeMount(resourceName(caller, v.volume(), "volumes"),
                v.path(), v.readOnly())).toList());
        return b;
    }

    private void checkOperatorName(String name) {
        int dash = name.indexOf('-');
        if (dash > 0 && tenants.contains(name.substring(0, dash))) {
            throw SandboxException.invalid("name", "names starting with '" + name.substring(0, dash + 1)
                    + "' are reserved for the sandboxes of tenant '" + name.substring(0, dash) + "'");
        }
    }

    /** The engine's name for a tenant's name; INVALID_ARGUMENT naming {@code field} if it is too long. */
    private static String engineName(String tenant, String name, String field) {
        Validate.name(field, name);
        int max = maxNameLength(tenant);
        if (name.length() > max) {
            throw SandboxException.invalid(field, "'" + Limits.shorten(name) + "' has " + name.length()
                    + " characters; tenant '" + tenant + "' may use names of at most " + max
                    + " (the daemon keeps names per tenant by prefixing '" + tenant + "-')");
        }
        return tenant + "-" + name;
    }

    // ---- lookup ----

    /**
     * The sandbox with this id if the caller may see it. Malformed, unknown and someone else's ids get the
     * same 404 with the same message form, so the answer is no oracle for which ids exist.
     */
    public Sandbox get(Caller caller, String id) {
        if (!SandboxId.isValid(id)) {
            throw noSandbox(id);
        }
        Sandbox sb;
        try {
            sb = paddock.get(new SandboxId(id));
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                throw noSandbox(id);
            }
            throw e;
        }
        if (!owns(caller, sb.info())) {
            throw noSandbox(id);
        }
        return sb;
    }

    /** The caller's live sandbox with this name (in the caller's terms); 404 alike for unknown and foreign. */
    public Sandbox getByName(Caller caller, String name) {
        if (caller.isOperator()) {
            return paddock.getByName(name);
        }
        String tenant = caller.tenant().orElseThrow();
        try {
            Sandbox sb = paddock.getByName(engineName(tenant, name, "name"));
            if (owns(caller, sb.info())) {
                return sb;
            }
        } catch (SandboxException e) {
            if (e.code() != ErrorCode.NOT_FOUND && e.code() != ErrorCode.INVALID_ARGUMENT) {
                throw e;
            }
        }
        throw new SandboxException(ErrorCode.NOT_FOUND, "no live sandbox named '" + Limits.shorten(name) + "'");
    }

    /** The engine's sandboxes matching {@code query} that the caller may see (the query is scoped to it). */
    public java.util.List<SandboxInfo> list(Caller caller, SandboxQuery.Builder query) {
        caller.tenant().ifPresent(t -> query.label(LABEL, t));
        return paddock.list(query.build());
    }

    /** A label filter of a list request: tenants may not filter on {@value #LABEL}. */
    public void checkFilter(Caller caller, String key) {
        if (!caller.isOperator() && (LABEL.equals(key) || DISK_LABEL.equals(key))) {
            throw SandboxException.invalid("label", "'" + key + "' is reserved to the daemon and cannot be"
                    + " filtered on; a tenant's list holds only its own sandboxes");
        }
    }

    /** A name filter of a list request, in the engine's terms. */
    public String filterName(Caller caller, String name) {
        return caller.tenant().map(t -> engineName(t, name, "name")).orElse(name);
    }

    private static boolean owns(Caller caller, SandboxInfo info) {
        return caller.tenant().map(t -> t.equals(info.labels().get(LABEL))).orElse(true);
    }

    private static SandboxException noSandbox(String id) {
        return new SandboxException(ErrorCode.NOT_FOUND, "no sandbox " + Limits.shorten(id));
    }

    // ---- images ----
    //
    // Images are host-wide: the engine keeps one store, which every tenant reads (any tenant may list, inspect
    // and run every stored image) and which names are written into. So a tenant writes names only where that
    // cannot change what someone else runs: its builds are named in its own namespace '<tenant>/…', its pulls
    // under the registry they came from (which vouches for them), never in another tenant's namespace; it may
    // remove only its own namespace's names, and never prune. The operator may do everything.

    /** The namespace a tenant's images are named in: {@code <tenant>/}. */
    public static String imageNamespace(String tenant) {
        return tenant + "/";
    }

    /** The names a build would write: a tenant's must all be in its namespace (PERMISSION_DENIED otherwise). */
    public void checkImageTags(Caller caller, java.util.List<String> tags) {
        if (caller.isOperator()) {
            return;
        }
        String tenant = caller.tenant().orElseThrow();
        for (String tag : tags) {
            String name = io.paddock.image.internal.ImageService.canonicalName(tag);
            if (!name.startsWith(imageNamespace(tenant))) {
                throw new SandboxException(ErrorCode.PERMISSION_DENIED, "tag: tenant '" + tenant + "' names its"
                        + " images under '" + imageNamespace(tenant) + "' (for example " + imageNamespace(tenant)
                        + "app:1), not '" + Limits.shorten(tag) + "': images are shared by every tenant of this daemon");
            }
        }
    }

    /** The name a pull would write: a tenant's may not fall in another tenant's namespace (PERMISSION_DENIED). */
    public void checkImagePull(Caller caller, String reference) {
        if (caller.isOperator()) {
            return;
        }
        String name = io.paddock.image.internal.ImageService.canonicalName(reference);
        int slash = name.indexOf('/');
        String first = slash < 0 ? "" : name.substring(0, slash);
        if (tenants.contains(first) && !caller.tenant().orElseThrow().equals(first)) {
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "ref: '" + Limits.shorten(reference)
                    + "' would be stored as '" + Limits.shorten(name) + "', in the namespace of another tenant");
        }
    }

    /**
     * Plain-HTTP registries are the operator's: the daemon connects where a pull or push names, so a tenant's
     * plain-HTTP request could make it talk to services on its own host or network (ATTACKS.md A65). A tenant
     * uses HTTPS registries; the operator may name any.
     */
    public void checkRegistryAuth(Caller caller, io.paddock.RegistryAuth auth) {
        if (!caller.isOperator() && auth.isInsecure()) {
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "insecure: plain-HTTP registries are the"
                    + " operator's to use; a tenant's pulls and pushes go to HTTPS registries");
        }
    }

    /**
     * A tenant's pull or push must not make the daemon connect to its own host (any of its addresses), loopback,
     * a private or link-local range (the metadata service) or the sandboxes' range, over HTTPS either (ATTACKS.md
     * A65): the registry's name is resolved here and every address checked by {@link io.paddock.network.Destinations},
     * the rule of every connection made on someone's behalf, before anything connects; the refusal reads the same
     * whether a port there is open or closed. The connections themselves go through the {@link DestinationGate},
     * which resolves the name once more and connects only to the address it checked: a name that resolves
     * differently a moment later (rebinding) gets a refusal, never a connection there.
     */
    public void checkRegistryAddress(Caller caller, String reference) {
        if (caller.isOperator()) {
            return;
        }
        String registry = io.paddock.image.internal.oci.ImageRef.parse(reference).registry();
        String host = registry.startsWith("[") ? registry.substring(1, registry.indexOf(']'))
                : registry.contains(":") ? registry.substring(0, registry.lastIndexOf(':')) : registry;
        gate().check("ref", "the registry " + Limits.shorten(registry), host);
    }

    /** The gate of tenants' pulls and pushes, started at the first. */
    private synchronized DestinationGate gate() {
        if (closed) {
            throw new SandboxException(ErrorCode.UNAVAILABLE, "the daemon is shutting down");
        }
        if (gate == null) {
            gate = DestinationGate.start(destinations);
        }
        return gate;
    }

    /** Closes the destination gate, ending tenants' pulls and pushes still running. */
    @Override
    public synchronized void close() {
        closed = true;
        if (gate != null) {
            gate.close();
        }
    }

    /**
     * Runs {@code operation}, a pull or push by the caller, with the rule of where it may connect
     * ({@link #registryDestinations}). A tenant's connections go through a {@link DestinationGate.Lane} of its own
     * (ATTACKS.md A83i): the tenant holds at most {@link #maxRegistryConnectionsPerTenant} of the gate's {@value
     * DestinationGate#MAX_CONNECTIONS} tunnels at once, over all its pulls and pushes, and runs at most as many at
     * once; beyond either, 429 RESOURCE_EXHAUSTED naming the daemon option. The lane is closed when the operation
     * ends, and its tunnels with it. The operator's pulls and pushes connect directly and are not counted.
     */
    public <T> T registry(Caller caller, java.util.function.Function<DestinationRule, T> operation) {
        if (caller.isOperator()) {
            return operation.apply(DestinationRule.ANYWHERE);
        }
        String tenant = caller.tenant().orElseThrow();
        DestinationGate g = gate();
        DestinationGate.Lane lane;
        try {
            lane = g.lane(tenant, registryConnections);
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.RESOURCE_EXHAUSTED) {
                throw overRegistryShare(tenant, "pulls and pushes running", e);
            }
            throw e;
        }
        try {
            return operation.apply(registryDestinations(g, lane.proxySelector()));
        } catch (SandboxException e) {
            if (lane.refusedForShare()) {
                throw overRegistryShare(tenant, "connections to registries open", e);
            }
            throw e;
        } finally {
            lane.close();
        }
    }

    private SandboxException overRegistryShare(String tenant, String what, SandboxException cause) {
        return new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' already has "
                + registryConnections + " " + what + " through the daemon's destination gate, the most one tenant"
                + " may (--max-registry-connections-per-tenant, of the gate's " + DestinationGate.MAX_CONNECTIONS
                + "); retry when some of its pulls and pushes have ended", cause);
    }

    /** Sets how many of the destination gate's tunnels one tenant's pulls and pushes may hold at once; returns this. */
    public Tenancy maxRegistryConnectionsPerTenant(int max) {
        if (max < 1 || max > DestinationGate.MAX_CONNECTIONS) {
            throw SandboxException.invalid("maxRegistryConnectionsPerTenant", "must be between 1 and "
                    + DestinationGate.MAX_CONNECTIONS + ", got " + max);
        }
        this.registryConnections = max;
        return this;
    }

    /**
     * What a tenant's pull or push may connect to once it runs: every URL the registry client is about to send a
     * request to (the registry, each redirect's target, each token realm) is held to the same rule as the registry
     * itself, so that a registry the tenant runs cannot send the daemon to this host's own addresses, loopback or
     * the private ranges; and every connection goes through the {@link DestinationGate} ({@code proxy}, the lane of
     * the tenant's operation), which connects only to the address it resolved and checked itself, so a name
     * rebound after the check gets no connection either.
     */
    private static DestinationRule registryDestinations(DestinationGate g, ProxySelector proxy) {
        return new DestinationRule() {
            @Override
            public void accept(URI uri) {
                String host = uri.getHost();
                if (host == null) {
                    return; // the client refuses such a URL itself
                }
                String bare = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
                g.check("ref", "a registry's redirect or token service " + Limits.shorten(host), bare);
            }

            @Override
            public Optional<ProxySelector> proxy() {
                return Optional.of(proxy);
            }
        };
    }

    /**
     * Removing a name: a tenant may remove only names in its own namespace, and names its own pulls wrote (stored
     * under their registry's name, recorded by the engine: {@link io.paddock.Images#nameOwner}), so that it can free
     * its {@code image-bytes}; PERMISSION_DENIED otherwise.
     */
    public void checkImageRemove(Caller caller, String reference) {
        if (caller.isOperator()) {
            return;
        }
        String tenant = caller.tenant().orElseThrow();
        String name;
        try {
            name = io.paddock.image.internal.ImageService.canonicalName(reference);
        } catch (SandboxException e) {
            name = reference; // an id or a short id: not a name in the tenant's namespace
        }
        if (!name.startsWith(imageNamespace(tenant))
                && !paddock.images().nameOwner(reference).map(tenant::equals).orElse(false)) {
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "tenant '" + tenant + "' may remove only its own"
                    + " images, named under '" + imageNamespace(tenant) + "' or pulled by it; '"
                    + Limits.shorten(reference) + "' is not (images are shared by every tenant of this daemon: ask its"
                    + " operator)");
        }
    }

    /** Pruning deletes what no image names, for every tenant at once: the operator's alone. */
    public void checkImagePrune(Caller caller) {
        if (!caller.isOperator()) {
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "pruning images is the operator's: the image"
                    + " store is shared by every tenant of this daemon");
        }
    }

    // ---- volumes ----
    //
    // Volumes are scoped per tenant as sandbox names are: a tenant's 'data' is the engine's '<tenant>-data', in
    // every request (its sandboxes' mounts too) and mapped back in every answer; a tenant lists only its own, and
    // another tenant's answers 404 as an unknown one does. The operator sees and names them as they are, except
    // in a tenant's prefix, which it may not create in.

    /** The engine's name of the caller's volume {@code name}; for a create by the operator, not a tenant's. */
    public String volumeName(Caller caller, String name, boolean creating) {
        if (caller.isOperator()) {
            if (creating) {
                Validate.name("name", name);
                checkOperatorName(name);
            }
            return name;
        }
        return engineName(caller.tenant().orElseThrow(), name, "name");
    }

    /**
     * Runs {@code create}, a volume create of {@code size} by the caller, within the tenant's quota (ATTACKS.md
     * A83d): RESOURCE_EXHAUSTED naming the tenants file's key when the tenant already has its {@code volumes}, or the
     * new reservation would take its volumes' sizes past {@code volume-bytes}. The operator has no quota (the engine
     * still refuses a size past the store's free space).
     */
    public <T> T createVolume(Caller caller, io.paddock.ByteSize size, java.util.function.Supplier<T> create) {
        if (caller.isOperator()) {
            return create.get();
        }
        String tenant = caller.tenant().orElseThrow();
        TenantQuota q = quota(tenant);
        synchronized (storeLocks.get(tenant)) {
            java.util.List<io.paddock.VolumeInfo> own = paddock.volumes().list().stream()
                    .filter(v -> v.name().startsWith(tenant + "-")).toList();
            if (own.size() >= q.volumes()) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' has " + own.size()
                        + " volume" + (own.size() == 1 ? "" : "s") + ", its maximum (volumes=" + q.volumes()
                        + " in the tenants file); remove one first");
            }
            long reserved = own.stream().mapToLong(v -> v.size().bytes()).sum();
            if (size.bytes() > q.volumeBytes().bytes() - reserved) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' reserves "
                        + io.paddock.ByteSize.bytes(reserved) + " in its volumes; " + size + " more would pass its maximum"
                        + " (volume-bytes=" + q.volumeBytes() + " in the tenants file); remove some first");
            }
            return create.get();
        }
    }

    /**
     * Runs {@code create}, a codebase upload by the caller, within the tenant's quota (ATTACKS.md A83d):
     * RESOURCE_EXHAUSTED naming the key when the tenant already has its {@code codebases}, or already holds its
     * {@code codebase-bytes}; a codebase whose size then takes the tenant past {@code codebase-bytes} is removed
     * again ({@code remove}, its engine name) and refused the same way.
     */
    public io.paddock.CodebaseInfo createCodebase(Caller caller, java.util.function.Supplier<io.paddock.CodebaseInfo> create,
                                                 java.util.function.Consumer<String> remove) {
        if (caller.isOperator()) {
            return create.get();
        }
        String tenant = caller.tenant().orElseThrow();
        TenantQuota q = quota(tenant);
        synchronized (storeLocks.get(tenant)) {
            java.util.List<io.paddock.CodebaseInfo> own = ownCodebases(tenant);
            if (own.size() >= q.codebases()) {
                throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' has " + own.size()
                        + " codebase" + (own.size() == 1 ? "" : "s") + ", its maximum (codebases=" + q.codebases()
                        + " in the tenants file); remove one first");
            }
            long held = own.stream().mapToLong(io.paddock.CodebaseInfo::bytes).sum();
            checkCodebaseBytes(tenant, q, held, held >= q.codebaseBytes().bytes());
            io.paddock.CodebaseInfo info = create.get();
            if (held + info.bytes() > q.codebaseBytes().bytes()) {
                remove.accept(info.name());
                checkCodebaseBytes(tenant, q, held, true);
            }
            return info;
        }
    }

    /**
     * A tenant's commit is refused (RESOURCE_EXHAUSTED naming {@code codebase-bytes}) while its codebases hold more
     * than its quota. Checked before the commit, whose own size is not known until it is made: one commit may take
     * the tenant past the quota by at most what its sandbox wrote (the sandbox's disk), and then no create or commit
     * passes until the tenant removes some.
     */
    public void checkCodebaseCommit(Caller caller) {
        if (caller.isOperator()) {
            return;
        }
        String tenant = caller.tenant().orElseThrow();
        TenantQuota q = quota(tenant);
        long held = ownCodebases(tenant).stream().mapToLong(io.paddock.CodebaseInfo::bytes).sum();
        checkCodebaseBytes(tenant, q, held, held > q.codebaseBytes().bytes());
    }

    private java.util.List<io.paddock.CodebaseInfo> ownCodebases(String tenant) {
        return paddock.codebases().list().stream().filter(c -> c.name().startsWith(tenant + "-")).toList();
    }

    private static void checkCodebaseBytes(String tenant, TenantQuota q, long held, boolean over) {
        if (over) {
            throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "tenant '" + tenant + "' holds "
                    + io.paddock.ByteSize.bytes(held) + " in its codebases, and this would pass its maximum (codebase-bytes="
                    + q.codebaseBytes() + " in the tenants file); remove some first");
        }
    }

    /** Whether the caller sees the engine's volume {@code engineName}. */
    public boolean seesVolume(Caller caller, String engineName) {
        return caller.tenant().map(t -> engineName.startsWith(t + "-")).orElse(true);
    }

    /** The volume as the caller sees it: for a tenant, its own name and only its own sandboxes among its users. */
    public io.paddock.VolumeInfo view(Caller caller, io.paddock.VolumeInfo v) {
        if (caller.isOperator()) {
            return v;
        }
        String prefix = caller.tenant().orElseThrow() + "-";
        java.util.List<SandboxId> own = v.sandboxes().stream().filter(id -> {
            try {
                return owns(caller, paddock.get(id).info());
            } catch (SandboxException e) {
                return false;
            }
        }).toList();
        return new io.paddock.VolumeInfo(v.name().startsWith(prefix) ? v.name().substring(prefix.length()) : v.name(),
                v.size(), v.used(), v.created(), own);
    }

    // ---- views ----

    /** The sandbox as the caller sees it: for a tenant, its own name and no {@value #LABEL} label. */
    public SandboxInfo view(Caller caller, SandboxInfo info) {
        if (caller.isOperator()) {
            return info;
        }
        String prefix = caller.tenant().orElseThrow() + "-";
        Optional<String> name = info.name().map(n -> n.startsWith(prefix) ? n.substring(prefix.length()) : n);
        Map<String, String> labels = new HashMap<>(info.labels());
        labels.remove(LABEL);
        labels.remove(DISK_LABEL);
        return new SandboxInfo(info.id(), name, labels, info.state(), info.stopReason(), info.createdAt(),
                info.expiresAt(), info.image(), info.runtime(), info.entrypointExit(), info.network(), info.ports(),
                info.traffic());
    }
}
