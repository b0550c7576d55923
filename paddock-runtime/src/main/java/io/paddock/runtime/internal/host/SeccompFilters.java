package io.paddock.runtime.internal.host;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.internal.NativeResource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Seccomp profiles compiled once to the BPF program the kernel loads ({@code paddock-seccomp}, see
 * {@code src/main/c/seccomp_compile.c}), kept as {@code <dir>/<sha256 of the profile>.bpf}, read-only: the runc
 * tier's init installs it instead of runc compiling the profile in every container.
 */
public final class SeccompFilters {
    private final Path compiler;
    private final Path dir;
    private final ConcurrentHashMap<String, Path> compiled = new ConcurrentHashMap<>();

    public SeccompFilters(Path compiler, Path dir) {
        this.compiler = compiler;
        this.dir = dir;
    }

    /**
     * The program of this profile ({@code SeccompProfile#compilerInput}), compiled on first use.
     *
     * @throws SandboxException INTERNAL with the compiler's reason (no libseccomp, an unknown name in the profile)
     */
    public Path of(String profile) {
        Path p = compiled.get(profile);
        if (p == null || !Files.isRegularFile(p)) { // made again if someone removed it while the engine ran
            p = compile(profile);
            compiled.put(profile, p);
        }
        return p;
    }

    private Path compile(String profile) {
        try {
            Path out = dir.resolve(NativeResource.sha256Hex(profile.getBytes(StandardCharsets.UTF_8)) + ".bpf");
            if (Files.isRegularFile(out) && Files.size(out) > 0 && Files.size(out) % 8 == 0) {
                return out;
            }
            Files.createDirectories(dir);
            Path tmp = dir.resolve("." + out.getFileName() + "." + ProcessHandle.current().pid() + "." + System.nanoTime());
            HostProcess.Result r = HostProcess.run(List.of(compiler.toString(), tmp.toString()),
                    profile.getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(30));
            if (!r.ok()) {
                Files.deleteIfExists(tmp);
                throw new SandboxException(ErrorCode.INTERNAL, "cannot compile the seccomp profile: " + r.output().strip());
            }
            try {
                Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | AtomicMoveNotSupportedException e) {
                Files.deleteIfExists(tmp); // another engine made the same one
            }
            return out;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot keep the compiled seccomp profile in " + dir + ": " + e, e);
        }
    }
}
