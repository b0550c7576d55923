/**
 * Egress secrets: credentials a sandbox uses without ever holding them.
 *
 * <p>A sandbox created with {@code --egress-secret KEY@api.example.com} sees only a placeholder in {@code KEY}
 * ({@code paddock-egress-<32 hex>}). Its connections to ports 443 and 80 of the addresses Paddock's resolver gave it
 * for {@code api.example.com} are redirected (nftables DNAT) to the daemon's {@link
 * io.paddock.network.internal.egress.EgressProxy}, which terminates TLS with a certificate from the daemon's {@link
 * io.paddock.network.internal.egress.CertificateAuthority} (which the sandbox trusts), replaces the placeholder by the
 * value in the request's header fields, and sends the request to the real {@code api.example.com} over TLS that
 * verifies it. The value exists only in the daemon: not in the sandbox's environment, files or memory, and never in a
 * log or a listing.
 *
 * <p>What it does not protect: an upstream that echoes the credential back (an error page quoting the
 * {@code Authorization} header, an echo service) hands it to the sandbox; allowlisting a host with a secret is
 * trusting it not to. And the sandbox can use the secret, against that host, as much as it likes: that is the point.
 */
package io.paddock.network.internal.egress;
