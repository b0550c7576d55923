package io.paddock.cli;

import io.paddock.ImageInfo;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** {@code paddock snapshot}: turn a running sandbox's filesystem into an image. */
@Command(name = "snapshot", description = {"Turn a running sandbox's filesystem into an image that paddock create --image NAME starts sandboxes "
        + "from: what it wrote (deletions included) becomes a layer on its image's layers, with its image's "
        + "configuration.",
        "A host sandbox's image is based on the host image (its /tmp and /workspace, which are memory, are "
        + "left out). The sandbox is frozen during the copy, then goes on. Prints the image id."})
final class SnapshotCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SANDBOX", description = "Sandbox id or name.")
    String sandbox;

    @Option(names = {"-t", "--tag"}, required = true, paramLabel = "NAME[:TAG]",
            description = "The new image's name (:latest when no tag is given).")
    String tag;

    @Option(names = "--json", description = "Print the image as JSON (as paddock image inspect does).")
    boolean json;

    @Override
    public Integer call() throws Exception {
        try (Paddock paddock = connection.connect()) {
            Sandbox sb = Connection.find(paddock, sandbox);
            ImageInfo info = sb.snapshot(tag);
            if (json) {
                ImageCommand.printJson(ImageCommand.json(info));
            } else {
                System.out.println(info.id());
            }
            return 0;
        }
    }
}
