package io.paddock.mcp.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class McpServersHttpTest {
    /** An application that embeds the daemon must be able to end: nothing of the endpoint outlives its close. */
    @Test
    void closingTheHttpEndpointEndsItsSessionSweeperThread() throws InterruptedException {
        McpServers.Http http = McpServers.http("test", request -> {
            throw new SandboxException(ErrorCode.PERMISSION_DENIED, "no caller in this test");
        }, 1 << 20);
        assertThat(sweeperThreads()).as("the transport's sweeper runs while the endpoint is open").isNotEmpty();
        assertThat(http.sweepers()).as("its scheduler is the one the endpoint holds").hasSize(1);
        http.close();
        for (long until = System.nanoTime() + 10_000_000_000L; !sweeperThreads().isEmpty() && System.nanoTime() < until; ) {
            Thread.sleep(20);
        }
        assertThat(sweeperThreads()).as("sweeper threads alive after close").isEmpty();
    }

    private static List<Thread> sweeperThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith(McpServers.SWEEPER)).toList();
    }
}
