package io.paddock.network.internal;

import io.paddock.ErrorCode;
import io.paddock.SandboxException;
import io.paddock.SandboxId;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;

/**
 * Network slots, one per networked sandbox, host-wide: a file {@code <dir>/<slot>} created exclusively and
 * holding the sandbox id. Slot {@code n} owns {@code range.base + 4n … + 4n + 3}: the host side of its veth is
 * {@code +1} (the sandbox's gateway and resolver address), the sandbox {@code +2}. Files make slots visible
 * to every engine on the host (the CLI beside a daemon) and survive a crash, so a sweep finds the networks
 * of sandboxes that are gone.
 */
public final class Slots {
    private final Path dir;
    private final Cidr range;
    private final int count;

    public Slots(Path dir, Cidr range) {
        this.dir = dir;
        this.range = range;
        // Slot 0 would hold the range's network address; the last /30 its broadcast.
        this.count = (int) Math.min(1L << (32 - range.prefix() - 2), 1 << 20);
    }

    public Cidr range() {
        return range;
    }

    /** Takes a free slot for {@code id}. */
    public int acquire(SandboxId id) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot create " + dir + ": " + e);
        }
        int start = 1 + ThreadLocalRandom.current().nextInt(count - 2);
        for (int i = 0; i < count - 2; i++) {
            int slot = 1 + (start - 1 + i) % (count - 2);
            try {
                Files.writeString(dir.resolve(Integer.toString(slot)), id.value(), StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                return slot;
            } catch (FileAlreadyExistsException e) {
                // taken; try the next
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot take a network slot in " + dir + ": " + e);
            }
        }
        throw new SandboxException(ErrorCode.RESOURCE_EXHAUSTED, "every network slot of " + range + " is taken ("
                + (count - 2) + " networked sandboxes on this host)");
    }

    /** Frees {@code slot} if {@code id} holds it. */
    public void release(int slot, SandboxId id) {
        Path f = dir.resolve(Integer.toString(slot));
        if (holder(f).filter(id.value()::equals).isPresent()) {
            try {
                Files.deleteIfExists(f);
            } catch (IOException e) {
                throw new SandboxException(ErrorCode.INTERNAL, "cannot free network slot " + slot + ": " + e);
            }
        }
    }

    /** The slot {@code id} holds, if any. */
    public Optional<Integer> of(SandboxId id) {
        return all().entrySet().stream().filter(e -> e.getValue().equals(id.value())).map(Map.Entry::getKey).findFirst();
    }

    /** Every slot taken on this host, with its holder's id. */
    public Map<Integer, String> all() {
        Map<Integer, String> out = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                if (name.chars().allMatch(Character::isDigit) && !name.isEmpty()) {
                    holder(f).ifPresent(h -> out.put(Integer.parseInt(name), h));
                }
            }
        } catch (NoSuchFileException e) {
            return out;
        } catch (IOException e) {
            throw new SandboxException(ErrorCode.INTERNAL, "cannot list " + dir + ": " + e);
        }
        return out;
    }

    /** The lease file of {@code slot}. */
    public Path file(int slot) {
        return dir.resolve(Integer.toString(slot));
    }

    public java.net.Inet4Address gateway(int slot) {
        return range.address(4 * slot + 1);
    }

    public java.net.Inet4Address address(int slot) {
        return range.address(4 * slot + 2);
    }

    private static Optional<String> holder(Path f) {
        try {
            return Optional.of(Files.readString(f, StandardCharsets.UTF_8).trim());
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
