package io.paddock;

import io.paddock.internal.Validate;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * One step of an image build. A build is a list of steps that starts with {@link From}; every step after it
 * becomes one cached, content-addressed layer keyed by its parent layer, its {@link #cacheKey()} and, for
 * {@link Copy}, the hashes of its input files.
 *
 * <p>The same steps come from two front ends: the fluent Java builder {@link Image} and the Dockerfile
 * parser (in {@code paddock-image}). Both produce these records, so an image written either way is the same
 * value and hits the same cache.
 *
 * <p>Every record validates its input when constructed and throws {@link SandboxException} with
 * {@link ErrorCode#INVALID_ARGUMENT} naming the field; a constructed step is always well-formed. Records
 * normalise where a value has several spellings (paths, port protocols), so equal meaning is equal value.
 * All are immutable and thread-safe.
 *
 * <p>{@link Apt}, {@link Pip} and {@link Npm} are higher-level steps of the Java builder with no Dockerfile
 * form; the executor expands them into commands it runs in the image.
 */
public sealed interface ImageStep {
    /** The shell that runs shell-form commands, as Docker uses: {@code /bin/sh -c <command>}. */
    List<String> SHELL = List.of("/bin/sh", "-c");

    /**
     * The line shown in build logs, in Dockerfile syntax where the step has one (for example
     * {@code RUN apt-get update}); {@link Apt}, {@link Pip} and {@link Npm} show as pseudo-instructions
     * {@code APT}, {@code PIP} and {@code NPM}. Not meant to be parsed back; credentials in URLs are hidden.
     */
    String describe();

    /**
     * A canonical, unambiguous text of the instruction and all its arguments: the instruction name, a space,
     * and the arguments as a JSON array. Steps that do the same thing have the same key (a shell-form and an
     * exec-form {@code RUN} of the same argv, for example). The executor hashes it together with the parent
     * layer and the step's input file hashes; it never contains anything outside the step.
     */
    String cacheKey();

    // ---------------------------------------------------------------------------------------------------
    // Dockerfile instructions

    /**
     * The base image, a registry reference such as {@code debian:bookworm}, {@code registry:5000/x:1} or
     * {@code python@sha256:…}. The {@code host} image is not a base: it is a view of the host, not layers.
     */
    record From(String base) implements ImageStep {
        // docker/distribution's reference grammar: [domain[:port]/]path[:tag][@digest]
        private static final String DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
        private static final String DOMAIN = DOMAIN_COMPONENT + "(?:\\." + DOMAIN_COMPONENT + ")*(?::[0-9]+)?";
        private static final String PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
        private static final String TAG = "[\\w][\\w.-]{0,127}";
        private static final String DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
        private static final Pattern REFERENCE = Pattern.compile("(?:" + DOMAIN + "/)?" + PATH_COMPONENT
                + "(?:/" + PATH_COMPONENT + ")*(?::" + TAG + ")?(?:@" + DIGEST + ")?");

        public From {
            text("base", base, false);
            if (base.equals(SandboxSpec.DEFAULT_IMAGE)) {
                throw SandboxException.invalid("base", "'host' cannot be a base image: it is a read-only view of"
                        + " the host, not layers; start from a registry image such as debian:bookworm");
            }
            if (base.length() > 512 || !REFERENCE.matcher(base).matches()) {
                throw SandboxException.invalid("base", "'" + Validate.shorten(base) + "' is not an image reference"
                        + " ([registry[:port]/]name[:tag][@digest], lower-case name)");
            }
        }

        @Override
        public String describe() {
            return "FROM " + base;
        }

        @Override
        public String cacheKey() {
            return "FROM " + json(List.of(base));
        }
    }

    /**
     * A command run in the image as it is so far. Always an argv list: a shell-form command is stored as
     * {@code ["/bin/sh", "-c", command]} with {@code shell} true (the flag only changes how it is shown);
     * an exec-form command as given. Variables in the command are the shell's business, not the parser's.
     */
    record Run(List<String> argv, boolean shell) implements ImageStep {
        public Run {
            argv = strings("argv", argv);
            Validate.argv("argv", argv);
            if (shell && !(argv.size() == 3 && argv.subList(0, 2).equals(SHELL))) {
                throw SandboxException.invalid("argv", "a shell-form command must be [/bin/sh, -c, command]");
            }
            if (shell && argv.get(2).isBlank()) {
                throw SandboxException.invalid("command", "the command is empty");
            }
        }

        /** {@code RUN command}: run by {@code /bin/sh -c}. */
        public static Run shell(String command) {
            text("command", command, false);
            return new Run(List.of(SHELL.get(0), SHELL.get(1), command), true);
        }

        /** {@code RUN ["program", "arg", …]}: run directly, no shell. */
        public static Run exec(List<String> argv) {
            return new Run(argv, false);
        }

        @Override
        public String describe() {
            String command = argv.get(argv.size() - 1);
            if (shell && isSingleLine(command)) {
                return "RUN " + command;
            }
            return "RUN " + json(argv);
        }

        @Override
        public String cacheKey() {
            return "RUN " + json(argv);
        }
    }

    /**
     * Copies files from the build context into the image ({@code COPY}), or the same with Docker's
     * {@code ADD} semantics when {@code add} is true. Sources are paths relative to the build context (a
     * leading {@code /} means the context's root, as in Docker; {@code ..} is refused) and may hold the
     * wildcards {@code * ? [...]}; for images built with {@link Image}, they are the synthetic names of
     * {@link Image#localSources()}. {@code dest} is absolute; a trailing {@code /} means "into this
     * directory" and is required when there are several sources.
     *
     * <p>{@code ADD} differs from {@code COPY} only in that Docker extracts a local tar archive source into
     * the destination; URLs are never sources. Whether and how to extract is the executor's decision: the
     * step only records that the instruction was {@code ADD}.
     *
     * @param chown {@code user[:group]} owning the copied files; empty means root
     */
    record Copy(List<String> sources, String dest, Optional<String> chown, boolean add) implements ImageStep {
        public Copy {
            sources = strings("sources", sources);
            if (sources.isEmpty()) {
                throw SandboxException.invalid("sources", "no source given");
            }
            List<String> clean = new ArrayList<>(sources.size());
            for (String source : sources) {
                clean.add(contextPath(source));
            }
            sources = List.copyOf(clean);
            dest = destination(dest);
            optional("chown", chown).ifPresent(c -> User.owner("chown", c));
            if (sources.size() > 1 && !dest.endsWith("/")) {
                throw SandboxException.invalid("dest", "with several sources the destination must be a directory"
                        + " ending in '/', not '" + Validate.shorten(dest) + "'");
            }
        }

        /** {@code COPY sources… dest}. */
        public static Copy of(List<String> sources, String dest) {
            return new Copy(sources, dest, Optional.empty(), false);
        }

        /**
         * Resolves a destination as Docker does: an absolute {@code dest} as it is, a relative one against
         * {@code workdir}; {@code .} and {@code ..} are resolved lexically. A destination that names a
         * directory ({@code dir/}, {@code .}, {@code ..}) keeps or gains its trailing {@code /}.
         */
        public static String resolveDest(String workdir, String dest) {
            text("dest", dest, false);
            boolean directory = dest.endsWith("/") || dest.equals(".") || dest.endsWith("/.")
                    || dest.equals("..") || dest.endsWith("/..");
            String resolved = dest.startsWith("/") ? cleanAbsolute("dest", dest) : Workdir.resolve(workdir, dest).path();
            return directory && !resolved.equals("/") ? resolved + "/" : resolved;
        }

        @Override
        public String describe() {
            StringBuilder s = new StringBuilder(add ? "ADD" : "COPY");
            chown.ifPresent(c -> s.append(" --chown=").append(c));
            List<String> args = new ArrayList<>(sources);
            args.add(dest);
            if (args.stream().allMatch(ImageStep::isPlainWord)) {
                args.forEach(a -> s.append(' ').append(a));
            } else {
                s.append(' ').append(json(args));
            }
            return s.toString();
        }

        @Override
        public String cacheKey() {
            return (add ? "ADD " : "COPY ") + json(List.of(sources, dest, chown));
        }

        private static String contextPath(String source) {
            text("sources", source, false);
            StringBuilder clean = new StringBuilder();
            for (String part : source.split("/")) {
                if (part.isEmpty() || part.equals(".")) {
                    continue;
                }
                if (part.equals("..")) {
                    throw SandboxException.invalid("sources", "'" + Validate.shorten(source)
                            + "' leaves the build context ('..'); sources must be inside it");
                }
                if (clean.length() > 0) {
                    clean.append('/');
                }
                clean.append(part);
            }
            return clean.length() == 0 ? "." : clean.toString();
        }

        private static String destination(String dest) {
            text("dest", dest, false);
            if (!dest.startsWith("/")) {
                throw SandboxException.invalid("dest", "'" + Validate.shorten(dest) + "' is not an absolute path"
                        + " (resolve a relative destination against the working directory first)");
            }
            for (String part : dest.split("/")) {
                if (part.equals("..")) {
                    throw SandboxException.invalid("dest", "'" + Validate.shorten(dest) + "' contains '..'");
                }
            }
            String clean = cleanAbsolute("dest", dest);
            return dest.endsWith("/") && !clean.equals("/") ? clean + "/" : clean;
        }
    }

    /** An environment variable of the image, seen by later steps and by every process of the sandbox. */
    record Env(String key, String value) implements ImageStep {
        public Env {
            Validate.envKey("key", key);
            text("value", value, true);
        }

        @Override
        public String describe() {
            return "ENV " + key + "=" + quoted(value);
        }

        @Override
        public String cacheKey() {
            return "ENV " + json(List.of(key, value));
        }
    }

    /** The working directory of later steps and of the image: always an absolute, clean path. */
    record Workdir(String path) implements ImageStep {
        public Workdir {
            text("path", path, false);
            if (!path.startsWith("/")) {
                throw SandboxException.invalid("path", "'" + Validate.shorten(path) + "' is not an absolute path"
                        + " (use Workdir.resolve for a relative one)");
            }
            path = cleanAbsolute("path", path);
        }

        /**
         * {@code WORKDIR path} after {@code current}: an absolute path as it is, a relative one resolved
         * against {@code current}; {@code .} and {@code ..} are resolved lexically ({@code ..} stops at
         * {@code /}).
         */
        public static Workdir resolve(String current, String path) {
            text("path", path, false);
            return new Workdir(path.startsWith("/") ? path : current + "/" + path);
        }

        @Override
        public String describe() {
            return "WORKDIR " + path;
        }

        @Override
        public String cacheKey() {
            return "WORKDIR " + json(List.of(path));
        }
    }

    /** The user ({@code name}, {@code uid}, optionally {@code :group} or {@code :gid}) of later steps and of the image. */
    record User(String user) implements ImageStep {
        private static final Pattern OWNER =
                Pattern.compile("[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}(?::[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63})?");

        public User {
            owner("user", user);
        }

        static void owner(String field, String owner) {
            text(field, owner, false);
            if (!OWNER.matcher(owner).matches()) {
                throw SandboxException.invalid(field, "'" + Validate.shorten(owner) + "' is not user[:group]"
                        + " (names or numeric ids of letters, digits, '_', '.' or '-')");
            }
        }

        @Override
        public String describe() {
            return "USER " + user;
        }

        @Override
        public String cacheKey() {
            return "USER " + json(List.of(user));
        }
    }

    /** A label of the image's configuration, such as {@code org.opencontainers.image.source}. */
    record Label(String key, String value) implements ImageStep {
        public Label {
            text("key", key, false);
            if (key.indexOf('=') >= 0) {
                throw SandboxException.invalid("key", "a label key cannot contain '='");
            }
            text("value", value, true);
        }

        @Override
        public String describe() {
            return "LABEL " + quoted(key) + "=" + quoted(value);
        }

        @Override
        public String cacheKey() {
            return "LABEL " + json(List.of(key, value));
        }
    }

    /** The image's default command (exec form; a shell-form {@code CMD} is {@code ["/bin/sh","-c",…]}); empty clears it. */
    record Cmd(List<String> argv) implements ImageStep {
        public Cmd {
            argv = strings("argv", argv);
        }

        @Override
        public String describe() {
            return "CMD " + json(argv);
        }

        @Override
        public String cacheKey() {
            return describe();
        }
    }

    /** The image's entrypoint (exec form; shell form becomes {@code ["/bin/sh","-c",…]}); empty clears it. */
    record Entrypoint(List<String> argv) implements ImageStep {
        public Entrypoint {
            argv = strings("argv", argv);
        }

        @Override
        public String describe() {
            return "ENTRYPOINT " + json(argv);
        }

        @Override
        public String cacheKey() {
            return describe();
        }
    }

    /** A port the image declares, {@code port/protocol}; {@code 8000} is normalised to {@code 8000/tcp}. */
    record Expose(String portProto) implements ImageStep {
        private static final Pattern FORM = Pattern.compile("([0-9]{1,5})(?:/(tcp|udp|sctp))?", Pattern.CASE_INSENSITIVE);

        public Expose {
            text("port", portProto, false);
            var m = FORM.matcher(portProto);
            if (!m.matches() || Integer.parseInt(m.group(1)) < 1 || Integer.parseInt(m.group(1)) > 65535) {
                throw SandboxException.invalid("port", "'" + Validate.shorten(portProto) + "' is not port[/tcp|udp|sctp]"
                        + " with a port from 1 to 65535");
            }
            portProto = Integer.parseInt(m.group(1)) + "/" + (m.group(2) == null ? "tcp" : m.group(2).toLowerCase());
        }

        public static Expose port(int port) {
            return new Expose(Integer.toString(port));
        }

        @Override
        public String describe() {
            return "EXPOSE " + portProto;
        }

        @Override
        public String cacheKey() {
            return "EXPOSE " + json(List.of(portProto));
        }
    }

    /**
     * A build argument: a variable later {@code RUN} steps see while the image builds, but the image does
     * not keep. The Dockerfile parser records the value the build uses (the build argument given for it, or
     * else the Dockerfile's default), so that a different value is a different cache key, as in Docker.
     */
    record Arg(String name, Optional<String> defaultValue) implements ImageStep {
        public Arg {
            Validate.envKey("name", name);
            optional("defaultValue", defaultValue).ifPresent(v -> text("defaultValue", v, true));
        }

        @Override
        public String describe() {
            return "ARG " + name + defaultValue.map(v -> "=" + quoted(v)).orElse("");
        }

        @Override
        public String cacheKey() {
            return "ARG " + json(List.of(name, defaultValue));
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // Higher-level steps of the Java builder, expanded by the executor

    /**
     * Debian packages, installed with {@code apt-get update} and
     * {@code apt-get install -y --no-install-recommends} and the package lists removed afterwards, in one
     * layer. Each package is {@code name}, optionally {@code :arch}, then {@code =version} or
     * {@code /release}.
     */
    record Apt(List<String> packages) implements ImageStep {
        private static final Pattern PACKAGE = Pattern.compile(
                "[a-z0-9][a-z0-9+.-]*(?::[a-z0-9-]+)?(?:=[A-Za-z0-9.+~:_-]+|/[A-Za-z0-9.+-]+)?");

        public Apt {
            packages = packageList("packages", packages, PACKAGE, "a Debian package (name[:arch][=version|/release])");
        }

        @Override
        public String describe() {
            return "APT " + String.join(" ", packages);
        }

        @Override
        public String cacheKey() {
            return "APT " + json(packages);
        }
    }

    /**
     * Python packages, installed with {@code pip install}: each a PEP 508 name with optional extras and
     * version specifiers ({@code numpy}, {@code uvicorn[standard]}, {@code torch>=2.1,<3}), never a URL or
     * an option. {@code indexUrl} replaces PyPI ({@code --index-url}); {@code findLinks} are extra places to
     * look ({@code --find-links}): http(s) or file URLs, or absolute paths in the image.
     */
    record Pip(List<String> packages, Optional<String> indexUrl, List<String> findLinks) implements ImageStep {
        private static final String NAME = "[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?";
        private static final String SPEC = "(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+";
        private static final Pattern PACKAGE = Pattern.compile(NAME + "(?:\\[" + NAME + "(?:," + NAME + ")*\\])?"
                + "(?:" + SPEC + "(?:," + SPEC + ")*)?");

        public Pip {
            packages = packageList("packages", packages, PACKAGE,
                    "a Python requirement (name[extras], optionally version specifiers such as ==1.2 or >=1,<2)");
            optional("indexUrl", indexUrl).ifPresent(u -> url("indexUrl", u, false));
            findLinks = strings("findLinks", findLinks);
            for (String link : findLinks) {
                if (!link.startsWith("/")) {
                    url("findLinks", link, true);
                }
            }
        }

        public static Pip of(List<String> packages) {
            return new Pip(packages, Optional.empty(), List.of());
        }

        @Override
        public String describe() {
            StringBuilder s = new StringBuilder("PIP");
            indexUrl.ifPresent(u -> s.append(" --index-url ").append(redacted(u)));
            findLinks.forEach(l -> s.append(" --find-links ").append(redacted(l)));
            packages.forEach(p -> s.append(' ').append(p));
            return s.toString();
        }

        @Override
        public String cacheKey() {
            return "PIP " + json(List.of(packages, indexUrl, findLinks));
        }

        private static void url(String field, String url, boolean allowFile) {
            text(field, url, false);
            try {
                URI uri = new URI(url);
                String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase();
                boolean web = (scheme.equals("http") || scheme.equals("https")) && uri.getHost() != null;
                boolean file = allowFile && scheme.equals("file") && uri.getPath() != null;
                if (web || file) {
                    return;
                }
            } catch (URISyntaxException e) {
                // reported below
            }
            throw SandboxException.invalid(field, "'" + redacted(Validate.shorten(url)) + "' is not an http(s) URL"
                    + (allowFile ? ", a file: URL or an absolute path" : ""));
        }

        private static String redacted(String url) {
            return url.replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", "$1***@");
        }
    }

    /** Node packages, installed globally with {@code npm install -g}: {@code name}, {@code @scope/name}, optionally {@code @version}. */
    record Npm(List<String> packages) implements ImageStep {
        private static final Pattern PACKAGE = Pattern.compile(
                "(?:@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]{0,213}(?:@[A-Za-z0-9.^~<>=*+_-]+)?");

        public Npm {
            packages = packageList("packages", packages, PACKAGE, "an npm package ((@scope/)name(@version))");
        }

        @Override
        public String describe() {
            return "NPM " + String.join(" ", packages);
        }

        @Override
        public String cacheKey() {
            return "NPM " + json(packages);
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // shared validation and formatting (private to this interface and its records)

    private static void text(String field, String value, boolean emptyAllowed) {
        if (value == null) {
            throw SandboxException.invalid(field, "missing");
        }
        if (!emptyAllowed && value.isEmpty()) {
            throw SandboxException.invalid(field, "empty");
        }
        if (value.indexOf('\0') >= 0) {
            throw SandboxException.invalid(field, "contains a NUL character");
        }
    }

    private static <T> Optional<T> optional(String field, Optional<T> value) {
        if (value == null) {
            throw SandboxException.invalid(field, "missing (use Optional.empty())");
        }
        return value;
    }

    private static List<String> strings(String field, List<String> values) {
        if (values == null) {
            throw SandboxException.invalid(field, "missing");
        }
        for (int i = 0; i < values.size(); i++) {
            String v = values.get(i);
            if (v == null) {
                throw SandboxException.invalid(field, "element " + i + " is missing");
            }
            if (v.indexOf('\0') >= 0) {
                throw SandboxException.invalid(field, "element " + i + " contains a NUL character");
            }
        }
        return List.copyOf(values);
    }

    private static List<String> packageList(String field, List<String> packages, Pattern form, String what) {
        packages = strings(field, packages);
        if (packages.isEmpty()) {
            throw SandboxException.invalid(field, "no package given");
        }
        for (String p : packages) {
            if (p.length() > 512 || !form.matcher(p).matches()) {
                throw SandboxException.invalid(field, "'" + Validate.shorten(p) + "' is not " + what);
            }
        }
        return packages;
    }

    /** Removes empty and {@code .} components and resolves {@code ..} lexically; {@code ..} stops at {@code /}. */
    private static String cleanAbsolute(String field, String path) {
        List<String> parts = new ArrayList<>();
        for (String part : path.split("/")) {
            if (part.isEmpty() || part.equals(".")) {
                continue;
            }
            if (part.equals("..")) {
                if (!parts.isEmpty()) {
                    parts.remove(parts.size() - 1);
                }
                continue;
            }
            parts.add(part);
        }
        String clean = "/" + String.join("/", parts);
        return Validate.sandboxPath(field, clean);
    }

    private static boolean isSingleLine(String s) {
        return s.chars().noneMatch(c -> c < 0x20 || c == 0x7f);
    }

    /** A word that reads the same in a Dockerfile without quotes. */
    private static boolean isPlainWord(String s) {
        if (s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' || c == '$' || c == '`') {
                return false;
            }
        }
        return true;
    }

    /** The word as it is when plain, else in double quotes with {@code \ " $} escaped and controls shown as {@code \n}. */
    private static String quoted(String s) {
        if (isPlainWord(s)) {
            return s;
        }
        StringBuilder q = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"', '\\', '$' -> q.append('\\').append(c);
                case '\n' -> q.append("\\n");
                case '\t' -> q.append("\\t");
                case '\r' -> q.append("\\r");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        q.append(String.format("\\x%02x", (int) c));
                    } else {
                        q.append(c);
                    }
                }
            }
        }
        return q.append('"').toString();
    }

    /**
     * Compact JSON of strings, lists and optionals (an empty one is {@code null}): the canonical form of
     * cache keys and of exec forms.
     */
    private static String json(Object value) {
        StringBuilder s = new StringBuilder();
        writeJson(s, value);
        return s.toString();
    }

    private static void writeJson(StringBuilder s, Object value) {
        if (value instanceof Optional<?> optional) {
            if (optional.isPresent()) {
                writeJson(s, optional.get());
            } else {
                s.append("null");
            }
        } else if (value instanceof String str) {
            s.append('"');
            for (int i = 0; i < str.length(); i++) {
                char c = str.charAt(i);
                switch (c) {
                    case '"' -> s.append("\\\"");
                    case '\\' -> s.append("\\\\");
                    case '\n' -> s.append("\\n");
                    case '\r' -> s.append("\\r");
                    case '\t' -> s.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            s.append(String.format("\\u%04x", (int) c));
                        } else {
                            s.append(c);
                        }
                    }
                }
            }
            s.append('"');
        } else if (value instanceof List<?> list) {
            s.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    s.append(',');
                }
                writeJson(s, list.get(i));
            }
            s.append(']');
        } else {
            throw new IllegalArgumentException("not JSON: " + value);
        }
    }
}
