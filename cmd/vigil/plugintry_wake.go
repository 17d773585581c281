package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// maxEventBody bounds --event's file: the hook's body bound.
const maxEventBody = 1 << 20

// eventFlags are vigil plugin try's flags for trying an event with the
// kind's wake.
type eventFlags struct {
	file, name, source string
}

func (f *eventFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.file, "event", "", "try this recorded event with the kind's wake, instead of admit and observe: a file holding its JSON body, or - for standard input")
	cmd.Flags().StringVar(&f.name, "event-name", "", "with --event: the event's name as its source sends it (X-GitHub-Event, X-Gitea-Event, a Standard Webhooks type): check_suite, issues")
	cmd.Flags().StringVar(&f.source, "source", abi.SourceGitHub, "with --event: the scheme of the hook source it came through: github, gitea or standard")
}

// tryEvent is one event to try with wake.
type tryEvent struct {
	name, source, file string
	body               json.RawMessage
}

// read checks the flags and reads the event; nil without --event. The
// flags of a watch (params, baseline, every) have no part in a wake.
func (f *eventFlags) read(cmd *cobra.Command, params, baseline, every string) (*tryEvent, error) {
	if f.file == "" {
		if cmd.Flags().Changed("event-name") || cmd.Flags().Changed("source") {
			return nil, usagef("--event-name and --source name the event of --event FILE")
		}
		return nil, nil
	}
	switch {
	case params != "" || baseline != "" || every != "":
		return nil, usagef("--event tries the kind's wake, which takes no watch: leave out --params, --baseline and --every")
	case f.name == "":
		return nil, usagef("--event needs --event-name: the event's name as its source sends it (check_suite, issues)")
	case !slices.Contains(abi.KnownSources(), f.source):
		return nil, usagef("--source %q: want one of %v", f.source, abi.KnownSources())
	case len(f.name) > abi.MaxWakeEvent:
		return nil, usagef("--event-name: %d bytes, at most %d", len(f.name), abi.MaxWakeEvent)
	}
	for i := 0; i < len(f.name); i++ {
		if c := f.name[i]; c < '!' || c > '~' {
			return nil, usagef("--event-name %q: want printable ASCII without spaces", f.name)
		}
	}
	var r io.Reader
	if f.file == "-" {
		r = cmd.InOrStdin()
	} else {
		fh, err := os.Open(f.file)
		if err != nil {
			return nil, &usageError{fmt.Errorf("--event: %w", err)}
		}
		defer fh.Close()
		r = fh
	}
	b, err := io.ReadAll(io.LimitReader(r, maxEventBody+1))
	switch {
	case err != nil:
		return nil, &usageError{fmt.Errorf("--event %s: %w", f.file, err)}
	case len(b) > maxEventBody:
		return nil, usagef("--event %s: more than 1 MiB, past what a hook source takes", f.file)
	case !json.Valid(b):
		return nil, usagef("--event %s: not JSON: %s", f.file, clipText(string(b), 80))
	}
	return &tryEvent{name: f.name, source: f.source, file: f.file, body: b}, nil
}

// tryWake is what the kind's wake made of an event: the partition keys
// of the watches it would make due now, or why it answered none.
type tryWake struct {
	Event  string   `json:"event"`
	Source string   `json:"source"`
	File   string   `json:"file"`
	Bytes  int      `json:"bytes"`
	Keys   []string `json:"keys"`
	// Fault is why the plugin gave no answer (a timeout, a trap, an
	// answer off the contract, an error it raised): the event wakes
	// nothing.
	Fault *tryFaultInfo `json:"fault,omitempty"`
}

// tryWakeEvent hands ev to the kind's wake and reports the keys.
func tryWakeEvent(ctx context.Context, rt *plugin.Runtime, info kind.Info, ev *tryEvent, rep tryReport) tryReport {
	if !info.Wakes {
		rep.Load, rep.ExitCode = &tryLoad{File: info.File,
			Error: fmt.Sprintf("kind %s does not wake: its plugin exports no %s (a Go plugin sets sdk.Plugin.Wake and imports github.com/vigilhq/vigil/sdk/wake)", info.Kind, abi.ExportWake)}, tryLoadError
		return rep
	}
	w := &tryWake{Event: ev.name, Source: ev.source, File: ev.file, Bytes: len(ev.body), Keys: []string{}}
	rep.Wake = w
	keys, err := rt.Wake(ctx, info.Kind, abi.WakeRequest{Event: ev.name, Source: ev.source, Body: ev.body})
	var ce *kind.CallError
	switch {
	case errors.As(err, &ce):
		w.Fault = &tryFaultInfo{Reason: ce.Reason, Message: ce.Err.Error()}
		rep.ExitCode = tryFault
	case err != nil:
		w.Fault = &tryFaultInfo{Reason: "error", Message: err.Error()}
		rep.ExitCode = tryFault
	default:
		w.Keys = append(w.Keys, keys...)
	}
	return rep
}

// writeText prints the wake's part of the report.
func (w *tryWake) writeText(line func(k, format string, args ...any)) {
	line("event", "%s from a %s source (%s, %d bytes)", w.Event, w.Source, w.File, w.Bytes)
	switch {
	case w.Fault != nil:
		line("wake", "fault: %s: %s (wakes nothing)", w.Fault.Reason, w.Fault.Message)
	case len(w.Keys) == 0:
		line("wake", "no keys: the event concerns none of this kind's watches")
	default:
		line("wake", "%d key(s): the pending watches with one of them are made due now", len(w.Keys))
		for _, k := range w.Keys {
			line("", "%s", k)
		}
	}
}
