package io.paddock.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.LocalOptions;
import io.paddock.Paddock;
import io.paddock.RegistryAuth;
import io.paddock.SandboxException;
import io.paddock.code.CodeImages;
import io.paddock.wire.Wire;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code paddock image}: pull, push, build, list, inspect and remove the images sandboxes are made from. */
@Command(name = "image", sortOptions = false,
        description = {"Manage images: the root filesystems sandboxes are made from.",
                "Without --url or PADDOCK_URL this works on this host's image store (as root); with them, on the "
                + "daemon's. debian:<suite> and debian:<suite>-slim are built from Debian's packages on first use."},
        subcommands = {ImageCommand.Pull.class, ImageCommand.Push.class, ImageCommand.Build.class, ImageCommand.Ls.class,
                ImageCommand.Inspect.class, ImageCommand.Rm.class, ImageCommand.Prune.class, ImageCommand.Prepare.class})
final class ImageCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    /** Where the images are: this host's store (embedded engine) unless a daemon is named. */
    static final class Target {
        @Option(names = "--url", paramLabel = "URL", description = "Work on a daemon's images (default: $PADDOCK_URL; none: this host's store).")
        String url;

        @Option(names = "--token", paramLabel = "TOKEN", description = "The daemon's token (default: $PADDOCK_TOKEN).")
        String token;

        @Option(names = "--storage-dir", paramLabel = "DIR", hidden = true,
                description = "The local image store's directory (default: /var/lib/paddock).")
        Path storageDir;

        @Option(names = "--build-allow", paramLabel = "ENTRY,...",
                description = {"Where this host's builds' RUN steps may connect to: none, open, or an allowlist of "
                        + "domain names, *. wildcards, CIDRs and apt-sources (the hosts of this host's apt sources), "
                        + "e.g. 'apt-sources,registry.example.org' (default: $PADDOCK_BUILD_ALLOW, else apt-sources). "
                        + "A daemon (--url) builds behind its own --build-allow."})
        String buildAllow;

        Paddock open() {
            String u = url != null ? url : System.getenv("PADDOCK_URL");
            if (u != null && !u.isBlank()) {
                if (buildAllow != null) {
                    throw SandboxException.invalid("build-allow", "a daemon's builds follow the daemon's own"
                            + " --build-allow; give it to paddock serve, or build on this host without --url");
                }
                Connection c = new Connection();
                c.url = u;
                c.token = token;
                return c.connect();
            }
            // The engine's start-up line (which tiers it found) is noise in an image command's output.
            java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.WARNING);
            LocalOptions.Builder b = LocalOptions.builder().buildAllow(buildAllow);
            if (storageDir != null) {
                b.storageDir(storageDir.toAbsolutePath());
            }
            return Paddock.local(b.build());
        }
    }

    /** Registry options of pull and push. */
    static final class Auth {
        @Option(names = "--insecure", description = "Allow plain HTTP (a registry on loopback or a private network).")
        boolean insecure;

        @Option(names = {"-u", "--username"}, paramLabel = "USER", description = "Registry user name; the password is read from standard input.")
        String username;

        @Option(names = "--registry-config", paramLabel = "FILE",
                description = "A Docker-style config.json whose \"auths\" give credentials (default: $DOCKER_CONFIG/config.json or ~/.docker/config.json if present).")
        Path config;

        RegistryAuth resolve() throws IOException {
            RegistryAuth a = RegistryAuth.none();
            if (insecure) {
                a = a.insecure();
            }
            if (username != null) {
                String password = new String(System.in.readAllBytes(), StandardCharsets.UTF_8).strip();
                if (password.isEmpty()) {
                    throw SandboxException.invalid("password", "--username needs the password on standard input");
                }
                a = a.credentials(username, password);
            }
            Path cfg = config != null ? config : defaultConfig();
            if (cfg != null) {
                a = a.configFile(cfg.toAbsolutePath());
            }
            return a;
        }

        private static Path defaultConfig() {
            String dir = System.getenv("DOCKER_CONFIG");
            Path p = dir != null && !dir.isBlank() ? Path.of(dir, "config.json")
                    : Path.of(System.getProperty("user.home"), ".docker", "config.json");
            return java.nio.file.Files.isReadable(p) ? p : null;
        }
    }

    /** Prints progress to stderr: build steps and their output always, layer progress on a terminal only. */
    static final class Progress implements ImageListener {
        private final PrintStream err = System.err;
        private final boolean quiet;
        private final boolean terminal = System.console() != null;
        private final Map<String, Long> lastShown = new LinkedHashMap<>();

        Progress(boolean quiet) {
            this.quiet = quiet;
        }

        @Override
        public void log(String line) {
            if (!quiet) {
                err.println(line);
            }
        }

        @Override
        public void step(int index, int count, String description, boolean cached) {
            if (!quiet) {
                err.println("Step " + index + "/" + count + " : " + description + (cached ? "  (cached)" : ""));
            }
        }

        @Override
        public void layer(String digest, long done, long total, boolean complete, boolean cached) {
            if (quiet) {
                return;
            }
            String shortId = digest.startsWith("sha256:") ? digest.substring(7, Math.min(digest.length(), 19)) : digest;
            if (complete) {
                err.println(shortId + ": " + (cached ? "already here" : "done (" + mib(done) + ")"));
                return;
            }
            if (!terminal) {
                return;
            }
            long now = System.nanoTime();
            Long last = lastShown.get(digest);
            if (last == null || now - last > 200_000_000L) {
                lastShown.put(digest, now);
                err.print("\r" + shortId + ": " + mib(done) + (total > 0 ? " / " + mib(total) : "") + "   ");
                err.flush();
            }
        }

        private static String mib(long bytes) {
            return String.format("%.1f MiB", bytes / 1048576.0);
        }
    }

    static ObjectNode json(ImageInfo i) {
        ObjectNode o = Wire.JSON.createObjectNode();
        o.put("id", i.id());
        ArrayNode names = o.putArray("names");
        i.names().forEach(names::add);
        o.put("size", i.size());
        o.put("layers", i.layers());
        i.created().ifPresent(c -> o.put("created", c.toString()));
        ArrayNode env = o.putArray("env");
        i.env().forEach(env::add);
        o.put("user", i.user());
        o.put("workdir", i.workdir());
        ArrayNode ep = o.putArray("entrypoint");
        i.entrypoint().forEach(ep::add);
        ArrayNode cmd = o.putArray("cmd");
        i.cmd().forEach(cmd::add);
        ObjectNode labels = o.putObject("labels");
        i.labels().forEach(labels::put);
        ArrayNode ports = o.putArray("exposedPorts");
        i.exposedPorts().forEach(ports::add);
        return o;
    }

    static void printJson(Object node) throws IOException {
        System.out.println(Wire.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(node));
    }

    @Command(name = "pull", sortOptions = false, description = "Pull an image from an OCI registry (linux/amd64).")
    static final class Pull implements Callable<Integer> {
        @Mixin
        Target target;
        @Mixin
        Auth auth;
        @Option(names = "--json", description = "No progress; print the image as JSON.")
        boolean json;
        @Parameters(paramLabel = "REF", description = "The image, e.g. 127.0.0.1:5000/team/app:1")
        String ref;

        @Override
        public Integer call() throws Exception {
            RegistryAuth a = auth.resolve();
            try (Paddock p = target.open()) {
                ImageInfo info = p.images().pull(ref, a, new Progress(json));
                if (json) {
                    printJson(json(info));
                } else {
                    System.out.println(info.id());
                }
            }
            return 0;
        }
    }

    @Command(name = "push", sortOptions = false, description = "Push a stored image to an OCI registry.")
    static final class Push implements Callable<Integer> {
        @Mixin
        Target target;
        @Mixin
        Auth auth;
        @Option(names = "--json", description = "No progress; print the image as JSON.")
        boolean json;
        @Parameters(index = "0", paramLabel = "IMAGE", description = "A stored image's name or id.")
        String image;
        @Parameters(index = "1", paramLabel = "TARGET", description = "Where to push it, e.g. 127.0.0.1:5000/team/app:1")
        String destination;

        @Override
        public Integer call() throws Exception {
            RegistryAuth a = auth.resolve();
            try (Paddock p = target.open()) {
                ImageInfo info = p.images().push(image, destination, a, new Progress(json));
                if (json) {
                    printJson(json(info));
                } else {
                    System.out.println(destination);
                }
            }
            return 0;
        }
    }

    @Command(name = "build", sortOptions = false, description = {"Build an image from a Dockerfile.",
            "RUN steps run in sandboxes of the image being built (with network access to package registries);"
                    + " each step is a cached layer, so an unchanged rebuild reuses every one."})
    static final class Build implements Callable<Integer> {
        @Mixin
        Target target;
        @Option(names = {"-t", "--tag"}, paramLabel = "NAME[:TAG]", required = true, description = "Name the result (repeatable).")
        List<String> tags = new ArrayList<>();
        @Option(names = {"-f", "--file"}, paramLabel = "FILE", description = "The Dockerfile, relative to the context (default: Dockerfile).")
        String file;
        @Option(names = "--build-arg", paramLabel = "KEY=VALUE", description = "Set a build argument (repeatable).")
        List<String> buildArgs = new ArrayList<>();
        @Option(names = "--json", description = "No step output; print the image as JSON.")
        boolean json;
        @Parameters(paramLabel = "CONTEXT", description = "The build context directory.")
        Path context;

        @Override
        public Integer call() throws Exception {
            Map<String, String> args = new LinkedHashMap<>();
            for (String kv : buildArgs) {
                String[] p = SpecOptions.keyValue("build-arg", kv);
                args.put(p[0], p[1]);
            }
            Instant start = Instant.now();
            try (Paddock p = target.open()) {
                ImageInfo info = p.images().build(context.toAbsolutePath(), file, args, tags, new Progress(json));
                if (json) {
                    printJson(json(info));
                } else {
                    System.err.println("built " + info.shortId() + " as " + String.join(", ", tags) + " in "
                            + Duration.between(start, Instant.now()).toMillis() + " ms");
                    System.out.println(info.id());
                }
            }
            return 0;
        }
    }

    @Command(name = "ls", aliases = "list", sortOptions = false, description = "List stored images.")
    static final class Ls implements Callable<Integer> {
        @Mixin
        Target target;
        @Option(names = "--json", description = "Print JSON (an array of image objects) for programs.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            List<ImageInfo> infos;
            try (Paddock p = target.open()) {
                infos = p.images().list();
            }
            if (json) {
                ArrayNode a = Wire.JSON.createArrayNode();
                infos.forEach(i -> a.add(json(i)));
                printJson(a);
                return 0;
            }
            String format = "%-50s  %-12s  %10s  %s%n";
            System.out.printf(format, "NAME", "ID", "SIZE", "CREATED");
            Instant now = Instant.now();
            for (ImageInfo i : infos) {
                List<String> names = i.names().isEmpty() ? List.of("<none>") : i.names();
                for (String n : names) {
                    System.out.printf(format, n, i.shortId(), String.format("%.1f MiB", i.size() / 1048576.0),
                            i.created().map(c -> ListCommand.human(Duration.between(c, now)) + " ago").orElse("-"));
                }
            }
            return 0;
        }
    }

    @Command(name = "inspect", description = "Show an image as JSON.")
    static final class Inspect implements Callable<Integer> {
        @Mixin
        Target target;
        @Parameters(paramLabel = "REF", description = "A name or id.")
        String ref;

        @Override
        public Integer call() throws Exception {
            try (Paddock p = target.open()) {
                printJson(json(p.images().inspect(ref)));
            }
            return 0;
        }
    }

    @Command(name = "rm", aliases = "remove", description = {"Remove image names; an image goes with its last name.",
            "Refused while a sandbox or warm pool uses the image. Its layers are freed by `paddock image prune`."})
    static final class Rm implements Callable<Integer> {
        @Mixin
        Target target;
        @Parameters(arity = "1..*", paramLabel = "REF", description = "Names or ids.")
        List<String> refs;

        @Override
        public Integer call() {
            int rc = 0;
            try (Paddock p = target.open()) {
                Images images = p.images();
                for (String r : refs) {
                    try {
                        images.remove(r);
                        System.out.println(r);
                    } catch (SandboxException e) {
                        System.err.println("paddock: " + r + ": " + e.getMessage());
                        rc = ExitCodes.of(e);
                    }
                }
            }
            return rc;
        }
    }

    @Command(name = "prepare", description = {"Build Paddock's code image ahead of its first use: Debian bookworm with"
            + " Python (numpy, pandas, matplotlib), Node.js, a JDK, gcc/g++, Perl, Ruby, Go and R.",
            "`paddock run --lang` uses it; the first run builds it otherwise. Takes a few minutes once; then cached."})
    static final class Prepare implements Callable<Integer> {
        @Mixin
        Target target;
        @Option(names = "--json", description = "No build output; print the image as JSON.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            try (Paddock p = target.open()) {
                ImageInfo info = prepare(p, new Progress(json));
                if (json) {
                    printJson(json(info));
                } else {
                    System.out.println(CodeImages.FULL);
                }
            }
            return 0;
        }

        /** Builds the code image (each step cached, so this is quick once it is built). */
        static ImageInfo prepare(Paddock p, ImageListener listener) {
            return p.images().build(CodeImages.full(), List.of(CodeImages.FULL), listener);
        }
    }

    @Command(name = "prune", description = "Delete layers, blobs and build-cache entries no image needs.")
    static final class Prune implements Callable<Integer> {
        @Mixin
        Target target;

        @Override
        public Integer call() {
            try (Paddock p = target.open()) {
                long freed = p.images().prune();
                System.out.printf("freed %.1f MiB%n", freed / 1048576.0);
            }
            return 0;
        }
    }
}
