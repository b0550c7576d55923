package io.paddock.mcp;

import io.paddock.Paddock;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;

/** The stdio server over an embedded engine, as {@code paddock mcp} runs it: the clients in the tests spawn it. */
public final class StdioTestMain {
    private StdioTestMain() {
    }

    public static void main(String[] args) throws Exception {
        OutputStream protocol = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true)); // stdout is the protocol's
        try (Paddock paddock = Paddock.local()) {
            PaddockMcp.serveStdio(paddock, System.in, protocol);
        }
    }

    /** The argv that starts it with this JVM's java and class path. */
    public static java.util.List<String> command() {
        return java.util.List.of(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-cp", System.getProperty("java.class.path"), StdioTestMain.class.getName());
    }
}
