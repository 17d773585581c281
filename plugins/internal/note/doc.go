// Package note is what the bundled plugins share about writing a pending
// note or a summary: what the caller or an origin wrote is kept short, so a
// note stays a line and a watch's diagnostics stay readable. It is compiled
// into each plugin's .wasm, so it uses nothing beyond the standard library.
package note
