package io.paddock.image.internal.layer;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@link Whiteouts#MKNOD}: one {@code mknod} process per whiteout. Layers hold few whiteouts, so the cost of
 * a process each (about a millisecond) does not matter. The program is looked up at fixed places, never
 * through {@code PATH}, and runs with an empty environment.
 */
final class MknodWhiteouts implements Whiteouts {
    private static final List<Path> CANDIDATES = List.of(Path.of("/usr/bin/mknod"), Path.of("/bin/mknod"));
    private static final long TIMEOUT_SECONDS = 30;
    private static final int MAX_OUTPUT = 4096;

    @Override
    public void create(Path path) {
        Path program = CANDIDATES.stream().filter(Files::isExecutable).findFirst()
                .orElseThrow(() -> new SandboxException(ErrorCode.INTERNAL,
                        "cannot create whiteout " + path + ": no mknod program at " + CANDIDATES));
        // An absolute path never starts with '-', so mknod cannot read it as an option.
        ProcessBuilder pb = new ProcessBuilder(program.toString(), path.toAbsolutePath().toString(), "c", "0", "0")
                .redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.environment().clear();
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot run " + program + ": " + e.getMessage(), e);
        }
        try (InputStream out = process.getInputStream()) {
            // mknod writes at most one line, far less than a pipe holds, so waiting first cannot block it.
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new SandboxException(ErrorCode.INTERNAL, "mknod " + path + " did not finish in "
                        + TIMEOUT_SECONDS + " s");
            }
            if (process.exitValue() != 0) {
                String output = new String(out.readNBytes(MAX_OUTPUT), StandardCharsets.UTF_8).strip();
                throw new SandboxException(ErrorCode.INTERNAL, "mknod " + path + " c 0 0 failed (exit "
                        + process.exitValue() + "): " + output);
            }
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot read mknod's output: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new SandboxException(ErrorCode.INTERNAL, "interrupted while creating whiteout " + path, e);
        }
    }
}
