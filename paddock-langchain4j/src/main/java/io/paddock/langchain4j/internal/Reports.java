package io.paddock.langchain4j.internal;

import io.paddock.ExitStatus;
import io.paddock.FileInfo;
import io.paddock.SandboxException;
import io.paddock.code.Artifact;
import io.paddock.code.CodeResult;
import io.paddock.code.RichOutput;
import io.paddock.code.ShellResult;

import java.util.List;

/**
 * The text a model reads back from a tool: plain, labelled sections, each capped, with nothing left out
 * silently (a cut says how much it cut). Pure functions.
 */
public final class Reports {
    private Reports() {
    }

    /** What a code run produced, with its status first. */
    public static String code(CodeResult r, int maxChars) {
        StringBuilder b = new StringBuilder();
        b.append(r.step() == CodeResult.Step.COMPILE ? "compilation failed: " : "").append(status(r.status())).append('\n');
        r.value().map(RichOutput::text).filter(v -> !v.isEmpty())
                .ifPresent(v -> section(b, "value", v, maxChars));
        section(b, "stdout", r.stdout(), maxChars);
        section(b, "stderr", r.stderr(), maxChars);
        r.error().ifPresent(e -> b.append("error: ").append(e.name()).append(": ").append(cap(e.message(), maxChars)).append('\n'));
        if (!r.plots().isEmpty()) {
            b.append("plots: ").append(r.plots().size()).append(" (images, not shown here)\n");
        }
        List<Artifact> artifacts = r.artifacts();
        if (!artifacts.isEmpty()) {
            b.append("files written to $PADDOCK_ARTIFACTS_DIR:\n");
            artifacts.forEach(a -> b.append("  ").append(a.path()).append(" (").append(a.size()).append(" bytes)\n"));
        }
        if (r.contextRestarted()) {
            b.append("note: the interpreter was restarted\n");
        }
        return b.toString();
    }

    /**
     * The output of a successful run as a program's own output: stdout, then the last expression's value
     * (Python) on a line of its own; the whole report when it failed.
     */
    public static String output(CodeResult r, int maxChars) {
        if (!r.success()) {
            return code(r, maxChars);
        }
        String value = r.value().map(RichOutput::text).orElse("");
        String out = r.stdout();
        if (!value.isEmpty()) {
            out = out.isEmpty() || out.endsWith("\n") ? out + value : out + "\n" + value;
        }
        out = cap(out, maxChars);
        return r.status().truncated() ? out + "\n… (output cut at the sandbox's output limit)" : out;
    }

    public static String shell(ShellResult r, int maxChars) {
        StringBuilder b = new StringBuilder(status(r.status())).append('\n');
        section(b, "stdout", r.stdout(), maxChars);
        section(b, "stderr", r.stderr(), maxChars);
        if (r.sessionRestarted()) {
            b.append("note: the shell was restarted; its working directory and variables are reset\n");
        }
        return b.toString();
    }

    public static String listing(String directory, List<FileInfo> files, int maxChars) {
        StringBuilder b = new StringBuilder(directory).append(": ").append(files.size())
                .append(files.size() == 1 ? " entry\n" : " entries\n");
        for (FileInfo f : files) {
            b.append("  ").append(f.name()).append(switch (f.type()) {
                case DIRECTORY -> "/";
                case SYMLINK -> " -> " + f.symlinkTarget().orElse("?");
                default -> " (" + f.size() + " bytes)";
            }).append('\n');
        }
        return cap(b.toString(), maxChars);
    }

    /** A failure the model can act on: its code and message. */
    public static String failure(SandboxException e) {
        return "error: " + e.code() + ": " + e.getMessage();
    }

    static String status(ExitStatus s) {
        String text = s.describe();
        return s.truncated() ? text + " (output cut at the sandbox's output limit)" : text;
    }

    private static void section(StringBuilder b, String name, String text, int maxChars) {
        if (!text.isEmpty()) {
            b.append(name).append(":\n").append(cap(text, maxChars));
            if (!text.endsWith("\n")) {
                b.append('\n');
            }
        }
    }

    /** {@code text} if it is at most {@code maxChars} long, else its start and what was cut. */
    public static String cap(String text, int maxChars) {
        if (text.length() <= maxChars) {
            return text;
        }
        int end = maxChars;
        if (Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end) + "\n… (" + (text.length() - end) + " more characters cut)";
    }
}
