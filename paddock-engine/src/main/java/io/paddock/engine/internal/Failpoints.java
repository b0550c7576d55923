package io.paddock.engine.internal;

/**
 * Named points where a test can make the engine's process die at once, as a crash would (ATTACKS.md R2,
 * R3). Off unless the JVM runs with {@code -Dpaddock.failpoint=NAME}; then reaching NAME halts the JVM
 * with status 137 without running shutdown hooks.
 */
final class Failpoints {
    private static final String ARMED = System.getProperty("paddock.failpoint", "");

    private Failpoints() {
    }

    static void hit(String name) {
        if (!ARMED.isEmpty() && ARMED.equals(name)) {
            System.err.println("paddock: failpoint " + name + " reached; halting");
            System.err.flush();
            Runtime.getRuntime().halt(137);
        }
    }
}
