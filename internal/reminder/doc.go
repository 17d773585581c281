// Package reminder is the phase reminder: a standing kind built into the
// host (recipient.reminder) that asks a recipient still working on an old
// phase report of its own to report its phase again (docs/reminder.md).
// It is the host speaking on its own initiative, so it must never reach a
// recipient that is not demonstrably working.
//
// What it owns: eligibility, one pure function (Decide) over Evidence read
// fresh from the store at each check: the recipient runs and opted in; its
// phase was reported by itself, not seeded; the phase is neither handoff
// nor blocked; the report is at least one interval old and not reminded of
// yet; and its activity moved since the previous check. One reminder per
// report, never one per interval: the report reminded of and the counts
// last seen are the watch's baseline, persisted with the message in one
// transaction. The message is short and of its own type, reminder. Its
// watches are the reconciler's (internal/recipients): Admit refuses a
// registration without the reconciler's mark.
//
// What it must never do: write anything itself (the scheduler persists the
// baseline and delivery mails, on the notice path that mails only a
// recipient running when it is written and pushed); keep evidence between
// checks outside the baseline; send to a recipient the store does not say
// is running.
//
// Rejected: reading the interval only from the watch's params. Decide
// reads the record's, so an opt-out takes effect at the next check even
// before the reconciler cancels the watch.
package reminder
