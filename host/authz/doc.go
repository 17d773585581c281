// Package authz decides who may do what: it turns the configured tokens
// and their grants into a Policy, authenticates a bearer token to a
// Principal, and answers one question for every route, "may this
// principal do this action?", with a refusal that names what is missing.
//
// The model. A token authenticates a principal; its grant says:
//
//   - recipients: the recipients the principal acts for (names and
//     *-patterns), always with the recipient of its own name, whose
//     record holds the workspace its command watches run in. Acting
//     for a recipient is reading its record, mailbox and watches,
//     registering and cancelling its watches, changing its record and
//     lifecycle, and claiming and completing Work for it.
//   - roles: orchestrator registers watches for other recipients (those
//     register_for matches, every recipient by default). Such a watch
//     still belongs to its recipient; its row records the orchestrator as
//     registered_by, and the orchestrator may show and cancel what it
//     registered. operator reads across recipients: every recipient's
//     record, mailbox and watches, every scope's Work, the metrics.
//     admin may do everything: plugin reload, the fetch dead letters,
//     every recipient's lifecycle, and all the operator reads.
//   - scopes: the observe scopes whose Work the principal may list, read,
//     claim (for a recipient it acts for) and complete.
//
// A Principal is also the kind.Caller a kind's admission asks ("may it
// read this record?"), answered by the rule of the route that shows the
// record, so a watch's params can name nothing its registrant could not
// read through the API.
//
// Observe keeps its own half of the model: a scope's sources list the
// principals that may report them (host/observe). Those names are the
// same principals.
//
// Without tokens (a server bound to loopback only) there is one local
// principal, and it may do everything.
//
// What it must never do: read a request or write a response (that is
// host/httpapi's, and the MCP server's and the console's when they exist,
// which ask the same Principal), keep or log a token (a Policy keeps only
// each token's SHA-256), or decide by a principal's name alone what its
// grant says. A Guard swaps one Policy for the next on a config reload;
// a principal whose token was removed or whose grant changed is revoked,
// so its open streams and long polls end at once.
//
// Rejected: checks written inline in each handler against the token map.
// That is how every route came to trust any token: a rule a reader cannot
// find in one place is not a rule. And rejected, a role-per-route table
// with no recipient in it: who may read agent-7's mailbox depends on
// agent-7, not on the route.
package authz
