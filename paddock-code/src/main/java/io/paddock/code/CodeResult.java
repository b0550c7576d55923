package io.paddock.code;

import io.paddock.ExitStatus;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a run or a cell produced.
 *
 * @param language          the language's canonical name
 * @param step              the step {@code status} is about: {@link Step#COMPILE} when compiling failed (and
 *                          nothing ran), {@link Step#RUN} otherwise
 * @param status            how it ended; for a cell: exit code 0, 1 when it raised, the code of
 *                          {@code sys.exit(n)}, {@code TIMED_OUT} (124) when it was interrupted at its timeout
 * @param stdout            standard output (capped; see {@code status.stdoutTruncated()})
 * @param stderr            standard error, including the traceback of an error (capped)
 * @param results           rich output: the last expression's value and {@code display(x)} calls
 * @param plots             figures captured
 * @param artifacts         files written under {@code $PADDOCK_ARTIFACTS_DIR}
 * @param error             the exception that ended it, if any
 * @param contextRestarted  true when the context's process had to be restarted (it did not survive an
 *                          interrupt, or it died): its variables are gone
 * @param duration          wall time as measured by the caller's side
 */
public record CodeResult(String language, Step step, ExitStatus status, String stdout, String stderr,
                         List<RichOutput> results, List<Plot> plots, List<Artifact> artifacts,
                         Optional<CellError> error, boolean contextRestarted, Duration duration) {

    public enum Step { COMPILE, RUN }

    public CodeResult {
        Objects.requireNonNull(language, "language");
        Objects.requireNonNull(step, "step");
        Objects.requireNonNull(status, "status");
        Objects.requireNonNull(stdout, "stdout");
        Objects.requireNonNull(stderr, "stderr");
        results = List.copyOf(results);
        plots = List.copyOf(plots);
        artifacts = List.copyOf(artifacts);
        Objects.requireNonNull(error, "error");
        Objects.requireNonNull(duration, "duration");
    }

    public boolean success() {
        return step == Step.RUN && status.success();
    }

    public int exitCode() {
        return status.exitCode();
    }

    public boolean timedOut() {
        return status.outcome() == ExitStatus.Outcome.TIMED_OUT;
    }

    /** The last expression's value, if the code ended with one. */
    public Optional<RichOutput> value() {
        return results.stream().filter(RichOutput::fromLastExpression).reduce((a, b) -> b);
    }

    @Override
    public String toString() {
        return "CodeResult{" + language + ", " + step + " " + status.describe() + ", stdout=" + stdout.length()
                + " chars, stderr=" + stderr.length() + " chars, results=" + results.size() + ", plots=" + plots.size()
                + ", artifacts=" + artifacts.size() + error.map(e -> ", error=" + e.name()).orElse("")
                + (contextRestarted ? ", context restarted" : "") + ", " + duration.toMillis() + " ms}";
    }
}
