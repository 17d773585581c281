package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/conformance"
)

func newConformance(stdout, stderr io.Writer) *cobra.Command {
	var opts conformance.Options
	var junit string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "conformance PLUGIN.wasm",
		Short: "Check that a plugin .wasm is a good vigil predicate",
		Long: `Run the conformance suite (docs/conformance.md) against a plugin file inside
the real plugin runtime, with the production limits and a fake fetch (nothing
reaches a network), and print one line per check: its id, level, result and
what it saw. Exits 0 only when every required check passes; an advisory
failure is printed as "warn" and does not gate.

The checks: describe (exports, abi, kind grammar, semver, schema,
capabilities, default_every, determinism); admit (the example is admitted,
invalid params are refused naming the field, no fetch, determinism); observe
(a valid answer, a call for another kind is an error, a fetch failure is
pending, determinism, no wall-clock reads, time and memory budget); standing
kinds (a silent first baseline, no change, a change); a few hundred
generated params; and the author's cases (--cases DIR: one JSON file each,
replayed offline; see docs/conformance.md for the format).`,
		Example: `  vigil conformance mykind.wasm
  vigil conformance mykind.wasm --cases testdata/cases --junit conformance.xml
  vigil conformance mykind.wasm --run '^observe\.' --skip no-wall-clock
  vigil conformance mykind.wasm --json | jq '.results[] | select(.status=="fail")'`,
		Args: exactArgs("PLUGIN.wasm"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := conformance.Check(cmd.Context(), args[0], opts)
			if err != nil {
				return err
			}
			if junit != "" {
				if err := writeJUnit(junit, rep); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = rep.WriteText(stdout)
			}
			if err != nil {
				return err
			}
			if !rep.Passed {
				return &exitError{Code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.CasesDir, "cases", "", "directory of case files (*.json) to replay against the plugin")
	f.StringVar(&junit, "junit", "", "also write the results as JUnit XML to this file")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON instead of a table")
	f.StringVar(&opts.Run, "run", "", "run only the checks whose id matches this regular expression")
	f.StringVar(&opts.Skip, "skip", "", "leave out the checks whose id matches this regular expression")
	f.StringArrayVar(&opts.ExecPrograms, "exec-program", nil, "a program to grant a kind that declares exec (repeatable; default: the example's argv[0], else true)")
	f.StringVar(&opts.CacheDir, "cache", defaultConformanceCache(), `compilation cache directory, so a second run does not recompile ("" for none)`)
	cmd.SetErr(stderr)
	return cmd
}

// defaultConformanceCache is vigil's directory in the user's cache.
func defaultConformanceCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "vigil", "conformance-cache")
}

func writeJUnit(path string, rep conformance.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := rep.WriteJUnit(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--junit: %w", err)
	}
	return f.Close()
}
