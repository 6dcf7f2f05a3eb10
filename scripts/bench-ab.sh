#!/usr/bin/env bash
# Before/after for a server change (BENCHMARKS.md, "Find and fix"): two server binaries take
# turns on the same machine, each serving one `banter-sim bench --rounds 1` with its server CPU
# per message, ROUNDS times. Nothing is pinned by default, as users run a server; PIN=1 runs
# the server (and the baseline) on core 1 and the client on core 0. Every line names which. Bare
# tokio-tungstenite's echo (`banter-sim tungstenite-echo`, also on core 1) is driven as a third
# phase of every bench, so each line also shows what the library alone costs per echoed message
# in that run, the baseline the server's echo is held to.
#
#   scripts/bench-ab.sh BEFORE_BINARY AFTER_BINARY [ROUNDS] [-- extra server flags]
#   (build each with `cargo build --release -p banter-server` from its own worktree)
#
# AB_POSTGRES=postgres://postgres@127.0.0.1:5432 runs both on PostgreSQL instead of SQLite: each
# side and round on a fresh database of that cluster (created and dropped here; PostgreSQL's
# backends are never pinned).
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1 AFTER=$2 ROUNDS=${3:-2}
shift $(( $# >= 3 ? 3 : 2 )); [ "${1:-}" = "--" ] && shift
PORT=${PORT:-7351}
SIM=${SIM:-${CARGO_TARGET_DIR:-target}/release/banter-sim}
BASELINE_PORT=${BASELINE_PORT:-7353}
WORK=$(mktemp -d /tmp/banter-ab.XXXXXX)
AB_POSTGRES=${AB_POSTGRES:-}
if [ "${PIN:-0}" = 1 ]; then
    server_cpu=(taskset -c 1); client_cpu=(taskset -c 0); mode="pinned: server core 1, client core 0"
else
    server_cpu=(); client_cpu=(); mode="unpinned"
fi
echo "bench-ab: $mode"
# Where one side's round keeps its data: a SQLite file, or a fresh PostgreSQL database.
database_for() {
    if [ -z "$AB_POSTGRES" ]; then echo "$WORK/$1.db"; return; fi
    local name="banter_ab_$$_$1"
    createdb -h 127.0.0.1 -U postgres "${name//-/_}" && echo "$AB_POSTGRES/${name//-/_}"
}
drop_database() {
    [ -n "$AB_POSTGRES" ] || return 0
    local name="banter_ab_$$_$1"
    dropdb -h 127.0.0.1 -U postgres --if-exists "${name//-/_}" || true
}
"${server_cpu[@]}" "$SIM" tungstenite-echo --bind "127.0.0.1:$BASELINE_PORT" 2>"$WORK/baseline.log" &
baseline=$!
trap 'kill "$baseline" 2>/dev/null || true' EXIT
for round in $(seq 1 "$ROUNDS"); do
    for side in before after; do
        binary=$BEFORE; [ "$side" = after ] && binary=$AFTER
        database=$(database_for "$side-$round")
        "${server_cpu[@]}" "$binary" serve --bind "127.0.0.1:$PORT" --database-url "$database" \
            --content content --rate-per-sec 1000000 --burst 1000000 --bench-echo "$@" \
            >"$WORK/server-$side-$round.log" 2>&1 &
        server=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
        "${client_cpu[@]}" "$SIM" bench --url "127.0.0.1:$PORT" --connections 32 --depth 8 --seconds 5 \
            --rounds 1 --server-pid "$server" --baseline-url "127.0.0.1:$BASELINE_PORT" \
            --baseline-pid "$baseline" --json >"$WORK/$side-$round.json"
        kill "$server"; wait "$server" || true
        drop_database "$side-$round"
        python3 - "$WORK/$side-$round.json" "$side" "$round" "$mode" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rounds"][0]
b = r["baseline"]
print(f"{sys.argv[2]:6} round {sys.argv[3]} ({sys.argv[4]}): echo {d['echo_msgs_per_sec']:>9,.0f}/s  step {d['step_msgs_per_sec']:>9,.0f}/s"
      f"  ratio {d['ratio']:.2f}  server CPU echo {r['echo']['server_cpu_us_per_msg']} µs"
      f"  step {r['step']['server_cpu_us_per_msg']} µs  (CPU ratio {d.get('server_cpu_ratio')});"
      f" tokio-tungstenite {b['msgs_per_sec']:>9,.0f}/s, {b['server_cpu_us_per_msg']} µs"
      f" (the echo does {d.get('echo_vs_tungstenite_cpu')} of its messages per core-second)")
PY
    done
done
rm -rf "$WORK"
