package io.paddock.server.internal;

import io.paddock.ErrorCode;
import io.paddock.ExitStatus;
import io.paddock.NetworkTraffic;
import io.paddock.Paddock;
import io.paddock.SandboxInfo;
import io.paddock.SandboxState;
import io.paddock.StopReason;
import io.paddock.engine.internal.EngineEvents;
import io.paddock.engine.internal.LocalPaddock;
import io.paddock.engine.internal.PoolStats;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The daemon's Prometheus metrics ({@code GET /metrics}; README, "Operating a daemon"), on the official
 * Prometheus Java client. The engine's events ({@link EngineEvents}) feed the counters and histograms; the
 * sandboxes by state and tier, the warm pools and the network totals are read from the engine at each scrape.
 *
 * <p>Label values come only from small closed sets: tier, state, origin, stop reason, exec outcome, error code,
 * cache hit or miss, stream and direction. Never a sandbox id, name or label, a tenant's name, an image
 * reference or a path: the operator's view across tenants, with series that stay few however many sandboxes
 * come and go. The tier is the engine's tier name (tiers are the host's, not a tenant's).
 *
 * <p>Thread-safe: the Prometheus client's metrics are; a scrape runs alone ({@link #scrape}).
 */
public final class Metrics implements EngineEvents {
    /** Histogram buckets for creates: a pool hit takes milliseconds, a cold create tens of them, an image build minutes. */
    private static final double[] CREATE_BUCKETS = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
    /** Histogram buckets for commands: a trivial exec takes about a millisecond, the longest run for hours. */
    private static final double[] EXEC_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
            10, 30, 60, 300, 1800};
    private static final String OK = "OK";

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
    private final Paddock paddock;

    private final Histogram createSeconds;
    private final Counter createFailures;
    private final Counter stops;
    private final Histogram execSeconds;
    private final Counter execFailures;
    private final Counter imagePulls;
    private final Counter imageLayers;
    private final Counter imagePulledBytes;
    private final Counter buildSteps;
    private final Counter apiErrors;
    private final Counter auditFailures;
    private final Counter streamed;

    /** Bytes of stopped sandboxes' networks (tx, rx), added as each stops. */
    private final java.util.concurrent.atomic.AtomicLongArray stoppedTraffic = new java.util.concurrent.atomic.AtomicLongArray(2);
    /** The network totals last exposed, so that they never go down (a sandbox stopping between reads). */
    // @GuardedBy("this")
    private final long[] exposedTraffic = new long[2];
    /** Tiers seen: each gets a series for every state, zeros included, so a state's series never vanishes. */
    private final Set<String> tiers = ConcurrentHashMap.newKeySet();
    /** What the scrape in progress read from the engine. */
    // @GuardedBy("this")
    private Snapshot snapshot = Snapshot.EMPTY;

    private record Snapshot(Map<String, EnumMap<SandboxState, Integer>> byTier, long[] liveTraffic, List<PoolStats> pools) {
        static final Snapshot EMPTY = new Snapshot(Map.of(), new long[2], List.of());
    }

    /**
     * @param paddock what the daemon serves; when it is the embedded engine ({@link LocalPaddock}) its events
     *                and pool counters are read too
     * @param version this build's version, for {@code paddock_build_info}
     */
    public Metrics(Paddock paddock, String version) {
        this.paddock = paddock;
        Gauge.builder().name("paddock_build_info").help("This daemon's build: always 1, with its version as a label")
                .labelNames("version").register(registry).labelValues(version).set(1);
        GaugeWithCallback.builder().name("paddock_sandboxes")
                .help("Sandboxes the engine knows, by state and tier (stopped ones stay known for 10 minutes)")
                .labelNames("state", "tier")
                .callback(cb -> snapshot.byTier().forEach((tier, states) -> states.forEach((state, n) ->
                        cb.call(n, state.name().toLowerCase(Locale.ROOT), tier))))
                .register(registry);
        createSeconds = Histogram.builder().name("paddock_sandbox_create_seconds")
                .help("Time to create a sandbox, by tier and origin (cold, pool: a warm pool hit, fork)")
                .labelNames("tier", "origin").classicUpperBounds(CREATE_BUCKETS).classicOnly().withoutExemplars()
                .register(registry);
        createFailures = Counter.builder().name("paddock_sandbox_create_failures_total")
                .help("Sandbox creates that failed, by tier and error code").labelNames("tier", "code").withoutExemplars()
                .register(registry);
        stops = Counter.builder().name("paddock_sandbox_stops_total")
                .help("Sandboxes that stopped, by tier and reason (destroyed, timeout, entrypoint_exited, oom, failed)")
                .labelNames("tier", "reason").withoutExemplars().register(registry);
        execSeconds = Histogram.builder().name("paddock_exec_seconds")
                .help("Commands run in sandboxes, from the request to the exit status, by tier and outcome"
                        + " (exited, signaled, timed_out, oom_killed)")
                .labelNames("tier", "outcome").classicUpperBounds(EXEC_BUCKETS).classicOnly().withoutExemplars()
                .register(registry);
        execFailures = Counter.builder().name("paddock_exec_failures_total")
                .help("Commands that could not run or whose exit status never came, by tier and error code")
                .labelNames("tier", "code").withoutExemplars().register(registry);
        CounterWithCallback.builder().name("paddock_pool_hits_total").help("Creates served from a warm pool")
                .callback(cb -> cb.call(snapshot.pools().stream().mapToLong(PoolStats::hits).sum())).register(registry);
        CounterWithCallback.builder().name("paddock_pool_misses_total")
                .help("Creates of a pooled shape that found its pool empty and were created cold")
                .callback(cb -> cb.call(snapshot.pools().stream().mapToLong(PoolStats::misses).sum())).register(registry);
        CounterWithCallback.builder().name("paddock_pool_refill_failures_total")
                .help("Sandboxes a warm pool failed to create")
                .callback(cb -> cb.call(snapshot.pools().stream().mapToLong(PoolStats::failures).sum())).register(registry);
        GaugeWithCallback.builder().name("paddock_pool_idle_sandboxes").help("Sandboxes idle in warm pools, ready now")
                .callback(cb -> cb.call(snapshot.pools().stream().mapToLong(PoolStats::idle).sum())).register(registry);
        imagePulls = Counter.builder().name("paddock_image_pulls_total")
                .help("Image pulls from registries, by result (OK or an error code)").labelNames("code")
                .withoutExemplars().register(registry);
        imageLayers = Counter.builder().name("paddock_image_layers_pulled_total")
                .help("Layers of pulled images, by cache: hit (already stored, nothing downloaded) or miss")
                .labelNames("cache").withoutExemplars().register(registry);
        imagePulledBytes = Counter.builder().name("paddock_image_pulled_bytes_total")
                .help("Bytes of layers downloaded by image pulls").withoutExemplars().register(registry);
        buildSteps = Counter.builder().name("paddock_image_build_steps_total")
                .help("Image build steps, by cache: hit (the step's layer was reused) or miss (it ran)")
                .labelNames("cache").withoutExemplars().register(registry);
        streamed = Counter.builder().name("paddock_streamed_bytes_total")
                .help("Bytes the daemon streamed between clients and sandboxes, by stream (exec: exec streams' stdin,"
                        + " stdout and stderr; file: uploads and downloads) and direction (in: into a sandbox)")
                .labelNames("stream", "direction").withoutExemplars().register(registry);
        CounterWithCallback.builder().name("paddock_sandbox_network_bytes_total")
                .help("Bytes sandboxes sent (tx) and received (rx) on their network interfaces")
                .labelNames("direction")
                .callback(cb -> {
                    cb.call(exposedTraffic[0], "tx");
                    cb.call(exposedTraffic[1], "rx");
                }).register(registry);
        apiErrors = Counter.builder().name("paddock_api_errors_total")
                .help("Requests the daemon's API answered with an error, by error code").labelNames("code")
                .withoutExemplars().register(registry);
        auditFailures = Counter.builder().name("paddock_audit_write_failures_total")
                .help("Audit log entries that could not be written (see the daemon's log)").withoutExemplars()
                .register(registry);
        for (ErrorCode c : ErrorCode.values()) { // every code is a series from the start, so rate() sees the first error
            apiErrors.labelValues(c.name());
        }
        imagePulls.labelValues(OK);
        for (String cache : List.of("hit", "miss")) {
            imageLayers.labelValues(cache);
            buildSteps.labelValues(cache);
        }
        for (String stream : List.of("exec", "file")) {
            for (String direction : List.of("in", "out")) {
                streamed.labelValues(stream, direction);
            }
        }
        if (paddock instanceof LocalPaddock local) {
            local.listen(this);
        }
    }

    /** Stops listening to the engine (the server is closing; the engine may outlive it). */
    public void close() {
        if (paddock instanceof LocalPaddock local) {
            local.stopListening(this);
        }
    }

    /** The metrics as Prometheus's text format (version 0.0.4), read from the engine now. */
    public synchronized byte[] scrape() {
        snapshot = read();
        long[] traffic = snapshot.liveTraffic();
        for (int i = 0; i < 2; i++) {
            exposedTraffic[i] = Math.max(exposedTraffic[i], traffic[i] + stoppedTraffic.get(i));
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(16 * 1024);
        try {
            writer.write(out, registry.scrape());
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        } finally {
            snapshot = Snapshot.EMPTY;
        }
        return out.toByteArray();
    }

    /** The content type of {@link #scrape}'s bytes. */
    public String contentType() {
        return writer.getContentType();
    }

    private Snapshot read() {
        Map<String, EnumMap<SandboxState, Integer>> byTier = new TreeMap<>();
        long[] live = new long[2];
        for (SandboxInfo i : paddock.list()) {
            tiers.add(i.runtime());
            byTier.computeIfAbsent(i.runtime(), t -> zeros()).merge(i.state(), 1, Integer::sum);
            if (i.state().isLive()) {
                i.traffic().ifPresent(t -> {
                    live[0] += t.txBytes();
                    live[1] += t.rxBytes();
                });
            }
        }
        for (String t : new TreeSet<>(tiers)) {
            byTier.computeIfAbsent(t, x -> zeros());
        }
        List<PoolStats> pools = paddock instanceof LocalPaddock local ? local.poolStats() : List.of();
        return new Snapshot(byTier, live, pools);
    }

    private static EnumMap<SandboxState, Integer> zeros() {
        EnumMap<SandboxState, Integer> m = new EnumMap<>(SandboxState.class);
        for (SandboxState s : SandboxState.values()) {
            m.put(s, 0);
        }
        return m;
    }

    // ---- what the daemon itself counts ----

    /** One of the API's answers was an error with this code. */
    public void apiError(ErrorCode code) {
        apiErrors.labelValues(code.name()).inc();
    }

    /** An audit entry could not be written. */
    public void auditWriteFailed() {
        auditFailures.inc();
    }

    /** The byte counters of one kind of stream ({@code exec} or {@code file}). */
    public Bytes bytes(String stream) {
        return new Bytes(streamed.labelValues(stream, "in"), streamed.labelValues(stream, "out"));
    }

    /** Bytes into a sandbox ({@link #in}) and out of one ({@link #out}), for one kind of stream. Thread-safe. */
    public static final class Bytes {
        /** Counts nothing: for tests and for servers without metrics. */
        public static final Bytes NONE = new Bytes(null, null);

        private final CounterDataPoint in;
        private final CounterDataPoint out;

        private Bytes(CounterDataPoint in, CounterDataPoint out) {
            this.in = in;
            this.out = out;
        }

        public void in(long n) {
            if (in != null && n > 0) {
                in.inc(n);
            }
        }

        public void out(long n) {
            if (out != null && n > 0) {
                out.inc(n);
            }
        }
    }

    // ---- the engine's events ----

    private static double seconds(Duration d) {
        return d.toNanos() / 1e9;
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void sandboxCreated(String tier, Origin origin, Duration took) {
        tiers.add(tier);
        createSeconds.labelValues(tier, lower(origin)).observe(seconds(took));
    }

    @Override
    public void sandboxCreateFailed(String tier, ErrorCode code, Duration took) {
        createFailures.labelValues(tier, code.name()).inc();
    }

    @Override
    public void sandboxStopped(String tier, StopReason reason, Optional<NetworkTraffic> traffic) {
        stops.labelValues(tier, lower(reason)).inc();
        traffic.ifPresent(t -> {
            stoppedTraffic.addAndGet(0, t.txBytes());
            stoppedTraffic.addAndGet(1, t.rxBytes());
        });
    }

    @Override
    public void execFinished(String tier, ExitStatus status, Duration took) {
        execSeconds.labelValues(tier, lower(status.outcome())).observe(seconds(took));
    }

    @Override
    public void execFailed(String tier, ErrorCode code, Duration took) {
        execFailures.labelValues(tier, code.name()).inc();
    }

    @Override
    public void imagePulled(Optional<ErrorCode> failure, Duration took) {
        imagePulls.labelValues(failure.map(Enum::name).orElse(OK)).inc();
    }

    @Override
    public void imageLayerPulled(boolean cached, long bytes) {
        imageLayers.labelValues(cached ? "hit" : "miss").inc();
        if (bytes > 0) {
            imagePulledBytes.inc(bytes);
        }
    }

    @Override
    public void buildStep(boolean cached) {
        buildSteps.labelValues(cached ? "hit" : "miss").inc();
    }
}
