// Package hooks verifies inbound webhooks: the configured sources of
// POST /api/v1/hooks/{source} and the three signature schemes they use.
//
// # Guarantees
//
//   - A request is verified before anything else is read from it: its
//     signature over the raw body, compared in constant time
//     (crypto/hmac.Equal). A missing, malformed or wrong signature is
//     ErrUnverified, whatever else is wrong with the request.
//   - GitHub: X-Hub-Signature-256 is "sha256=" and the hex of
//     HMAC-SHA256(secret, body); the event's name is X-GitHub-Event.
//   - Gitea: X-Gitea-Signature is the hex of HMAC-SHA256(secret, body);
//     the event's name is X-Gitea-Event.
//   - Standard Webhooks: webhook-id, webhook-timestamp and
//     webhook-signature (api/webhooks), the timestamp within the source's
//     tolerance, and each webhook-id accepted once while its timestamp is
//     within the tolerance (a bounded replay window); the event's name is
//     the payload's "type".
//   - A source's configuration is checked whole by Config.Validate;
//     Sources swaps a checked one in at once (SIGHUP).
//   - The Receiver answers a verified request at once: its event is
//     queued (bounded, ErrBusy when full, never growing) for the one
//     worker its Run owns, which hands it to the kind's wake and pokes
//     the keys it names. A wake that fails wakes nothing and is counted.
//
// # Why
//
// An event only makes watches due now; the kind's observe still decides.
// So a forged event that got past the signature, a replay or a lost one
// changes when the host looks, never what it concludes: the replay window
// is bounded memory, not a store, and GitHub's and Gitea's schemes, which
// sign no timestamp, have none.
package hooks
