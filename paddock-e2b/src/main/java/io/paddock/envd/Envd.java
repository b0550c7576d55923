package io.paddock.envd;

import io.paddock.Sandbox;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Map;

/**
 * PLACEHOLDER until branch envd (module paddock-envd) is merged: the interface agreed with it, answering every
 * call with Connect's "unimplemented". Deleted by the merge.
 */
public final class Envd {
    public Envd() {
    }

    public static boolean owns(String path) {
        return path.startsWith("/process.Process/") || path.startsWith("/filesystem.Filesystem/");
    }

    public void serve(Sandbox sb, String path, Map<String, String> headers, InputStream body, Response out) throws IOException {
        body.readAllBytes();
        out.start(501, Map.of("Content-Type", "application/json"));
        out.body().write(("{\"code\":\"unimplemented\",\"message\":\"" + path + " is not served by this build\"}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    public interface Response {
        void start(int status, Map<String, String> headers) throws IOException;

        OutputStream body();
    }
}
