package io.paddock.image.internal.build;

import io.paddock.ImageStep;

import java.util.List;

/**
 * A parsed Dockerfile: its steps (the first is the {@link ImageStep.From}), the Dockerfile line each step
 * came from (the instruction's first line, for build logs and for errors found later, such as a
 * {@code COPY} source that matches nothing), and warnings to show the user (build arguments no {@code ARG}
 * declares, for example). Immutable.
 */
public record ParsedDockerfile(List<ImageStep> steps, List<Integer> lines, List<String> warnings) {
    public ParsedDockerfile {
        steps = List.copyOf(steps);
        lines = List.copyOf(lines);
        warnings = List.copyOf(warnings);
        if (steps.size() != lines.size()) {
            throw new IllegalArgumentException(steps.size() + " steps but " + lines.size() + " line numbers");
        }
        if (steps.isEmpty() || !(steps.get(0) instanceof ImageStep.From)) {
            throw new IllegalArgumentException("the first step must be FROM");
        }
    }

    /** The base image step. */
    public ImageStep.From from() {
        return (ImageStep.From) steps.get(0);
    }

    /** The Dockerfile line of step {@code index}. */
    public int line(int index) {
        return lines.get(index);
    }
}
