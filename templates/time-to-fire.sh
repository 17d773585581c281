#!/usr/bin/env bash
# The time from `vigil plugin new` to a plugin that passes the conformance
# suite and fires in `vigil serve`, for each template language: the
# figures of docs/writing-a-plugin.md ("Templates"). From the repository
# root:
#
#   bash templates/time-to-fire.sh
#
# Each language: plugin new; make (for AssemblyScript, npm install
# first, from npm's cache when it is warm); make check (the suite with the
# recorded cases, its compilation cache cold for the new file); a serve
# start with the plugin in its plugin directory; and a timer watch a second
# ahead registered with --wait until it fires. serve's store and its
# compilation cache are warmed by one start before the first language, so
# a serve start compiles the new plugin alone. The Go build starts from
# an empty build cache (see GOCACHE below). Needs go, make, clang,
# wasm-ld, node, npm and curl.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
serve_pid=""
cleanup() {
    if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/vigil" ./cmd/vigil
vigil="$work/vigil"
# The Go plugin builds with an empty build cache, as a new author's first
# build does (WARM_GOCACHE=1 keeps the machine's).
if [ "${WARM_GOCACHE:-}" != 1 ]; then export GOCACHE="$work/gocache"; fi
data="$work/data"
port=$((20000 + RANDOM % 20000))
export VIGIL_SERVER="http://127.0.0.1:$port"

now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

start_serve() {
    "$vigil" serve --listen "127.0.0.1:$port" --data "$data" "$@" >"$work/serve.log" 2>&1 &
    serve_pid=$!
    for _ in $(seq 600); do
        curl -fsS "$VIGIL_SERVER/healthz" >/dev/null 2>&1 && return 0
        kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
        sleep 0.1
    done
    echo "serve did not answer"; cat "$work/serve.log"; exit 1
}
stop_serve() { kill "$serve_pid"; wait "$serve_pid" || true; serve_pid=""; }

start_serve
"$vigil" recipient set agent --status running >/dev/null
stop_serve

printf '%-15s %6s %6s %6s %6s %6s %7s\n' language new make suite serve fired total
for lang in go c assemblyscript; do
    kind="acme.timer-$lang"
    dir="$work/$lang"
    t0=$(now)
    "$vigil" plugin new "$kind" --lang "$lang" "$dir" >/dev/null
    t1=$(now)
    make -s -C "$dir" >"$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
    t2=$(now)
    make -s -C "$dir" check VIGIL="$vigil" >"$work/check.log" 2>&1 || { cat "$work/check.log"; exit 1; }
    t3=$(now)
    plugdir="$work/plugins-$lang"
    mkdir -p "$plugdir"
    cp "$dir/$kind.wasm" "$plugdir/"
    printf '{"kinds": {"%s": {"wasm": "%s.wasm"}}}\n' "$kind" "$kind" >"$plugdir/registry.json"
    start_serve --plugins "$plugdir"
    t4=$(now)
    at=$(date -u -d '+1 second' +%Y-%m-%dT%H:%M:%S.%NZ)
    "$vigil" watch add "$kind" --for agent --params-json "{\"at\":\"$at\"}" --wait >"$work/watch.log" 2>&1 ||
        { cat "$work/watch.log" "$work/serve.log"; exit 1; }
    t5=$(now)
    stop_serve
    printf '%-15s %6s %6s %6s %6s %6s %7s\n' "$lang" "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "$(secs "$t2" "$t3")" \
        "$(secs "$t3" "$t4")" "$(secs "$t4" "$t5")" "$(secs "$t0" "$t5")"
done
