// Package store will own vigil's persistence on badger v4 behind a small
// interface: watch rows, receipts, baselines, mailboxes, with rows held
// aside verbatim when this build cannot decode them.
//
// It is empty until the store lands (see the project's issues); the
// package exists so the layout in docs/ARCHITECTURE.md is whole.
package store
