package io.paddock.server.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.paddock.Sandbox;
import io.paddock.code.CodeContext;
import io.paddock.code.CodeListener;
import io.paddock.code.CodePolicy;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.Languages;
import io.paddock.code.ShellResult;
import io.paddock.code.ShellSession;
import io.paddock.code.internal.CodeWire;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The code layer's endpoints ({@code /v1/sandboxes/{id}/code/…}): translates JSON to the sandbox's
 * {@code CodeInterpreter} in the {@link CodeRegistry} and back. A request may name a policy preset
 * ({@code "policy": "standard"}) that is checked before anything runs: {@code 403} listing the violations.
 * Thread-safe.
 */
final class CodeApi {
    /** What an endpoint answers: a status, a JSON body (null for none) and an optional Location. */
    record Reply(int status, JsonNode body, String location) {
        static Reply ok(JsonNode body) {
            return new Reply(200, body, null);
        }
    }

    private static final Set<String> CONTEXT_FIELDS = Set.of("language", "name");
    private static final Set<String> INSTALL_FIELDS = Set.of("language", "packages", "source");
    private static final Set<String> CHECK_FIELDS = Set.of("language", "code", "policy");
    private static final Set<String> SHELL_FIELDS = Set.of("env");
    private static final Set<String> SHELL_EXEC_FIELDS = Set.of("command", "timeout_ms", "policy");
    /** The policy {@code …/code/check} applies when the request names none. */
    private static final String DEFAULT_CHECK_POLICY = "standard";

    private final CodeRegistry registry;

    CodeApi(CodeRegistry registry) {
        this.registry = registry;
    }

    /** Every row of the table, whatever a sandbox's image has ({@code /v1/sandboxes/{id}/code/languages} says that). */
    static JsonNode languages() {
        return CodeWire.json(Languages.defaults());
    }

    /** Serves one code route for {@code sb}; {@code body} is the parsed JSON of a POST, null otherwise. */
    Reply handle(Route route, Map<String, String> params, Sandbox sb, JsonNode body) {
        String base = "/v1/sandboxes/" + sb.id().value() + "/code";
        return switch (route) {
            case CODE_RUN, RUN_CELL -> Reply.ok(CodeWire.json(run(route, params, sb, body, CodeListener.NONE)));
            case CODE_CHECK -> {
                CodeWire.onlyFields(body, "a check request", CHECK_FIELDS);
                CodePolicy policy = CodeWire.policy(body).orElseGet(() -> CodePolicy.preset(DEFAULT_CHECK_POLICY));
                String language = CodeWire.requiredText(body, "language");
                String code = CodeWire.requiredText(body, "code");
                yield Reply.ok(CodeWire.violations(Optional.of(policy), policy.check(Languages.defaults().get(language), code)));
            }
            case CODE_INSTALL -> {
                CodeWire.onlyFields(body, "an install request", INSTALL_FIELDS);
                String language = CodeWire.requiredText(body, "language");
                yield Reply.ok(CodeWire.json(registry.interpreter(sb).install(language,
                        CodeWire.optionalStrings(body, "packages"), CodeWire.optionalText(body, "source").orElse(null))));
            }
            case SANDBOX_LANGUAGES -> Reply.ok(CodeWire.json(Languages.of(registry.interpreter(sb).availableLanguages())));
            case LIST_CONTEXTS -> Reply.ok(CodeWire.contextList(registry.interpreter(sb).contexts()));
            case CREATE_CONTEXT -> {
                CodeWire.onlyFields(body, "a context request", CONTEXT_FIELDS);
                CodeContext c = registry.interpreter(sb).createContext(CodeWire.requiredText(body, "language"),
                        CodeWire.optionalText(body, "name").orElse(null));
                yield new Reply(201, CodeWire.json(c.info()), base + "/contexts/" + c.id());
            }
            case GET_CONTEXT -> Reply.ok(CodeWire.json(context(sb, params).info()));
            case DELETE_CONTEXT -> {
                registry.interpreter(sb).removeContext(params.get("context"));
                yield new Reply(204, null, null);
            }
            case RESTART_CONTEXT -> {
                CodeContext c = context(sb, params);
                c.restart();
                yield Reply.ok(CodeWire.json(c.info()));
            }
            case CREATE_SHELL -> {
                CodeWire.onlyFields(body, "a shell request", SHELL_FIELDS);
                String id = registry.openShell(sb, CodeWire.optionalStringMap(body, "env"));
                yield new Reply(201, shell(id, registry.shell(sb, id)), base + "/shells/" + id);
            }
            case GET_SHELL -> Reply.ok(shell(params.get("shell"), registry.shell(sb, params.get("shell"))));
            case DELETE_SHELL -> {
                registry.closeShell(sb, params.get("shell"));
                yield new Reply(204, null, null);
            }
            case SHELL_EXEC -> {
                CodeWire.onlyFields(body, "a shell command", SHELL_EXEC_FIELDS);
                String command = CodeWire.requiredText(body, "command");
                Optional<Duration> timeout = CodeWire.optionalMillis(body, "timeout_ms");
                ShellSession s = registry.shell(sb, params.get("shell"));
                enforce(body, "bash", command);
                ShellResult r = timeout.isPresent() ? s.exec(command, timeout.get()) : s.exec(command);
                yield Reply.ok(CodeWire.json(r));
            }
            default -> throw new IllegalArgumentException("not a code route: " + route);
        };
    }

    /**
     * Runs the code of a {@code CODE_RUN} or {@code RUN_CELL} request, telling {@code listener} its output as it
     * happens (a streamed answer's events); every check (the body, the context, the policy) comes first.
     */
    CodeResult run(Route route, Map<String, String> params, Sandbox sb, JsonNode body, CodeListener listener) {
        CodeRequest r = CodeWire.request(body);
        if (route == Route.CODE_RUN) {
            enforce(body, r.language().orElse(null), r.code());
            return registry.interpreter(sb).run(r, listener);
        }
        if (route != Route.RUN_CELL) {
            throw new IllegalArgumentException("not a run route: " + route);
        }
        CodeContext c = context(sb, params);
        enforce(body, c.language(), r.code());
        return c.run(r, listener);
    }

    private CodeContext context(Sandbox sb, Map<String, String> params) {
        return registry.interpreter(sb).context(params.get("context"));
    }

    private static JsonNode shell(String id, ShellSession s) {
        return CodeWire.shell(id, s.env(), s.isAlive());
    }

    /** Checks the code against the policy preset the request names, if any ({@code PERMISSION_DENIED}). */
    private static void enforce(JsonNode body, String language, String code) {
        Optional<CodePolicy> policy = CodeWire.policy(body);
        if (policy.isPresent()) {
            policy.get().enforce(Languages.defaults().get(language), code);
        }
    }
}
