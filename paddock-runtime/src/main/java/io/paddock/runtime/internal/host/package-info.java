/**
 * The fenced place for privileged host operations: every process Paddock spawns on the host (runc,
 * mkfifo), every cgroupfs write and every signal sent to a host pid lives in this package, and an
 * architecture test forbids them elsewhere. Keep it small and enumerable.
 *
 * <p>Rules: argv lists only (never a shell), the environment cleared and rebuilt from {@link
 * io.paddock.runtime.internal.host.HostProcess#BASE_ENV}, bounded waits, and errors that say what failed
 * and how to fix it.
 */
package io.paddock.runtime.internal.host;
