package io.paddock.cli;

import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.io.PrintStream;
import java.net.URI;
import java.util.concurrent.Callable;

/** {@code paddock port}: a URL for a port a sandbox exposed. */
@Command(name = "port",
        description = {"Print a URL for a port the sandbox exposed when it was created (its spec's ports).",
                "From a daemon: a signed URL that needs no token or header (a browser can open it), valid until the "
                + "sandbox's deadline (at most 7 days) and only while the sandbox runs. Anyone holding it can use the "
                + "port."},
        footer = {"", "Example:", "  open \"$(paddock port web 8080)\""})
final class PortCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Parameters(index = "1", paramLabel = "PORT", description = "A port the sandbox exposed.")
    int port;

    @Override
    public Integer call() {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            print(sb.url(port), System.out, System.err);
        }
        return 0;
    }

    /**
     * Prints the URL on stdout, alone, for scripts. A URL that is not a daemon's signed link is the sandbox's
     * own address (what an embedded engine gives): stderr says it works from this host only.
     */
    static void print(URI url, PrintStream out, PrintStream err) {
        out.println(url);
        String path = url.getRawPath();
        if (path == null || !path.contains("/v1/p/")) {
            err.println("paddock: " + url + " is the sandbox's own address, reachable from this host only");
        }
    }
}
