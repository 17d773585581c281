package crashtest

import (
	"fmt"

	"github.com/vigilhq/vigil/api"
)

// Problem is one broken rule: its kind as the harness names it (LOST,
// DUPLICATED, STATE, ORDER) and what was seen.
type Problem struct {
	Kind   string
	Detail string
}

func (p Problem) String() string { return p.Kind + ": " + p.Detail }

// mailedStates are the final states whose settlement mails the
// recipient, each as a message of the state's own type.
var mailedStates = map[string]bool{"fired": true, "expired": true, "unwatchable": true}

// CheckMail holds whole mailboxes (mail, by recipient, each read from seq
// 1) against the watches as the host lists them (watches, by id): each
// mailbox runs from seq 1 without gaps; each message names a listed watch
// of that recipient whose state mails and is the message's type; no watch
// has two messages; and every listed watch in a state that mails has its
// message. The crash harness's last check runs it, and so does the
// cluster's failover test (internal/host/failover_test.go), over answers read the
// same way.
func CheckMail(mail map[string][]api.Message, watches map[string]api.Watch) []Problem {
	var out []Problem
	bad := func(kind, format string, a ...any) { out = append(out, Problem{kind, fmt.Sprintf(format, a...)}) }
	seen := map[string]api.Message{}
	for r, msgs := range mail {
		for i, m := range msgs {
			if m.Seq != uint64(i+1) {
				bad("ORDER", "mailbox %s: position %d is seq %d", r, i+1, m.Seq)
			}
			if prev, ok := seen[m.WatchID]; ok {
				bad("DUPLICATED", "watch %s has messages at seq %d and %d", m.WatchID, prev.Seq, m.Seq)
			}
			seen[m.WatchID] = m
			w, ok := watches[m.WatchID]
			switch {
			case !ok:
				bad("STATE", "mailbox %s: seq %d names watch %s, which is not listed", r, m.Seq, m.WatchID)
			case w.Recipient.ID != r:
				bad("STATE", "watch %s of %s mailed to %s", m.WatchID, w.Recipient.ID, r)
			case !mailedStates[w.State] || m.Type != w.State:
				bad("STATE", "mailbox %s: seq %d is a %s message of watch %s, which is %s", r, m.Seq, m.Type, m.WatchID, w.State)
			}
		}
	}
	for id, w := range watches {
		if _, ok := seen[id]; mailedStates[w.State] && !ok {
			bad("LOST", "watch %s is %s but %s's mailbox has no message for it", id, w.State, w.Recipient.ID)
		}
	}
	return out
}
