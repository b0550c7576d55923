package io.paddock.client.internal;

import io.paddock.Paddock;
import io.paddock.server.PaddockServer;
import io.paddock.server.ServerOptions;

import java.net.URI;
import java.security.SecureRandom;
import java.util.HexFormat;

/** A real daemon on loopback over a real embedded engine, for tests and the latency tool. */
final class LoopbackDaemon implements AutoCloseable {
    final Paddock engine;
    final PaddockServer server;
    final String token;

    private LoopbackDaemon(Paddock engine, PaddockServer server, String token) {
        this.engine = engine;
        this.server = server;
        this.token = token;
    }

    static LoopbackDaemon start() {
        return start(ServerOptions.builder());
    }

    /** Starts the engine and a server on a free loopback port with a random token (set here). */
    static LoopbackDaemon start(ServerOptions.Builder options) {
        byte[] random = new byte[24];
        new SecureRandom().nextBytes(random);
        String token = "test-" + HexFormat.of().formatHex(random);
        Paddock engine = Paddock.local();
        try {
            PaddockServer server = PaddockServer.start(options.host("127.0.0.1").port(0).token(token).build(), engine);
            return new LoopbackDaemon(engine, server, token);
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
    }

    URI url() {
        return server.url();
    }

    Paddock connect() {
        return Paddock.connect(server.url(), token);
    }

    @Override
    public void close() {
        try {
            server.close();
        } finally {
            engine.close();
        }
    }
}
