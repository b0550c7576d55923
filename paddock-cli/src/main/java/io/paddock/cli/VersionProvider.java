package io.paddock.cli;

import picocli.CommandLine;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** Prints the version baked in at build time. */
final class VersionProvider implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
        Properties p = new Properties();
        try (InputStream in = VersionProvider.class.getResourceAsStream("/io/paddock/cli/version.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        return new String[] {"paddock " + p.getProperty("version", "unknown")
                + " (Java " + System.getProperty("java.version") + ", " + System.getProperty("os.arch") + ")"};
    }
}
