// Package captoken is the host's capability tokens: the secret in a URL
// that acts on one record without a bearer token (a signal's
// /api/v1/signals/{token}, a heartbeat's ping URL). One implementation
// for every such URL: how a token is made and how it is read from a path;
// the store keeps only its hash (store.HashToken) in one family
// (capability_tokens), whatever it names.
//
// # What it guarantees
//
//   - A token is 128 bits from the reader it is given (crypto/rand in the
//     host), written as 22 characters of unpadded base64url.
//   - The store's lookup is by store.HashToken(token) (SHA-256, hex): a
//     copy of the lookup family, a backup or a log of its keys acts on
//     nothing.
//   - Parse refuses anything that is not a token's form before it is
//     hashed or looked up, so a path of junk costs no store read.
//
// # Rejected
//
// A token derived from the record's id and a server secret (an HMAC): it
// needs a secret of its own, kept and rotated, and cannot be revoked one
// at a time; a random token with its hash in the store is both.
package captoken
