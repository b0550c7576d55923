package io.paddock;

import java.util.List;

/**
 * How a directory is uploaded as a codebase.
 *
 * @param ignore      extra gitignore-style patterns, applied after the directory's own ignore files
 * @param maxFileSize files larger than this are left out (and reported)
 */
public record CodebaseOptions(List<String> ignore, ByteSize maxFileSize) {
    public static final CodebaseOptions DEFAULT = new CodebaseOptions(List.of(), ByteSize.mib(50));

    public CodebaseOptions {
        ignore = List.copyOf(ignore);
        if (ignore.size() > 1024) {
            throw SandboxException.invalid("ignore", "at most 1024 patterns");
        }
        for (String p : ignore) {
            if (p.isEmpty() || p.length() > 4096 || p.indexOf('\n') >= 0 || p.indexOf('\0') >= 0) {
                throw SandboxException.invalid("ignore", "'" + p + "' is not an ignore pattern");
            }
        }
        if (maxFileSize == null || maxFileSize.bytes() < 1) {
            throw SandboxException.invalid("max_file_size", "must be at least 1 byte");
        }
    }
}
