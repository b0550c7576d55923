package io.paddock.cli;

import io.paddock.ErrorCode;
import io.paddock.FileInfo;
import io.paddock.Paddock;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import io.paddock.SandboxFiles;
import io.paddock.internal.Printable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Callable;
import java.util.stream.Stream;

/**
 * {@code paddock cp}: copies files and directories between this machine and a sandbox, in either
 * direction. Names coming out of a sandbox are untrusted (ATTACKS.md A27): each must be a single path
 * component, symlinks are not followed or recreated, and nothing is written outside the destination.
 */
@Command(name = "cp", description = {"Copy files or directories between a local path and SANDBOX:PATH, in either direction.",
        "SANDBOX is an id or a name; PATH is absolute or relative to the sandbox's workdir."},
        footer = {"", "Examples:", "  paddock cp ./data.csv $id:/workspace/", "  paddock cp $id:/workspace/out ./results"})
final class CopyCommand implements Callable<Integer> {
    @Mixin
    Connection connection;

    @Parameters(index = "0", paramLabel = "SRC")
    String source;

    @Parameters(index = "1", paramLabel = "DST")
    String destination;

    record Remote(String sandbox, String path) {
        static Remote parse(String s) {
            int colon = s.indexOf(':');
            if (colon <= 0 || s.startsWith("/") || s.startsWith(".")) {
                return null;
            }
            String path = s.substring(colon + 1);
            return new Remote(s.substring(0, colon), path.isEmpty() ? "." : path);
        }
    }

    @Override
    public Integer call() throws IOException {
        Remote from = Remote.parse(source);
        Remote to = Remote.parse(destination);
        if ((from == null) == (to == null)) {
            throw SandboxException.invalid("cp", "exactly one of SRC and DST must be SANDBOX:PATH");
        }
        try (Paddock paddock = connection.connect()) {
            if (to != null) {
                Sandbox sb = Connection.find(paddock, to.sandbox());
                upload(sb.files(), Path.of(source), to.path());
            } else {
                Sandbox sb = Connection.find(paddock, from.sandbox());
                download(sb.files(), from.path(), Path.of(destination));
            }
        }
        return 0;
    }

    private static void upload(SandboxFiles files, Path local, String remote) throws IOException {
        if (!Files.exists(local, LinkOption.NOFOLLOW_LINKS)) {
            throw new SandboxException(ErrorCode.NOT_FOUND, local + ": no such file or directory");
        }
        String target = remote.equals(".") ? local.getFileName().toString() : remote;
        if (remote.endsWith("/") || isRemoteDir(files, remote)) {
            target = join(remote, local.getFileName().toString());
        }
        if (Files.isDirectory(local, LinkOption.NOFOLLOW_LINKS)) {
            files.mkdir(target);
            try (Stream<Path> children = Files.list(local)) {
                for (Path child : children.sorted().toList()) {
                    upload(files, child, join(target, child.getFileName().toString()));
                }
            }
        } else if (Files.isRegularFile(local, LinkOption.NOFOLLOW_LINKS)) {
            try (InputStream in = Files.newInputStream(local)) {
                files.write(target, in);
            }
        } else {
            System.err.println("paddock: skipping " + Printable.name(local.toString()) + ": not a regular file or directory");
        }
    }

    private static boolean isRemoteDir(SandboxFiles files, String remote) {
        try {
            return files.stat(remote).isDirectory();
        } catch (SandboxException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    private static void download(SandboxFiles files, String remote, Path local) throws IOException {
        FileInfo info = files.stat(remote);
        Path target = Files.isDirectory(local) ? local.resolve(safeName(info.name())) : local;
        copyDown(files, remote, info, target);
    }

    private static void copyDown(SandboxFiles files, String remote, FileInfo info, Path target) throws IOException {
        switch (info.type()) {
            case DIRECTORY -> {
                Files.createDirectories(target);
                for (FileInfo child : files.list(remote)) {
                    Path childTarget = target.resolve(safeName(child.name())).normalize();
                    if (!childTarget.getParent().equals(target.normalize())) {
                        throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "refusing entry '" + child.name() + "'");
                    }
                    copyDown(files, join(remote, child.name()), child, childTarget);
                }
            }
            case FILE -> {
                Path tmp = Files.createTempFile(target.toAbsolutePath().getParent(), ".paddock-cp-", ".part");
                try (InputStream in = files.openRead(remote)) {
                    Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                    Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                } finally {
                    Files.deleteIfExists(tmp);
                }
            }
            default -> System.err.println("paddock: skipping " + Printable.name(remote.toString()) + ": " + info.type().name().toLowerCase()
                    + " (only regular files and directories are copied)");
        }
    }

    /** A name from inside a sandbox, checked to be one harmless path component. */
    static String safeName(String name) {
        if (name.isEmpty() || name.equals(".") || name.equals("..") || name.contains("/") || name.indexOf('\0') >= 0) {
            throw new SandboxException(ErrorCode.INVALID_ARGUMENT, "refusing unsafe file name from the sandbox: '"
                    + name.replaceAll("\\p{Cntrl}", "?") + "'");
        }
        return name;
    }

    private static String join(String dir, String name) {
        return dir.endsWith("/") ? dir + name : dir + "/" + name;
    }
}
