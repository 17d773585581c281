// Package netguard is vigil's destination guard: the one check that every
// outbound connection the host makes on someone else's behalf passes
// before it is made, whether it is a webhook POST to a recipient or a
// fetch issued for a sandboxed plugin (the issuer contract's
// destination_refused).
//
// What it owns: which IP addresses may be dialled. A Guard refuses every
// IANA special-purpose address that does not belong to the public
// internet (loopback, "this network", RFC 1918, CGNAT, link-local and with
// it the cloud metadata address 169.254.169.254, unique-local, multicast,
// broadcast, reserved, documentation, benchmarking, IETF protocol
// assignments, discard, unspecified), every IPv6 address outside global
// unicast (2000::/3), and every IPv6 form that embeds a refused IPv4
// address (IPv4-mapped, IPv4-compatible, NAT64, 6to4), unless one of the
// operator's allow prefixes contains the address.
//
// What it guarantees:
//   - Refusal is the default for anything it cannot read: an invalid
//     address, an "ip:port" that does not parse, a network that is not
//     tcp or udp. Every refusal is a *RefusedError, and answers
//     errors.Is(err, ErrRefused).
//   - The check runs where the connection is made. DialControl, installed
//     as net.Dialer.Control (Dialer does this), sees the address the
//     kernel is about to connect to, after name resolution, for every
//     attempt: each address of a multi-address name, each redirect, each
//     reconnect. A name that answered a public address when it was
//     screened and a private one when it is dialled (DNS rebinding) is
//     refused at the dial; so is a redirect to an internal address.
//   - Resolve checks every address a name answers with, and refuses the
//     name if any one of them is refused, so a caller can report
//     destination_refused before any request goes out.
//   - A Guard is immutable after New and safe for concurrent use; the
//     package has no mutable state of its own. A nil *Guard is a guard with
//     no allow prefixes.
//
// What it must never do:
//   - Decide by name. "localhost", "metadata.google.internal" and
//     "foo.internal" are not refused as names; whatever address they reach
//     is. A name list would be a second, drifting copy of what the address
//     check already decides. LiteralResolver is no exception: it answers
//     the address a name reaches without DNS ("localhost" is loopback by
//     RFC 6761, "2130706433" is 127.0.0.1 to inet_aton), and the guard
//     judges that address, so registration can refuse a destination that
//     every fetch would refuse, before anything is stored.
//   - Widen an allow prefix. A prefix lets through exactly the addresses it
//     contains (an IPv4 prefix also matches the IPv4-mapped form of its
//     addresses, which is the same address). It does not let through the
//     NAT64 or 6to4 forms of those addresses: they reach the address
//     through a translator the operator did not name, and an operator who
//     wants them allows their prefix too.
//   - Guard a dial it is not installed on. An http.Transport whose Proxy
//     is set dials the proxy, and the guard then checks the proxy's
//     address, not the destination's: callers set Transport.Proxy to nil.
//     A net.Resolver's own connections to its DNS server must not go
//     through a guarded dialer (the stub resolver is often on loopback).
//
// Why the check is on addresses and at dial time, and not only on the
// resolved name before the request: the issuer contract this host follows
// (seed 003) resolves and checks a name and then hands the name to the
// transport, which resolves again, and it states that the window between
// the two (DNS rebinding) stays open. Here both halves run: Resolve for a
// refusal that is decided before anything is sent, and DialControl so the
// window is closed, at the cost of one parse per dial.
//
// Why IPv6 outside 2000::/3 is refused wholesale rather than range by
// range: IANA has allocated only 2000::/3 as global unicast. Everything
// else is special-purpose (::1, fc00::/7, fe80::/10, ff00::/8, …) or
// unassigned, and an allow-by-default for unassigned space is how a new
// special range slips through. The exceptions are the forms that carry an
// IPv4 address (the well-known NAT64 prefix 64:ff9b::/96), which are judged
// by the address they carry.
//
// Rejected alternative: refusing with net.IP's IsPrivate, IsLoopback and
// friends. They miss CGNAT, the benchmarking, documentation and reserved
// ranges, NAT64 and 6to4, and an IPv6 address with a zone (fe80::1%eth0),
// which netip.Prefix.Contains does not match unless the zone is removed
// first; each miss is a way in.
package netguard
