// Package webhooks is the signing half of vigil's webhook contract: the
// Standard Webhooks scheme (webhook-id, webhook-timestamp,
// webhook-signature; HMAC-SHA256 over id "." timestamp "." body) that the
// host signs every POST with and a recipient verifies it with.
// docs/webhooks.md is the prose version, with a test vector.
//
// What it owns: ParseSecret and CheckSecret (a secret is "whsec_" and the
// canonical base64 of its key; a new endpoint's key is 24 to 64 bytes),
// Sign, Headers and Verify, whose refusals are typed (ErrMissingHeaders,
// ErrTimestamp, ErrSignature) and compare signatures with hmac.Equal. It
// is a leaf (the standard library only), so a recipient imports it without
// the host, and both sides run the same code.
//
// What it must never do: repair a secret (a trailing newline is an error,
// not a different key); accept an ambiguous signed string (an id of 1 to
// 256 of [A-Za-z0-9_-], a timestamp of plain decimal digits); put the
// secret, the key or the expected signature in an error; read the clock
// (the caller passes now); remember ids (a receiver deduplicates on
// webhook-id).
//
// Rejected: signing with the secret string itself, as some senders do.
// The scheme keys the HMAC with the decoded bytes, and following it
// exactly lets a recipient verify with a library it already has, in any
// language.
//
// Public: for a recipient that verifies vigil's pushes.
package webhooks
