package io.paddock;

/** The type of a file in a sandbox. */
public enum FileType {
    FILE, DIRECTORY, SYMLINK, OTHER
}
