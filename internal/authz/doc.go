// Package authz decides who may do what: it turns the configured tokens
// and their grants into a Policy, authenticates a bearer token to a
// Principal, and answers one question for every route, "may this
// principal do this action?", with a refusal that names what is missing
// (docs/authorization.md).
//
// What it owns: the model. A token authenticates a principal; its grant
// names the recipients it acts for (with the one of its own name), its
// roles (orchestrator: registers watches for other recipients; operator:
// reads across them; admin: everything), and the observe scopes whose
// Work it may read, claim and complete. A Principal is also the
// kind.Caller admission asks ("may it read this record?"), answered by the
// rule of the route that shows the record. Without tokens there is one
// local principal (kind.LocalPrincipal), which may do everything. A Guard
// swaps one Policy for the next on a reload and revokes a principal whose
// token went or whose grant changed, so its streams and long polls end.
//
// What it must never do: read a request or write a response (that is
// internal/httpapi's); keep or log a token (a Policy keeps each token's
// SHA-256 only); decide by a principal's name alone what its grant says.
//
// Rejected: checks written inline in each handler against the token map.
// That is how every route came to trust any token: a rule a reader cannot
// find in one place is not a rule.
package authz
