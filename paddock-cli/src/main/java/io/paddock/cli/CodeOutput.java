package io.paddock.cli;

import io.paddock.SandboxException;
import io.paddock.code.Artifact;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeResult;
import io.paddock.code.Plot;
import io.paddock.code.RichOutput;
import io.paddock.internal.Printable;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * How {@code paddock run --lang} and {@code paddock code} show a run or cell: stdout and stderr live, each
 * rich value's {@code text/plain} on stdout as it comes (as a notebook shows the last expression), plots and
 * artifact files written into the {@code --artifacts} directory afterwards, and one line on stderr for a
 * timeout, an OOM kill or a restarted context. The exit code is the code's own, as for commands.
 */
final class CodeOutput implements CodeListener {
    private final PrintStream out;
    private final PrintStream err;

    CodeOutput(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

    /** The code of a {@code --code} option: the text itself, or standard input for {@code -}. */
    static String code(String option, InputStream stdin) {
        if (!"-".equals(option)) {
            return option;
        }
        try {
            return new String(stdin.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("reading the code from standard input", e);
        }
    }

    /** The {@code --artifacts} directory, created if missing; null when the option was not given. */
    static Path artifactsDir(String option) {
        if (option == null) {
            return null;
        }
        try {
            Path dir = Path.of(option).toAbsolutePath().normalize();
            Files.createDirectories(dir);
            return dir.toRealPath();
        } catch (InvalidPathException | IOException e) {
            throw SandboxException.invalid("artifacts", "cannot use '" + option + "' as the artifacts directory: " + e.getMessage());
        }
    }

    @Override
    public void onStdout(String text) {
        out.print(text);
        out.flush();
    }

    @Override
    public void onStderr(String text) {
        err.print(text);
        err.flush();
    }

    @Override
    public void onResult(RichOutput output) {
        String text = output.text();
        out.print(text.endsWith("\n") ? text : text + "\n");
        out.flush();
    }

    /**
     * Saves the result's plots and artifacts into {@code dir} (or says how many there were when it is null),
     * explains an unusual end on stderr, and returns the exit code.
     */
    int finish(CodeResult result, Path dir, Duration timeout, String memory) {
        int files = result.plots().size() + result.artifacts().size();
        if (dir != null) {
            save(result, dir);
        } else if (files > 0) {
            err.println("paddock: " + count(result) + " not saved (add --artifacts DIR to save them)");
        }
        if (result.step() == CodeResult.Step.COMPILE && !result.success()) {
            err.println("paddock: compiling failed (exit " + ExitCodes.of(result.status()) + "); the program did not run");
        }
        if (result.contextRestarted()) {
            err.println("paddock: the context's process was restarted; its variables and imports are gone");
        }
        Streaming.explain(result.status(), timeout, memory);
        err.flush();
        return ExitCodes.of(result.status());
    }

    private void save(CodeResult result, Path dir) {
        Set<Path> written = new HashSet<>();
        int saved = 0;
        for (Artifact a : result.artifacts()) {
            Path target = inside(dir, a.name());
            if (target == null || a.content().isEmpty()) {
                err.println("paddock: skipped artifact " + Printable.name(a.name()) + ": "
                        + (target == null ? "its name leads outside " + dir : "its content did not come back"));
                continue;
            }
            write(target, a.content().get());
            written.add(target);
            saved++;
        }
        int n = 0;
        for (Plot p : result.plots()) {
            String ext = p.format().name().toLowerCase(Locale.ROOT);
            Path target;
            do {
                target = dir.resolve("plot-" + ++n + "." + ext);
            } while (written.contains(target));
            write(target, p.content());
            written.add(target);
            saved++;
        }
        if (saved > 0) {
            err.println("paddock: saved " + count(result) + " in " + dir);
        }
    }

    /** {@code name} resolved under {@code dir}, or null when it is absolute or climbs out with {@code ..}. */
    static Path inside(Path dir, String name) {
        try {
            Path rel = Path.of(name);
            Path target = dir.resolve(rel).normalize();
            return !name.isEmpty() && !rel.isAbsolute() && target.startsWith(dir) && !target.equals(dir) ? target : null;
        } catch (InvalidPathException e) {
            return null;
        }
    }

    private static void write(Path target, byte[] content) {
        try {
            Files.createDirectories(target.getParent());
            // the name came from the sandbox: never write through a link someone left in the directory
            Files.write(target, content, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + target, e);
        }
    }

    private static String count(CodeResult r) {
        int plots = r.plots().size();
        int artifacts = r.artifacts().size();
        String p = plots == 1 ? "1 plot" : plots + " plots";
        String a = artifacts == 1 ? "1 artifact" : artifacts + " artifacts";
        return plots == 0 ? a : artifacts == 0 ? p : p + " and " + a;
    }
}
