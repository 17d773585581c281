package crashtest

import (
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
)

// Each rule of CheckMail finds its break, and a consistent pair of
// mailboxes and listing passes.
func TestCheckMailFindsEachBreak(t *testing.T) {
	msg := func(seq uint64, watch, typ string) api.Message {
		return api.Message{Seq: seq, ID: "m" + watch, WatchID: watch, Type: typ}
	}
	watch := func(id, recipient, state string) api.Watch {
		return api.Watch{ID: id, Recipient: api.RecipientRef{ID: recipient}, State: state}
	}
	good := func() (map[string][]api.Message, map[string]api.Watch) {
		return map[string][]api.Message{
				"a": {msg(1, "w1", "fired"), msg(2, "w2", "expired")},
				"b": {msg(1, "w3", "fired")},
			}, map[string]api.Watch{
				"w1": watch("w1", "a", "fired"), "w2": watch("w2", "a", "expired"),
				"w3": watch("w3", "b", "fired"), "w4": watch("w4", "b", "cancelled"), "w5": watch("w5", "a", "pending"),
			}
	}
	tests := []struct {
		name string
		brk  func(map[string][]api.Message, map[string]api.Watch)
		want string
	}{
		{"none", func(map[string][]api.Message, map[string]api.Watch) {}, ""},
		{"a gap", func(m map[string][]api.Message, _ map[string]api.Watch) { m["a"][1].Seq = 3 }, "ORDER"},
		{"a second message", func(m map[string][]api.Message, _ map[string]api.Watch) {
			m["a"] = append(m["a"], msg(3, "w1", "fired"))
		}, "DUPLICATED"},
		{"a message for no watch", func(m map[string][]api.Message, _ map[string]api.Watch) {
			m["b"] = append(m["b"], msg(2, "w9", "fired"))
		}, "STATE"},
		{"a message for a cancelled watch", func(m map[string][]api.Message, _ map[string]api.Watch) {
			m["b"] = append(m["b"], msg(2, "w4", "fired"))
		}, "STATE"},
		{"a message of the wrong type", func(m map[string][]api.Message, _ map[string]api.Watch) { m["a"][0].Type = "expired" }, "STATE"},
		{"a message to another recipient", func(_ map[string][]api.Message, w map[string]api.Watch) {
			w["w3"] = watch("w3", "a", "fired")
		}, "STATE"},
		{"a fired watch without its message", func(m map[string][]api.Message, _ map[string]api.Watch) { m["b"] = nil }, "LOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mail, watches := good()
			tt.brk(mail, watches)
			got := CheckMail(mail, watches)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("problems %v in consistent mailboxes", got)
				}
				return
			}
			if len(got) == 0 || !strings.HasPrefix(got[0].String(), tt.want+":") {
				t.Fatalf("problems %v, want %s first", got, tt.want)
			}
		})
	}
}
