package io.paddock.code.internal;

import io.paddock.ErrorCode;
import io.paddock.Sandbox;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The in-sandbox helpers (kernels, run wrapper, matplotlib backend), uploaded once per sandbox through
 * {@code sandbox.files()} into a directory named by their content hash, so that any image with the
 * toolchains works and a new Paddock version never uses an old copy.
 */
final class Helpers {
    static final String STATE = "/tmp/.paddock-code";
    private static final List<String> FILES = List.of("py/_paddock_cell.py", "py/_paddock_kernel.py",
            "py/_paddock_run.py", "py/_paddock_mpl.py", "js/_paddock_kernel.js", "js/_paddock_worker.js");
    private static final Map<String, byte[]> CONTENT = load();
    static final String DIR = STATE + "/h-" + hash(CONTENT);

    private Helpers() {
    }

    /** Uploads the helpers unless this sandbox already has them. */
    static void ensure(Sandbox sandbox) {
        String done = DIR + "/.complete";
        if (sandbox.files().exists(done)) {
            return;
        }
        for (Map.Entry<String, byte[]> e : CONTENT.entrySet()) {
            sandbox.files().write(DIR + "/" + e.getKey(), e.getValue());
        }
        sandbox.files().write(done, new byte[0]);
    }

    private static Map<String, byte[]> load() {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (String f : FILES) {
            String res = "/io/paddock/code/helpers/" + f;
            try (InputStream in = Helpers.class.getResourceAsStream(res)) {
                if (in == null) {
                    throw new SandboxException(ErrorCode.INTERNAL, "helper " + res + " is missing from the jar");
                }
                out.put(f, in.readAllBytes());
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot read helper " + res + ": " + e.getMessage(), e);
            }
        }
        return out;
    }

    private static String hash(Map<String, byte[]> content) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Map.Entry<String, byte[]> e : content.entrySet()) {
                md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
                md.update((byte) 0);
                md.update(e.getValue());
            }
            return HexFormat.of().formatHex(md.digest()).substring(0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
