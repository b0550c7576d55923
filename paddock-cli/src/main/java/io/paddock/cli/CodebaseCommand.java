package io.paddock.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ByteSize;
import io.paddock.CodebaseChange;
import io.paddock.CodebaseInfo;
import io.paddock.CodebaseOptions;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.internal.Printable;
import io.paddock.wire.Wire;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code paddock codebase}: upload, list and remove codebases; review and commit a sandbox's changes. */
@Command(name = "codebase", sortOptions = false,
        description = {"Manage codebases: directories given to sandboxes under permission rules (paddock create --codebase "
                + "NAME[:/path] --preset P --permission 'PATTERN:LEVEL').",
                "A sandbox's changes stay its own until `codebase commit`. See docs/WORKSPACES.md."},
        subcommands = {CodebaseCommand.Create.class, CodebaseCommand.Ls.class, CodebaseCommand.Rm.class,
                CodebaseCommand.Diff.class, CodebaseCommand.Commit.class})
final class CodebaseCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    @Command(name = "create", sortOptions = false, description = {"Upload a directory as a codebase.",
            "Left out, and listed on stderr: what .gitignore, .sandboxignore and --ignore ignore, files over "
            + "--max-file-size, special files, and links that lead out of the directory."})
    static final class Create implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(paramLabel = "NAME", description = "The codebase's name (lower-case letters, digits and '-').")
        String name;
        @Option(names = "--from", required = true, paramLabel = "DIR", description = "The directory to upload.")
        Path from;
        @Option(names = "--ignore", paramLabel = "PATTERN", description = "A gitignore-style pattern to leave out (repeatable).")
        List<String> ignore = new ArrayList<>();
        @Option(names = "--max-file-size", paramLabel = "SIZE", description = "Leave out files larger than this (default: 50m).")
        String maxFileSize;
        @Option(names = "--json", description = "Print the codebase as JSON.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            ByteSize max = maxFileSize == null ? CodebaseOptions.DEFAULT.maxFileSize() : SpecOptions.size("max-file-size", maxFileSize);
            CodebaseInfo info;
            try (Paddock p = connection.connect()) {
                info = p.codebases().create(name, from, new CodebaseOptions(ignore, max));
            }
            for (CodebaseInfo.Skipped s : info.skipped()) {
                System.err.println("left out " + Printable.name(s.path()) + " (" + Printable.line(s.reason()) + ")");
            }
            if (json) {
                ImageCommand.printJson(json(info));
            } else {
                System.err.printf("codebase %s: %d files, %s%n", info.name(), info.files(), human(info.bytes()));
            }
            return 0;
        }
    }

    @Command(name = "ls", aliases = "list", description = "List codebases.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Option(names = "--json", description = "Print JSON (an array of codebase objects) for programs.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            List<CodebaseInfo> all;
            try (Paddock p = connection.connect()) {
                all = p.codebases().list();
            }
            if (json) {
                ArrayNode a = Wire.JSON.createArrayNode();
                all.forEach(c -> a.add(json(c)));
                ImageCommand.printJson(a);
                return 0;
            }
            String format = "%-40s  %8s  %8s  %10s  %s%n";
            System.out.printf(format, "NAME", "REVISION", "FILES", "SIZE", "UPDATED");
            Instant now = Instant.now();
            for (CodebaseInfo c : all) {
                System.out.printf(format, c.name(), c.revision(), c.files(), human(c.bytes()),
                        ListCommand.human(Duration.between(c.updated(), now)) + " ago");
            }
            return 0;
        }
    }

    @Command(name = "rm", aliases = "remove", description = "Delete codebases (refused while a sandbox mounts one).")
    static final class Rm implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(paramLabel = "NAME", arity = "1..*", description = "Codebase names.")
        List<String> names;

        @Override
        public Integer call() throws Exception {
            try (Paddock p = connection.connect()) {
                for (String n : names) {
                    p.codebases().remove(n);
                }
            }
            return 0;
        }
    }

    @Command(name = "diff", description = {"What a sandbox changed in its codebase: A (added), M (modified), D (deleted).",
            "Changes the sandbox's rules do not make writable are marked; a commit never applies them."})
    static final class Diff implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(paramLabel = "SANDBOX", description = "Sandbox id or name.")
        String sandbox;
        @Option(names = "--json", description = "Print JSON for programs.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            List<CodebaseChange> changes;
            try (Paddock p = connection.connect()) {
                Sandbox sb = Connection.find(p, sandbox);
                changes = p.codebases().diff(sb.id());
            }
            if (json) {
                ArrayNode a = Wire.JSON.createArrayNode();
                changes.forEach(c -> a.addObject().put("path", c.path()).put("kind", c.kind().name().toLowerCase(Locale.ROOT))
                        .put("writable", c.writable()));
                ImageCommand.printJson(a);
                return 0;
            }
            changes.forEach(System.out::println); // CodebaseChange.toString quotes the sandbox-chosen path
            return 0;
        }
    }

    @Command(name = "commit", description = {"Apply a sandbox's writable changes to its codebase, atomically, as its next revision.",
            "Refused whole if the codebase changed the same paths since the sandbox started."})
    static final class Commit implements Callable<Integer> {
        @Mixin
        Connection connection;
        @Parameters(paramLabel = "SANDBOX", description = "Sandbox id or name.")
        String sandbox;

        @Override
        public Integer call() throws Exception {
            CodebaseInfo info;
            try (Paddock p = connection.connect()) {
                Sandbox sb = Connection.find(p, sandbox);
                info = p.codebases().commit(sb.id());
            }
            for (CodebaseInfo.Skipped s : info.skipped()) {
                System.err.println("not applied " + Printable.name(s.path()) + " (" + Printable.line(s.reason()) + ")");
            }
            System.err.printf("codebase %s is now at revision %d%n", info.name(), info.revision());
            return 0;
        }
    }

    static ObjectNode json(CodebaseInfo c) {
        ObjectNode o = Wire.JSON.createObjectNode().put("name", c.name()).put("revision", c.revision())
                .put("files", c.files()).put("bytes", c.bytes()).put("updated", c.updated().toString());
        if (!c.skipped().isEmpty()) {
            ArrayNode s = o.putArray("skipped");
            c.skipped().forEach(x -> s.addObject().put("path", x.path()).put("reason", x.reason()));
        }
        return o;
    }

    static String human(long bytes) {
        return bytes < 1024 * 1024 ? String.format("%.1f KiB", bytes / 1024.0) : String.format("%.1f MiB", bytes / 1048576.0);
    }
}
