package io.paddock.runtime.internal.oci;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.paddock.ByteSize;
import io.paddock.SandboxSpec;
import io.paddock.runtime.internal.oci.OciSpec.Mount;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class OciSpecBuilderTest {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final BundlePlan.HostFacts FACTS = new BundlePlan.HostFacts("amd64", true, 20000);

    /**
     * A host-image sandbox as the tiers plan it: the root is the overlay of the host root directory and the
     * sandbox's disk-capped writable layer, mounted at {@code <state>/roots/<id>}; {@code /usr} read-only.
     */
    static BundlePlan plan(SandboxSpec spec) {
        List<Mount> usr = List.of(new Mount("/usr", "bind", "/usr", List.of("rbind", "ro", "nosuid", "nodev")));
        return new BundlePlan(spec, "/run/paddock/images/host-0123456789abcdef", usr,
                0x4000_0000L + 3 * 65536, "/paddock/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa", FACTS)
                .withImageRoot("/run/paddock/roots/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa", usr, BundlePlan.hostUserOnWritableRoot(spec));
    }

    /** The runc tier's plan: it joins the user namespace prepared as the sandbox's own host uid. */
    static BundlePlan runcPlan(SandboxSpec spec) {
        return plan(spec).joiningUserns(USERNS);
    }

    private static final String USERNS = "/run/paddock/sandboxes/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa/userns";

    /**
     * The whole config.json of a runc sandbox for a typical spec is pinned: any change to what sandboxes run
     * with shows up as a diff of this file in review. To accept a deliberate change, run with
     * -Dpaddock.golden.update=true.
     */
    @Test
    void configJsonMatchesGolden() throws Exception {
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).cpus(1.5).pids(128).disk(ByteSize.gib(1))
                .openFiles(2048).timeout(Duration.ofMinutes(5)).env("MODE", "test").secret("TOKEN", "s3cr3t")
                .label("team", "ml").build();
        String actual = JSON.writeValueAsString(OciSpecBuilder.build(runcPlan(spec))) + "\n";
        Path golden = Path.of("src/test/resources/golden/config-typical.json");
        if (Boolean.getBoolean("paddock.golden.update")) {
            Files.writeString(golden, actual, StandardCharsets.UTF_8);
        }
        assertThat(actual).isEqualTo(Files.readString(golden, StandardCharsets.UTF_8));
    }

    /**
     * The runsc tier's config.json for the same spec: it differs only in the cgroup's pids.max (room for
     * the Sentry's own tasks) and in the filter's gVisor dialect (no ENOSYS-only rules). Pinned like the runc one.
     */
    @Test
    void runscConfigJsonMatchesGolden() throws Exception {
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(256)).cpus(1.5).pids(128).disk(ByteSize.gib(1))
                .openFiles(2048).timeout(Duration.ofMinutes(5)).env("MODE", "test").secret("TOKEN", "s3cr3t")
                .label("team", "ml").runtime("runsc").build();
        BundlePlan runc = plan(spec);
        BundlePlan runsc = new BundlePlan(spec, runc.rootfs(), runc.imageMounts(), runc.uidBase(), runc.cgroupsPath(),
                FACTS, 8L * 128 + 512, SeccompProfile.Dialect.GVISOR).withImageRoot(runc.rootfs(), runc.imageMounts(), runc.user());
        String actual = JSON.writeValueAsString(OciSpecBuilder.build(runsc)) + "\n";
        Path golden = Path.of("src/test/resources/golden/config-runsc.json");
        if (Boolean.getBoolean("paddock.golden.update")) {
            Files.writeString(golden, actual, StandardCharsets.UTF_8);
        }
        assertThat(actual).isEqualTo(Files.readString(golden, StandardCharsets.UTF_8));
        OciSpec oci = OciSpecBuilder.build(runsc);
        assertThat(oci.linux().resources().pids().limit()).isEqualTo(8L * 128 + 512);
        assertThat(oci.linux().seccomp().syscalls()).filteredOn(r -> r.names().contains("clone3"))
                .singleElement().satisfies(r -> assertThat(r.action()).isEqualTo("SCMP_ACT_ALLOW"));
        assertThat(OciSpecBuilder.build(runc).linux().seccomp().syscalls()).anyMatch(r -> r.names().contains("clone3"));
    }

    /**
     * A sandbox with a network: runc, joining a prepared user namespace, names no network namespace (its
     * launcher runs it in the sandbox's) and binds the sysfs the launcher mounted; runsc names the namespace
     * and mounts its own sysfs. Both bind the sandbox's resolv.conf read-only.
     */
    @Test
    void aNetworkedSandboxRunsInThePreparedNamespace() {
        SandboxSpec spec = SandboxSpec.builder().network(io.paddock.NetworkPolicy.allow("198.18.0.0/24")).build();
        BundlePlan.Netns ns = new BundlePlan.Netns("/run/netns/paddock-sb-aaaaaaaaaaaaaaaaaaaaaaaaaa",
                "/run/paddock/resolv/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa", "/run/paddock/sandboxes/sb-aaaaaaaaaaaaaaaaaaaaaaaaaa/sysfs");
        OciSpec runc = OciSpecBuilder.build(runcPlan(spec).inNetns(ns));
        assertThat(runc.linux().namespaces()).noneMatch(n -> n.type().equals("network"));
        assertThat(runc.mounts()).anySatisfy(m -> {
            assertThat(m.destination()).isEqualTo("/sys");
            assertThat(m.source()).isEqualTo(ns.sysfsDir());
            assertThat(m.options()).contains("ro", "nosuid", "noexec", "nodev");
        });
        OciSpec runsc = OciSpecBuilder.build(plan(spec).inNetns(ns));
        assertThat(runsc.linux().namespaces()).filteredOn(n -> n.type().equals("network")).singleElement()
                .satisfies(n -> assertThat(n.path()).isEqualTo(ns.path()));
        assertThat(runsc.mounts()).anySatisfy(m -> assertThat(m).extracting("destination", "type")
                .containsExactly("/sys", "sysfs"));
        for (OciSpec oci : List.of(runc, runsc)) {
            assertThat(oci.mounts()).anySatisfy(m -> {
                assertThat(m.destination()).isEqualTo("/etc/resolv.conf");
                assertThat(m.source()).isEqualTo(ns.resolvConfFile());
                assertThat(m.options()).contains("ro");
            });
        }
        assertThat(OciSpecBuilder.build(runcPlan(spec)).linux().namespaces()).as("no network: a new, empty namespace")
                .anySatisfy(n -> assertThat(n).extracting("type", "path").containsExactly("network", null));
    }

    /**
     * Joining a prepared user namespace: runc is given its path and (as runc 1.1 requires of a user namespace)
     * the same id maps, which it then does not write; the init's rlimits leave the spec, since runc's prlimit
     * on a task in a namespace root does not own needs CAP_SYS_RESOURCE, and are set by the launcher instead.
     */
    @Test
    void joiningAPreparedUserNamespaceNamesItsPathAndMovesTheRlimitsOut() {
        SandboxSpec spec = SandboxSpec.builder().build();
        OciSpec created = OciSpecBuilder.build(plan(spec));
        OciSpec joined = OciSpecBuilder.build(runcPlan(spec));
        assertThat(created.linux().namespaces()).filteredOn(n -> n.type().equals("user")).singleElement()
                .satisfies(n -> assertThat(n.path()).isNull());
        assertThat(joined.linux().namespaces()).filteredOn(n -> n.type().equals("user")).singleElement()
                .satisfies(n -> assertThat(n.path()).isEqualTo(USERNS));
        assertThat(joined.linux().uidMappings()).isEqualTo(created.linux().uidMappings());
        assertThat(joined.linux().gidMappings()).isEqualTo(created.linux().gidMappings());
        assertThat(joined.process().rlimits()).isEmpty();
        assertThat(OciSpecBuilder.initRlimits(runcPlan(spec))).isEqualTo(created.process().rlimits())
                .extracting(OciSpec.Rlimit::type).containsExactly("RLIMIT_NOFILE", "RLIMIT_CORE");
    }

    @Test
    void mknodMakesNoDeviceNodes() {
        for (SeccompProfile.Dialect d : SeccompProfile.Dialect.values()) {
            OciSpec.Seccomp sc = SeccompProfile.forArch("amd64", d);
            assertThat(sc.syscalls()).filteredOn(r -> r.names().contains("mknod") || r.names().contains("mknodat"))
                    .isNotEmpty()
                    .allSatisfy(r -> {
                        assertThat(r.args()).singleElement().satisfies(a -> {
                            assertThat(a.op()).isEqualTo("SCMP_CMP_MASKED_EQ");
                            assertThat(a.value()).isEqualTo(0170000L);
                            assertThat(a.valueTwo()).isNotIn(0020000L, 0060000L); // S_IFCHR, S_IFBLK
                        });
                    });
        }
    }

    @Test
    void tenantEnvironmentAndSecretsNeverEnterTheBundle() throws Exception {
        SandboxSpec spec = SandboxSpec.builder().env("VISIBLE", "v").secret("API_KEY", "do-not-leak").build();
        String json = JSON.writeValueAsString(OciSpecBuilder.build(plan(spec)));
        assertThat(json).doesNotContain("do-not-leak").doesNotContain("API_KEY").doesNotContain("VISIBLE");
    }

    @Test
    void limitsFollowTheSpec() {
        SandboxSpec spec = SandboxSpec.builder().memory(ByteSize.mib(64)).cpus(0.5).pids(32).disk(ByteSize.mib(10)).build();
        OciSpec oci = OciSpecBuilder.build(plan(spec));
        assertThat(oci.linux().resources().memory().limit()).isEqualTo(64L << 20);
        assertThat(oci.linux().resources().memory().swap()).isEqualTo(64L << 20);
        assertThat(oci.linux().resources().cpu().quota()).isEqualTo(50_000L);
        assertThat(oci.linux().resources().pids().limit()).isEqualTo(32);
        assertThat(oci.mounts()).filteredOn(m -> m.destination().equals("/workspace")).singleElement()
                .satisfies(m -> assertThat(m.options()).contains("size=" + (10L << 20)));
        // The host image's root is writable into the sandbox's disk layer; /usr (above) is bound read-only.
        assertThat(oci.root().readonly()).isFalse();
        assertThat(oci.mounts()).filteredOn(m -> m.destination().equals("/usr")).singleElement()
                .satisfies(m -> assertThat(m.options()).contains("ro"));
        assertThat(oci.mounts()).filteredOn(m -> m.destination().equals("/tmp")).singleElement()
                .satisfies(m -> assertThat(m.type()).isEqualTo("tmpfs"));
        // The root directory used as is (the benchmark's plain runc peer) is read-only.
        assertThat(OciSpecBuilder.build(new BundlePlan(spec, "/r", List.of(), 0x4000_0000L, "/paddock/x", FACTS))
                .root().readonly()).isTrue();
        assertThat(oci.process().noNewPrivileges()).isTrue();
        assertThat(oci.linux().namespaces()).extracting(OciSpec.Namespace::type)
                .containsExactlyInAnyOrder("pid", "network", "ipc", "uts", "mount", "user", "cgroup");
    }

    @Test
    void initNeverGetsMoreOpenFilesThanTheHostAllows() {
        BundlePlan p = new BundlePlan(SandboxSpec.builder().build(), "/r", List.of(), 0, "/paddock/x",
                new BundlePlan.HostFacts("amd64", false, 4096));
        OciSpec oci = OciSpecBuilder.build(p);
        assertThat(oci.process().rlimits()).filteredOn(r -> r.type().equals("RLIMIT_NOFILE"))
                .allSatisfy(r -> assertThat(r.hard()).isLessThanOrEqualTo(4096));
        assertThat(OciSpecBuilder.initRlimits(p.joiningUserns("/u"))).filteredOn(r -> r.type().equals("RLIMIT_NOFILE"))
                .singleElement().satisfies(r -> assertThat(r.hard()).isEqualTo(4096));
        assertThat(oci.linux().resources().memory().swap()).isNull();
    }
}
