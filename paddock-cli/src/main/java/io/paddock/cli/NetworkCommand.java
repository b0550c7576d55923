package io.paddock.cli;

import io.paddock.NetworkPolicy;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code paddock network}: show or change a running sandbox's network policy. */
@Command(name = "network", description = {"Show or change a running sandbox's network policy.",
        "New connections follow a change at once; established ones go on. Without options it prints the "
        + "policy."})
final class NetworkCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Option(names = "--network", paramLabel = "MODE", description = "none, allow or open (see paddock create --help).")
    String network;

    @Option(names = "--allow-net", paramLabel = "CIDR|DOMAIN",
            description = "An allowlist entry (repeatable). The list replaces the current one unless --add is given.")
    List<String> allowNet = new ArrayList<>();

    @Option(names = "--add", description = "Add the --allow-net entries to the current allowlist instead of replacing it.")
    boolean add;

    @Override
    public Integer call() {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            NetworkPolicy current = sb.info().network();
            NetworkPolicy next = SpecOptions.networkPolicy(network, allowNet);
            if (next == null) {
                if (add) {
                    throw io.paddock.SandboxException.invalid("add", "--add needs --allow-net entries to add");
                }
                System.out.println(current);
                return 0;
            }
            if (add) {
                next = current.plus(next.entries());
            }
            sb.updateNetwork(next);
            System.out.println(next);
            return 0;
        }
    }
}
