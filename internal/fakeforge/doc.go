// Package fakeforge is a fake code forge for tests only: an httptest
// server on 127.0.0.1 that speaks the small subset of the GitHub and Gitea
// REST APIs the bundled ci and ticket plugins read (a commit's check runs,
// its combined status, an issue and its comments, and who the token is),
// plus plain pages for the http plugin, and
// a Fetcher that performs a plugin's fetch against it with net/http.
//
// It owns faking a forge's answers and its failures (a path that answers
// 503 or 429 with Retry-After, a path that hangs), and counting what
// arrived (requests and their headers per path), so a test can assert that
// a credential reached the forge or that a watch on one SHA never asked
// about another. It must never be imported by the product, and it does
// not emulate the host's fetch issuer (pacing, caching, the destination
// guard): tests of the issuer belong to the issuer.
//
// GitHub and Gitea share the paths; the dialect is chosen by prefix: a
// request under /api/v1 is answered as Gitea (GiteaURL), anything else as
// GitHub (URL).
//
// Rejected: recorded responses of the real forges, which cannot fail on
// cue (a 503, a hang) or count what arrived.
package fakeforge
