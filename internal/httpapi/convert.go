package httpapi

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

func toOutcome(o store.Outcome) api.Outcome {
	return api.Outcome{Result: o.Result, Summary: o.Summary, Detail: o.Detail}
}

func toWatch(w store.Watch) api.Watch {
	out := api.Watch{
		ID: w.ID.String(), Kind: w.Kind, Params: w.Params, Recipient: api.RecipientRef{ID: w.Recipient.ID}, RegisteredBy: w.RegisteredBy,
		State: string(w.State), Receipt: string(w.Receipt), Every: time.Duration(w.Every).String(),
		CreatedAt: w.CreatedAt, ExpiresAt: w.ExpiresAt, SettledAt: w.SettledAt, Attempts: w.Attempts, LastNote: w.LastNote,
	}
	if w.Outcome != nil {
		o := toOutcome(*w.Outcome)
		out.Outcome = &o
	}
	if f := w.LastFault; f != nil {
		out.LastFault = &api.Fault{Reason: f.Reason, Message: f.Message}
	}
	out.Version = watchVersion(out, w.NextCheck)
	return out
}

// withSeen is a pending watch's view with what the scheduler holds in
// memory: the probes so far and when the last began, which its row has
// only as of its last write.
func withSeen(w store.Watch, seen scheduler.Seen) api.Watch {
	out := toWatch(w)
	out.Attempts = max(out.Attempts, seen.Attempts)
	if !seen.LastProbe.IsZero() {
		t := seen.LastProbe
		out.LastProbeAt = &t
	}
	out.Version = watchVersion(out, w.NextCheck)
	return out
}

// watchVersion is a watch's version: a digest of what changes while it is
// waited on (its state, receipt, outcome, the probes so far, the last
// probe's time, note and fault, and its durable next check), so two views
// have the same version exactly when none of those differ. Opaque to
// clients, who only compare it; a digest and not a counter, so it needs
// nothing stored and is the same after a restart.
func watchVersion(out api.Watch, next time.Time) string {
	h := fnv.New64a()
	field := func(s string) {
		var n [binary.MaxVarintLen64]byte
		_, _ = h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		_, _ = io.WriteString(h, s)
	}
	at := func(t *time.Time) {
		if t == nil {
			field("")
			return
		}
		field(t.UTC().Format(time.RFC3339Nano))
	}
	field(out.State)
	field(out.Receipt)
	field(fmt.Sprint(out.Attempts))
	field(out.LastNote)
	if f := out.LastFault; f != nil {
		field(f.Reason)
		field(f.Message)
	} else {
		field("")
		field("")
	}
	at(out.LastProbeAt)
	at(out.SettledAt)
	if o := out.Outcome; o != nil {
		field(o.Result)
		field(o.Summary)
		field(string(o.Detail))
	} else {
		field("")
		field("")
		field("")
	}
	if next.IsZero() {
		at(nil)
	} else {
		at(&next)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// toMessage is a message as a mailbox read returns it, with its push's
// state when it has one. A stream event leaves the push out (strip), so
// its data is the webhook body byte for byte.
func toMessage(m store.Message) api.Message {
	out := api.Message{Seq: m.Seq, ID: m.ID.String(), WatchID: m.WatchID.String(), Kind: m.Kind, Type: string(m.Type), Outcome: toOutcome(m.Outcome), At: m.At}
	if p := m.Push; p != nil {
		out.Push = &api.MessagePush{State: string(p.State), Attempts: p.Attempts, NextAttempt: p.NextAttempt, LastError: p.LastError, UpdatedAt: p.UpdatedAt}
	}
	return out
}

func toRecipient(r store.RecipientRecord) api.Recipient {
	out := api.Recipient{ID: r.ID, Status: string(r.Status), Refs: []api.Ref{}, Workspace: r.Workspace, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Webhook != nil {
		// never the secret
		out.Webhook = &api.WebhookView{URL: r.Webhook.URL, DisabledAt: r.Webhook.DisabledAt, DisabledReason: r.Webhook.DisabledReason}
	}
	for _, ref := range r.Refs {
		out.Refs = append(out.Refs, api.Ref{Kind: ref.Kind, Params: ref.Params})
	}
	if r.Phase != nil {
		p := toPhase(*r.Phase)
		out.Phase = &p
	}
	if r.Activity != (store.Activity{}) {
		a := toActivity(r.Activity)
		out.Activity = &a
	}
	if r.ReminderEvery > 0 {
		out.ReminderEvery = time.Duration(r.ReminderEvery).String()
	}
	for _, h := range r.Heartbeats {
		v := api.Heartbeat{Name: h.Name, Period: time.Duration(h.Period).String(), Grace: time.Duration(h.Grace).String(), Failed: h.Failed, Note: h.Note}
		if !h.LastPing.IsZero() {
			at := h.LastPing
			v.LastPing = &at
		}
		out.Heartbeats = append(out.Heartbeats, v)
	}
	return out
}

// toPlugin is one loaded kind as the plugin list answers it.
func toPlugin(i kind.Info) api.Plugin {
	caps := i.Capabilities
	if caps == nil {
		caps = []string{}
	}
	every := ""
	if i.DefaultEvery > 0 {
		every = i.DefaultEvery.String()
	}
	return api.Plugin{Kind: i.Kind, Version: i.Version, Summary: i.Summary, Standing: i.Standing,
		DefaultEvery: every, Capabilities: caps, Observable: i.Observable, Setting: i.Setting, Wakes: i.Wakes, File: i.File, Source: i.Source, SHA256: i.SHA256}
}

func toPluginList(infos []kind.Info, problems []*plugin.LoadError) api.PluginList {
	out := api.PluginList{Plugins: make([]api.Plugin, 0, len(infos)), Problems: make([]api.PluginProblem, 0, len(problems))}
	for _, i := range infos {
		out.Plugins = append(out.Plugins, toPlugin(i))
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, api.PluginProblem{File: p.File, Kind: p.Kind, Rule: p.Rule, Error: p.Err.Error()})
	}
	return out
}
