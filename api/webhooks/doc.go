// Package webhooks is the signing half of vigil's webhook contract: the
// Standard Webhooks scheme (webhook-id, webhook-timestamp,
// webhook-signature; HMAC-SHA256 over id "." timestamp "." body) that the
// host signs every POST with and that a recipient verifies it with.
// docs/webhooks.md is the prose version, with a test vector.
//
// It is a leaf: it imports the standard library and nothing else, of this
// repository or outside it, so a recipient can import it to verify without
// pulling in the host. The host imports it to sign; both sides run the
// same code and so cannot drift.
//
// What it guarantees:
//   - A secret is "whsec_" and the standard base64 of at least 16 key
//     bytes, written canonically. Anything else is refused, never
//     repaired: a secret pasted with a trailing newline or without its
//     prefix is an error at ParseSecret, not a key that silently differs
//     from the one the sender holds. A sender taking a secret for a new
//     endpoint asks CheckSecret, which also holds the key to the
//     specification's sizes, 24 to 64 bytes.
//   - Verify refuses, with a typed error answering errors.Is, a request
//     whose headers are missing, repeated or malformed
//     (ErrMissingHeaders), whose timestamp is not within the tolerance of
//     now in either direction (ErrTimestamp), or none of whose v1
//     signatures matches (ErrSignature). Signatures are compared with
//     hmac.Equal.
//   - An error never contains the secret, the key, or the expected
//     signature.
//   - Signatures are compatible with other Standard Webhooks
//     implementations: the specification's published test vector
//     reproduces exactly (see the tests).
//
// What it must never do:
//   - Accept an ambiguous signed string. The content is
//     id "." timestamp "." body, so an id containing "." could move the
//     boundary between id, timestamp and body. Sign and Verify accept an id
//     of 1 to 256 characters of [A-Za-z0-9_-] only (vigil's message ids are
//     26 characters of lower-case Crockford base32), and a timestamp of
//     decimal digits without a sign or leading zeros, so each signed string
//     has exactly one reading.
//   - Read the clock. The caller passes now, so a test (or a receiver
//     replaying a captured request) is deterministic.
//   - Remember ids. Verify is stateless; a recipient that cares about a
//     replay within the tolerance deduplicates on webhook-id (vigil never
//     sends one message twice, so a repeated id is always a replay).
//
// Rejected alternative: signing with the secret string itself, as some
// webhook senders do. The Standard Webhooks scheme keys the HMAC with the
// decoded bytes, and following it exactly is what lets a recipient verify
// with a library it already has, in any language.
package webhooks
