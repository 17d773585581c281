// Package netguard is vigil's destination guard: the one check that every
// outbound connection the host makes on someone else's behalf passes
// before it is made, a webhook POST to a recipient or a fetch issued for a
// sandboxed plugin.
//
// What it owns: which IP addresses may be dialled. A Guard refuses every
// IANA special-purpose address that is not the public internet (loopback,
// RFC 1918, CGNAT, link-local with the cloud metadata address,
// unique-local, multicast, documentation, benchmarking, reserved, …),
// every IPv6 address outside global unicast (2000::/3), and every IPv6
// form that embeds a refused IPv4 address (mapped, compatible, NAT64,
// 6to4), unless an operator's allow prefix contains the address. Refusal
// is the default for anything it cannot read; every refusal is a
// *RefusedError answering errors.Is(err, ErrRefused). DialControl checks
// the address the kernel is about to connect to, for every attempt, so
// DNS rebinding and a redirect to an internal address are refused at the
// dial; Resolve refuses a name if any address it answers is refused, for
// a refusal decided before anything is sent; LiteralResolver answers what
// a name reaches without DNS, for registration's checks.
//
// What it must never do: decide by name (whatever address a name reaches
// is judged, never the name); widen an allow prefix (it does not let
// through the NAT64 or 6to4 forms of what it contains); guard a dial it is
// not installed on (callers set an http.Transport's Proxy to nil, and keep
// a resolver's own connections off a guarded dialer).
//
// Rejected: refusing with net.IP's IsPrivate, IsLoopback and friends. They
// miss CGNAT, the benchmarking, documentation and reserved ranges, NAT64
// and 6to4, and an IPv6 address with a zone, which netip.Prefix.Contains
// does not match unless the zone is removed first; each miss is a way in.
package netguard
