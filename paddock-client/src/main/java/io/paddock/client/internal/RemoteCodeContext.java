package io.paddock.client.internal;

import io.paddock.code.CodeContext;
import io.paddock.code.CodeListener;
import io.paddock.code.CodeRequest;
import io.paddock.code.CodeResult;
import io.paddock.code.ContextInfo;

import java.util.Optional;

/**
 * A handle on a context in the daemon, addressed by its id. Several handles (from several clients) may
 * name one context; the daemon runs their cells one at a time. Thread-safe: immutable.
 */
final class RemoteCodeContext implements CodeContext {
    private final RemoteCodeInterpreter owner;
    private final String id;
    private final Optional<String> name;
    private final String language;
    private final String path;

    RemoteCodeContext(RemoteCodeInterpreter owner, ContextInfo info) {
        this.owner = owner;
        this.id = info.id();
        this.name = info.name();
        this.language = info.language();
        this.path = owner.contextPath(id);
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public Optional<String> name() {
        return name;
    }

    @Override
    public String language() {
        return language;
    }

    @Override
    public ContextInfo info() {
        return owner.info(id);
    }

    @Override
    public CodeResult run(CodeRequest cell, CodeListener listener) {
        owner.checkOpen();
        owner.enforce(owner.options().languages().get(language), cell.code());
        return owner.send(path + "/run", cell, listener);
    }

    @Override
    public void restart() {
        owner.checkOpen();
        owner.http().call("POST", path + "/restart", null, null, Http.CONTROL_TIMEOUT);
    }

    /** Removes the context in the daemon; idempotent (a context already gone counts as removed). */
    @Override
    public void close() {
        owner.http().deleteIfPresent(path);
    }

    @Override
    public String toString() {
        return "CodeContext[" + id + name.map(n -> " " + n).orElse("") + ", " + language + ", remote]";
    }
}
