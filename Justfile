# vigil's routine tasks. The README's two commands need none of these.

plugin_build := "GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false"

default:
    @just --list

# Build the vigil binary into ./vigil.
build:
    go build -o vigil ./cmd/vigil

# Run every test, in every module (the root's ./... stops at a nested one).
test:
    for m in $(bash .ci/modules); do (cd "$m" && go test ./...) || exit 1; done

# Rebuild every bundled plugin's .wasm from its source, reproducibly.
plugins:
    #!/usr/bin/env bash
    set -euo pipefail
    for dir in plugins/*/; do
        kind=$(basename "$dir")
        [ -f "$dir/main.go" ] || continue
        (cd "$dir" && {{plugin_build}} -o "$kind.wasm" .)
        echo "built $dir$kind.wasm with $(go env GOVERSION)"
    done

# Run the host on the bundled plugins.
run *ARGS:
    go run ./cmd/vigil serve {{ARGS}}

# Run the conformance suite (docs/conformance.md) against a plugin .wasm;
# ARGS are vigil conformance's flags (--cases DIR, --junit FILE, --run RE, ...).
conformance FILE *ARGS:
    go run ./cmd/vigil conformance "{{FILE}}" {{ARGS}}

# Run the benchmarks reported in docs/BENCHMARKS.md (about 25 min; the
# 10,000,000-pending points are run by hand, as the doc says).
bench:
    go test -run XXX -bench . -benchmem ./internal/plugin/ ./plugins/timer/ ./store/badger/ ./internal/scheduler/
    go test -run XXX -bench . -benchmem ./internal/delivery/ ./internal/observe/ ./internal/authz/
    go test -run XXX -bench 'RegisterHTTP|RegisterWrk|Admit|ListByRecipient|IdleLongPolls|ObserveRecordHTTP|ObserveWakeHTTP' -benchmem ./internal/httpapi/
    go test -run XXX -bench RegisterBesidePending -benchtime 120000x -timeout 30m ./internal/httpapi/
    VIGIL_BENCH_RESTART_WATCHES=100000,1000000 go test -run XXX -bench Restart -benchtime 1x -timeout 30m ./cmd/vigil/
    go test -run XXX -bench . -benchmem -benchtime 2s ./internal/fetch/ ./internal/runner/
    go test -run XXX -bench CheckTimer -benchtime 10x ./conformance/
    go test -run XXX -bench TemplateObserve -benchmem ./templates/
    go test -run XXX -bench . -benchtime 500x ./store/natsstore/
    go test -run XXX -bench Node -benchtime 2000x -timeout 30m ./internal/core/

# A cluster's failover (docs/BENCHMARKS.md): RUNS SIGKILLs of a vigil node
# on SERVERS (1 or 3) JetStream servers, each timed to the first of its
# watches another node fires, under a lease TTL of TTL; about 20 s a run.
bench-failover RUNS="5" TTL="10s" SERVERS="1":
    VIGIL_FAILOVER_RUNS={{RUNS}} VIGIL_FAILOVER_TTL={{TTL}} VIGIL_FAILOVER_SERVERS={{SERVERS}} go test -count=1 -timeout 30m -run '^TestFailover$' -v ./internal/failovertest/

# Run every benchmark of every package once, at a small size (what CI runs).
bench-smoke:
    bash .ci/bench-smoke

# The crash harness, long: KILLS SIGKILLs of the real host under load,
# each restart checked (docs/RELIABILITY.md); 4 to 6 s a kill, so the
# default 500 take 35 to 50 min. `bash .ci/crash` is the CI budget.
crash KILLS="500":
    VIGIL_CRASH_KILLS={{KILLS}} VIGIL_CRASH_WALL=3h go test -count=1 -timeout 4h -run '^TestCrash$' -v ./internal/crashtest/

# Fuzz every parser of outside input, SECONDS each (every func Fuzz* in
# the test files: .ci/fuzz finds them); FILTER narrows them by name.
fuzz SECONDS="120" FILTER=".":
    VIGIL_FUZZTIME={{SECONDS}}s bash .ci/fuzz "{{FILTER}}"

# What CI runs.
ci:
    bash .ci/run
