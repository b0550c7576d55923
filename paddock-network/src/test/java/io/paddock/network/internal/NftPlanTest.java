package io.paddock.network.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.paddock.NetworkPolicy;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rules as data: each document is compared with its golden file (regenerate with
 * -Dpaddock.golden.update=true and read the diff), and real nft checks that it would apply ({@code nft -c}).
 */
class NftPlanTest {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private final NftPlan plan = new NftPlan(new DenyList(List.of(Cidr.parse("192.168.50.0/24")),
            Cidr.parse("10.213.0.0/16")));

    private NftPlan.Sandbox sandbox(NetworkPolicy policy) {
        return new NftPlan.Sandbox(7, Cidr.address("10.213.0.30"), Cidr.address("10.213.0.29"), 5353, 5354, policy);
    }

    @Test
    void baseChainsOnlyDispatchAndDropUnknownSandboxInterfaces() throws Exception {
        golden("base", plan.base());
    }

    @Test
    void anAllowlistSandbox() throws Exception {
        golden("attach-allow", plan.attach(sandbox(NetworkPolicy.allow("198.18.7.2", "198.18.8.0/24", "api.example.com"))));
    }

    @Test
    void openAndNonePolicies() throws Exception {
        golden("update-open", plan.update(sandbox(NetworkPolicy.open())));
        golden("update-none", plan.update(sandbox(NetworkPolicy.none())));
    }

    @Test
    void grantsRetargetAndDetach() throws Exception {
        golden("grant", plan.grant(7, List.of(Cidr.address("198.18.7.3"), Cidr.address("198.18.7.4")), Duration.ofSeconds(42)));
        golden("retarget", plan.retarget(sandbox(NetworkPolicy.none())));
        golden("grant-secret-host", plan.grantSecretHost(7, List.of(Cidr.address("198.18.7.5")), Duration.ofSeconds(60)));
        golden("detach", plan.detach(7, Set.of("sbf7", "sba7", "sbi7", "sbn7", "sb7c", "sb7d", "sb7s"),
                Set.of("fwd:pdk7", "inp:pdk7", "nat:pdk7")));
        assertThat(plan.detach(7, Set.of(), Set.of())).as("nothing left to remove").isEmpty();
    }

    @Test
    void realNftAcceptsEveryDocumentInOrder() throws Exception {
        // nft -c checks a document against the kernel without applying it; the later ones need the earlier.
        String all = merge(plan.base(), plan.attach(sandbox(NetworkPolicy.allow("198.18.7.2", "api.example.com"))),
                plan.update(sandbox(NetworkPolicy.open())), plan.grant(7, List.of(Cidr.address("198.18.7.3")),
                        Duration.ofSeconds(30)), plan.retarget(sandbox(NetworkPolicy.open())));
        Path f = Files.createTempFile("nft-plan", ".json");
        try {
            Files.writeString(f, all);
            Process p = new ProcessBuilder("nft", "-c", "-j", "-f", f.toString()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor()).as(out).isZero();
        } finally {
            Files.delete(f);
        }
    }

    private static String merge(String... docs) throws IOException {
        var merged = JSON.createArrayNode();
        for (String d : docs) {
            JSON.readTree(d).path("nftables").forEach(merged::add);
        }
        return JSON.writeValueAsString(JSON.createObjectNode().set("nftables", merged));
    }

    private static void golden(String name, String json) throws IOException {
        String actual = JSON.writeValueAsString(JSON.readTree(json)) + "\n";
        Path golden = Path.of("src/test/resources/golden/nft-" + name + ".json");
        if (Boolean.getBoolean("paddock.golden.update")) {
            Files.writeString(golden, actual, StandardCharsets.UTF_8);
        }
        assertThat(actual).isEqualTo(Files.readString(golden, StandardCharsets.UTF_8));
    }
}
