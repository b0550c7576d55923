package io.paddock.runtime.internal.bundle;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Leases of host uid/gid ranges, one per sandbox, so that no two sandboxes share a host uid (a process that
 * broke out of one sandbox is still a stranger to every other). A lease is a file {@code <dir>/<slot>}
 * created exclusively and holding the sandbox id; slot {@code n} owns host ids
 * {@code base + n * 65536 … base + n * 65536 + 65535}. Files make leases visible to every engine on the
 * host and survive a crash, so the reconciler can release the leases of sandboxes that are gone.
 *
 * <p>The range after the last slot's holds one more id per slot: {@link #sentryId} of slot {@code n} is
 * {@code base + slots * 65536 + n}, the host uid of that sandbox's gVisor Sentry, which runs outside the
 * sandbox's range (runsc gives it an id of its own user namespace, see {@code src/main/c/runsc_userns.c}).
 */
public final class UidLeases {
    public static final long DEFAULT_BASE = 0x4000_0000L;
    /** With {@link #DEFAULT_BASE}: every range, and the Sentries' ids after them, below 2^31. */
    public static final int DEFAULT_SLOTS = 16383;
    static final long RANGE = 65536;

    private final Path dir;
    private final long base;
    private final int slots;

    public UidLeases(Path dir, long base, int slots) {
        if (slots < 1 || slots > RANGE || base + (slots + 1) * RANGE > 0xFFFF_FFFFL) {
            throw new IllegalArgumentException("uid leases: " + slots + " slots from " + base + " do not fit below (uid_t) -1");
        }
        this.dir = dir;
        this.base = base;
        this.slots = slots;
    }

    public long firstId(int slot) {
        return base + slot * RANGE;
    }

    /**
     * The host uid (and gid) of the gVisor Sentry of the sandbox whose range starts at {@code firstId}: an id of
     * its own, in no sandbox's range.
     */
    public long sentryId(long firstId) {
        long slot = (firstId - base) / RANGE;
        if (firstId < base || (firstId - base) % RANGE != 0 || slot >= slots) {
            throw new IllegalArgumentException(firstId + " is not the first id of a slot of " + base + "+" + slots + "*" + RANGE);
        }
        // An engine from before the Sentries had ids of their own leased this range to a sandbox as one more slot.
        Path legacy = dir.resolve(Integer.toString(slots));
        if (Files.exists(legacy)) {
            throw new SandboxException(ErrorCode.FAILED_PRECONDITION, "the host ids of gVisor Sentries ("
                    + (base + slots * RANGE) + "+" + slots + ") are leased to sandbox " + readQuietly(legacy)
                    + " by an older Paddock; destroy that sandbox to start gVisor sandboxes on this host");
        }
        return base + slots * RANGE + slot;
    }

    private static String readQuietly(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    /** Takes a free slot for this sandbox. */
    public int acquire(SandboxId id) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot create " + dir + ": " + e);
        }
        int start = ThreadLocalRandom.current().nextInt(slots);
        for (int i = 0; i < slots; i++) {
            int slot = (start + i) % slots;
            try {
                Files.writeString(dir.resolve(Integer.toString(slot)), id.value(), StandardCharsets.UTF_8,
                        java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE);
                return slot;
            } catch (FileAlreadyExistsException e) {
                // taken; try the next
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot lease a uid range in " + dir + ": " + e);
            }
        }
        throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "all " + slots + " host uid ranges are in use");
    }

    /** Releases the slot if (and only if) it is leased to this sandbox. */
    public void release(int slot, SandboxId id) {
        Path p = dir.resolve(Integer.toString(slot));
        try {
            if (Files.readString(p, StandardCharsets.UTF_8).equals(id.value())) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // already released
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot release uid lease " + p + ": " + e);
        }
    }

    /** Releases every slot leased to this sandbox (used when the slot number was lost in a crash). */
    public void releaseAll(SandboxId id) {
        try (var files = Files.list(dir)) {
            for (Path p : files.toList()) {
                try {
                    if (Files.readString(p, StandardCharsets.UTF_8).equals(id.value())) {
                        Files.deleteIfExists(p);
                    }
                } catch (IOException e) {
                    // raced with another release
                }
            }
        } catch (NoSuchFileException e) {
            // nothing leased yet
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot scan uid leases in " + dir + ": " + e);
        }
    }
}
