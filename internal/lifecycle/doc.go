// Package lifecycle owns the one shape of every component that owns
// goroutines, and the two helpers that compose it.
//
// The shape: a constructor starts nothing; Run(ctx) error runs the
// component's goroutines until ctx ends and returns once every one of
// them has stopped: nil when ctx ended, an error when the component could
// not run or stopped on its own. What a constructor acquires (a store, a
// subscription, compiled plugins) is released by Close, which stops no
// goroutine. Group runs several Runs as one; Go runs one in the
// background and hands back the function that stops it and waits.
//
// It must never hold state of its own or know a component: it composes
// functions.
//
// Rejected: Start/Stop pairs (River's startstop.Service). A Start that
// returns at once needs a Stop, a Started and a guard against a second
// Start, and five variants of them grew here; Run blocking until its
// goroutines have stopped says all of it in one call, and a caller that
// wants it in the background writes Go.
package lifecycle
