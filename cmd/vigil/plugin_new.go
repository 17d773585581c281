package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigilhq/vigil/templates"
)

// newPluginNew is `vigil plugin new`: a plugin to start from, written
// from the templates embedded in the binary.
func newPluginNew(stdout io.Writer) *cobra.Command {
	var lang string
	cmd := &cobra.Command{
		Use:   "new KIND [DIR]",
		Short: "Write a new plugin to start from: a timer in Go, C or AssemblyScript",
		Long: `Write a complete predicate plugin of kind KIND into DIR (default: the kind's
last segment between dots, "prom" for alerts.prom), ready to build and to pass
the conformance suite unchanged. It is a timer: params {"at": an RFC 3339
instant}, pending until the host's now reaches it (naming the instant as its
next check), then settled "fired"; its natural deadline is the instant plus a
minute. Replace its question with yours.

KIND follows the kind grammar: 1-64 of a-z 0-9 . _ -. DIR must not exist, or
be empty: nothing is ever written over a file.

--lang picks the template:
  go              vigil's Go SDK (GOOS=wasip1). A module of its own: the SDK's
                  source and its test-support module's (sdktest, for the
                  schema test) are written into DIR/third_party from this
                  binary, and go.mod replaces each module with its copy until
                  they are published. Builds with Go alone; make test fetches
                  the schema compiler sdktest uses from the module proxy.
  c               freestanding C (clang --target=wasm32 -nostdlib, linked by
                  wasm-ld: Debian's clang and lld), speaking the Extism ABI
                  directly. make test runs the unit tests natively.
  assemblyscript  AssemblyScript 0.28 (npm), speaking the Extism ABI directly,
                  built with --use abort= since the host provides no env.abort.
                  make runs npm install first; make test runs under node.

Every template has a unit test, a schema test, recorded conformance cases in
testdata/conformance, and a Makefile:
  make          build KIND.wasm
  make test     the unit tests (and, for Go, the schema test)
  make schema   the schema test
  make check    vigil conformance KIND.wasm --cases testdata/conformance

Then install it: copy KIND.wasm into a plugin directory (serve --plugins DIR)
with its entry in that directory's registry.json, and reload. See
docs/writing-a-plugin.md.

The refusals, each named on stderr by its code: invalid_kind,
unknown_language, dir_not_empty, dir_required (a kind of dots only names no
directory: give DIR). With --json the files written are printed as JSON.
This command talks to no server: --server and --token do not apply.`,
		Example: `  vigil plugin new alerts.prom
  vigil plugin new alerts.prom --lang c ./prom-c
  vigil plugin new acme.deploy-window --lang assemblyscript && cd deploy-window && make check`,
		Args: kindAndDirArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			l, err := templates.ParseLang(lang)
			if err != nil {
				return refusal(err)
			}
			var dir string
			if len(args) == 2 {
				dir = args[1]
			} else if dir, err = templates.DefaultDir(kind); err != nil {
				return refusal(err)
			}
			files, err := templates.Write(kind, l, dir)
			if err != nil {
				return refusal(err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(stdout, struct {
					Kind  string   `json:"kind"`
					Lang  string   `json:"lang"`
					Dir   string   `json:"dir"`
					Files []string `json:"files"`
				}{kind, string(l), dir, files})
			}
			ours := slices.DeleteFunc(slices.Clone(files), func(f string) bool { return strings.HasPrefix(f, "third_party/") })
			fmt.Fprintf(stdout, "wrote a %s plugin of kind %s into %s: %d files", l, kind, dir, len(ours))
			if n := len(files) - len(ours); n > 0 {
				fmt.Fprintf(stdout, ", and the source of the SDK's modules (%d files) into %s", n, filepath.Join(dir, "third_party"))
			}
			tests := "its unit and schema tests"
			if l != templates.Go {
				tests = "its unit tests; make schema checks its params schema"
			}
			fmt.Fprintf(stdout, "\n\n  cd %s\n  make          # builds %s.wasm\n  make test     # %s\n  make check    # the conformance suite, with testdata/conformance\n", dir, kind, tests)
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "go", "the plugin's language: go, c or assemblyscript")
	return cmd
}

// refusal names a templates refusal by its code. A refused kind,
// language or directory is the caller's mistake: ExitUsage, as for every
// command's bad argument. A failure to write is not.
func refusal(err error) error {
	var te *templates.Error
	if errors.As(err, &te) {
		return &usageError{fmt.Errorf("plugin new: %s: %w", te.Code, err)}
	}
	return fmt.Errorf("plugin new: %w", err)
}

// kindAndDirArgs wants KIND and takes an optional DIR, and names what is
// missing or extra as exactArgs does.
func kindAndDirArgs(cmd *cobra.Command, args []string) error {
	usage := cmd.CommandPath() + " KIND [DIR]"
	switch {
	case len(args) == 0:
		return usagef("missing KIND: %s", usage)
	case len(args) > 2:
		return usagef("unexpected argument %q: %s", args[2], usage)
	}
	for i, a := range args {
		if strings.TrimSpace(a) == "" {
			return usagef("empty %s: %s", []string{"KIND", "DIR"}[i], usage)
		}
	}
	return nil
}
