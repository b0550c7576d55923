package io.paddock.code;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.util.List;
import java.util.stream.Collectors;

/**
 * Code refused by a {@link CodePolicy}: {@code PERMISSION_DENIED}, carrying the violations. Nothing ran.
 * A policy is a convenience, not a security boundary; see {@link CodePolicy}.
 */
public class CodePolicyException extends SandboxException {
    private static final long serialVersionUID = 1L;

    private final String policy;
    private final transient List<CodePolicy.Violation> violations;

    public CodePolicyException(String policy, String language, List<CodePolicy.Violation> violations) {
        super(ErrorCode.PERMISSION_DENIED, "code refused by policy '" + policy + "' (" + language + "): "
                + violations.stream().map(CodePolicy.Violation::toString).collect(Collectors.joining("; ")));
        this.policy = policy;
        this.violations = List.copyOf(violations);
    }

    public String policy() {
        return policy;
    }

    public List<CodePolicy.Violation> violations() {
        return violations;
    }
}
