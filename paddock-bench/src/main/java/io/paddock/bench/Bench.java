package io.paddock.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.paddock.ByteSize;
import io.paddock.ExecProcess;
import io.paddock.ExecRequest;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxSpec;
import io.paddock.bench.host.Peers;
import io.paddock.init.internal.InitBinary;
import io.paddock.runtime.internal.host.Runc;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Measures Paddock beside its peers in one run and prints a table (milliseconds) and JSON
 * (microseconds). Every latency is "start → first stdout byte of {@code echo hi}".
 *
 * <pre>
 *   java -cp … io.paddock.bench.Bench [--quick] [--json FILE]
 * </pre>
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path json = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--json" -> json = Path.of(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i] + "; usage: [--quick] [--json FILE]");
            }
        }
        int fast = quick ? 300 : 2000;
        int slow = quick ? 40 : 200;
        Map<String, Object> results = new LinkedHashMap<>();
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).timeout(Duration.ofMinutes(30)).build();
        Path stateDir = LocalOptions.DEFAULT_STATE_DIR;

        try (Paddock paddock = Paddock.local();
             Peers peers = new Peers(stateDir, InitBinary.load().extractTo(stateDir.resolve("bin")), Runc.locate())) {
            results.put("environment", environment(peers));
            // warm-up: JIT, page cache, the host image
            for (int i = 0; i < 20; i++) {
                Peers.bareSpawn();
                try (Sandbox sb = paddock.create(spec)) {
                    firstByte(sb);
                }
            }
            Stats bare = measure(fast, Peers::bareSpawn);
            Stats runcOneShot = measure(slow, peers::runcOneShot);
            Stats cold = measure(slow, () -> {
                long t0 = System.nanoTime();
                try (Sandbox sb = paddock.create(spec)) {
                    return firstByte(sb, t0);
                }
            });
            Stats exec;
            Stats execTrue;
            try (Sandbox sb = paddock.create(spec)) {
                for (int i = 0; i < 200; i++) {
                    firstByte(sb);
                }
                exec = measure(fast, () -> firstByte(sb));
                execTrue = measure(fast, () -> {
                    long t0 = System.nanoTime();
                    if (!sb.exec("/bin/true").success()) {
                        throw new IllegalStateException("true failed");
                    }
                    return System.nanoTime() - t0;
                });
            }
            String running = peers.startRunning();
            Stats runcExec = measure(slow, () -> peers.runcExec(running));

            System.out.printf("%-44s %6s %10s %10s %10s %10s%n", "figure (ms, start -> first byte of `echo hi`)", "n", "p50", "p90", "p99", "max");
            System.out.println(bare.row("bare spawn (peer)"));
            System.out.println(runcOneShot.row("runc run one-shot (peer)"));
            System.out.println(runcExec.row("runc exec into running container (peer)"));
            System.out.println(cold.row("P2 Paddock cold create -> first byte"));
            System.out.println(exec.row("P3 Paddock exec on a running sandbox"));
            System.out.println(execTrue.row("Paddock exec(\"/bin/true\") round trip"));
            System.out.printf("%nP2 cold - runc one-shot: p50 %+.2f ms (target <= +10 ms)%n", (cold.p50() - runcOneShot.p50()) / 1000);
            System.out.printf("P3 exec overhead over bare spawn: p50 %.2f ms, p99 %.2f ms (target p50 <= 1 ms, p99 <= 5 ms)%n",
                    (exec.p50() - bare.p50()) / 1000, (exec.p99() - bare.p99()) / 1000);
            System.out.printf("P3 runc exec / Paddock exec: %.1fx (target >= 15x)%n", runcExec.p50() / exec.p50());

            Map<String, Object> figures = new LinkedHashMap<>();
            figures.put("P2", Map.of("paddock", cold.toMap(), "peers", Map.of("runc_one_shot", runcOneShot.toMap()),
                    "paddock_minus_runc_p50_us", Stats.round(cold.p50() - runcOneShot.p50())));
            figures.put("P3", Map.of("paddock", exec.toMap(), "paddock_exec_true_round_trip", execTrue.toMap(),
                    "peers", Map.of("bare_spawn", bare.toMap(), "runc_exec", runcExec.toMap()),
                    "overhead_p50_us", Stats.round(exec.p50() - bare.p50()),
                    "runc_exec_over_paddock_p50", Stats.round(runcExec.p50() / exec.p50())));
            results.put("figures", figures);
        }
        String out = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValueAsString(results);
        if (json != null) {
            Files.writeString(json, out);
            System.out.println("\nJSON written to " + json);
        }
    }

    interface Sample {
        long nanos() throws Exception;
    }

    static Stats measure(int n, Sample s) throws Exception {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            t[i] = s.nanos();
        }
        return Stats.of(t);
    }

    static long firstByte(Sandbox sb) throws Exception {
        return firstByte(sb, System.nanoTime());
    }

    static long firstByte(Sandbox sb, long t0) throws Exception {
        try (ExecProcess p = sb.start(ExecRequest.builder().argv("/bin/echo", "hi").build())) {
            p.closeStdin();
            InputStream in = p.stdout();
            if (in.read() < 0) {
                throw new IllegalStateException("no output");
            }
            long t = System.nanoTime() - t0;
            in.readAllBytes();
            p.awaitExit();
            return t;
        }
    }

    static Map<String, Object> environment(Peers peers) throws Exception {
        Map<String, Object> env = new LinkedHashMap<>();
        env.put("kernel", System.getProperty("os.version"));
        env.put("arch", System.getProperty("os.arch"));
        env.put("cpus", Runtime.getRuntime().availableProcessors());
        env.put("jdk", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
        env.put("gc", ManagementFactory.getGarbageCollectorMXBeans().stream().map(g -> g.getName()).toList());
        env.put("runc", peers.runcVersion());
        return env;
    }
}
