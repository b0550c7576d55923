package io.paddock.bench.host;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** P16's interpreter check: Debian's python3 and the Debian packages of the modules it lacks. */
class HostPythonModulesTest {
    @Test
    void modulesThePythonHasNeedNothing() {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        assertThat(Host.ensurePythonModules("/usr/bin/python3", Map.of("json", "python3-never-installed"),
                new PrintStream(log, true, StandardCharsets.UTF_8))).isEmpty();
        assertThat(log.toString(StandardCharsets.UTF_8)).isEmpty();
    }

    @Test
    void aModuleNoPackageProvidesIsReportedWithTheCommandToRun() {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        // no Debian package of this name: as root apt-get is asked and fails; either way the reason names it
        assertThat(Host.ensurePythonModules("/usr/bin/python3", Map.of("paddock_no_such_module", "python3-paddock-no-such"),
                new PrintStream(log, true, StandardCharsets.UTF_8)))
                .hasValueSatisfying(why -> assertThat(why).contains("/usr/bin/python3 cannot import paddock_no_such_module")
                        .contains("apt-get install -y python3-paddock-no-such"));
    }
}
