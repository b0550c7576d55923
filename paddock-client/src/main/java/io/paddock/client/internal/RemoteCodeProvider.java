package io.paddock.client.internal;

import io.paddock.Sandbox;
import io.paddock.code.CodeInterpreter;
import io.paddock.code.CodeOptions;
import io.paddock.code.Languages;
import io.paddock.code.spi.CodeInterpreterProvider;

import java.util.Optional;

/**
 * Makes {@code CodeInterpreter.of(sandbox)} keep contexts and shells in the daemon when {@code sandbox} came
 * from {@code Paddock.connect(…)}: the interpreter calls the daemon's {@code /v1/sandboxes/{id}/code/…}
 * endpoints. Declines other sandboxes, and options with a language table other than the default one (the
 * daemon runs its own table; the built-in interpreter, driving the remote sandbox, serves custom tables).
 * Public only because {@link java.util.ServiceLoader} needs it; not for application use. Only loaded when
 * paddock-code, an optional dependency of this client, is on the class path.
 */
public final class RemoteCodeProvider implements CodeInterpreterProvider {
    @Override
    public Optional<CodeInterpreter> open(Sandbox sandbox, CodeOptions options) {
        CodeOptions o = options == null ? CodeOptions.defaults() : options;
        if (!(sandbox instanceof RemoteSandbox remote) || o.languages() != Languages.defaults()) {
            return Optional.empty();
        }
        return Optional.of(new RemoteCodeInterpreter(remote, o));
    }
}
