package io.paddock;

/** What network a sandbox gets; see {@link NetworkPolicy}. */
public enum NetworkMode {
    /** A network namespace of its own with only the loopback interface: nothing in, nothing out. The default. */
    NONE,
    /** Egress only to the policy's CIDRs and to the addresses Paddock's resolver returned for its domains. */
    ALLOW,
    /** Egress to every public address; private ranges, the host and other sandboxes stay denied. */
    OPEN
}
