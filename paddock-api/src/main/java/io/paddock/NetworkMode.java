package io.paddock;

/** What network a sandbox gets. */
public enum NetworkMode {
    /** A network namespace of its own with only the loopback interface: nothing in, nothing out. The default. */
    NONE
}
