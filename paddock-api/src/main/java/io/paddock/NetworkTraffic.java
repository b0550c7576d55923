package io.paddock;

/**
 * What a sandbox sent and received over its network interface, counted on the host side of it (so it
 * includes DNS queries to Paddock's resolver and traffic the policy refused).
 *
 * @param txBytes bytes the sandbox sent
 * @param rxBytes bytes it received
 */
public record NetworkTraffic(long txBytes, long rxBytes) {
}
