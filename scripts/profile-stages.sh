#!/usr/bin/env bash
# Where a step's server CPU goes next to the echo's, by stage and by thread (BENCHMARKS.md, issue
# 37, sixth pass): starts SERVER_BINARY on a fresh database, drives one `banter-sim bench`
# (32 connections, depth 8, 6 s phases), takes a flat `perf record -e cpu-clock` of 3 s inside
# each phase, and prints µs of server CPU per message by stage: samples per message times the
# sampling period. The SQLite worker thread and the kernel's samples get rows of their own.
#
#   scripts/profile-stages.sh SERVER_BINARY [postgres://postgres@127.0.0.1:5432]
#
# Needs `perf` allowed to sample the server (perf_event_paranoid ≤ 2 for its own processes).
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=$1 POSTGRES=${2:-}
SIM=${SIM:-${CARGO_TARGET_DIR:-target}/release/banter-sim}
PORT=${PORT:-7357} HZ=2999
WORK=$(mktemp -d /tmp/banter-stages.XXXXXX)
if [ -z "$POSTGRES" ]; then database="$WORK/stages.db"; else
    name="banter_stages_$$"; createdb -h 127.0.0.1 -U postgres "$name"; database="$POSTGRES/$name"; fi
"$SERVER" serve --bind "127.0.0.1:$PORT" --database-url "$database" --content content \
    --rate-per-sec 1000000 --burst 1000000 --bench-echo >"$WORK/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; [ -z "$POSTGRES" ] || dropdb -h 127.0.0.1 -U postgres --if-exists "$name"; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
"$SIM" bench --url "127.0.0.1:$PORT" --connections 32 --depth 8 --seconds 6 --rounds 1 \
    --server-pid "$server" --json >"$WORK/bench.json" &
bench=$!
# The echo phase runs first, then the step's: 3 s from the middle of each.
sleep 2; perf record -q -F "$HZ" -e cpu-clock -p "$server" -o "$WORK/echo.data" -- sleep 3 2>/dev/null
sleep 2.5; perf record -q -F "$HZ" -e cpu-clock -p "$server" -o "$WORK/step.data" -- sleep 3 2>/dev/null
wait "$bench"
for phase in echo step; do
    perf report -i "$WORK/$phase.data" --no-children --sort comm,dso,sym -n -q 2>/dev/null >"$WORK/$phase.txt"
done
python3 - "$WORK" "$HZ" <<'PY'
import json, re, sys
work, hz = sys.argv[1], int(sys.argv[2])
# The first stage whose test a sample's (thread, object, symbol) passes.
stages = [
    ("SQLite thread", lambda c, d, s: c.startswith("sqlx-sqlite")),
    ("kernel (socket, scheduler, wake-ups)", lambda c, d, s: d.startswith("[kernel")),
    ("clock reads", lambda c, d, s: "vdso" in d or "clock_gettime" in s or "timespec" in s),
    ("frame parse (decode, frame checks)", lambda c, d, s: re.search(r"hot_decode|ClientMessage::decode|FrameCheck|frames::", s)),
    ("audit trail", lambda c, d, s: "audit::" in s),
    ("analytics tally", lambda c, d, s: "analytics::" in s),
    ("session core and walk", lambda c, d, s: re.search(r"SessionCore|session::commands|banter_dialogue|banter_rules|banter_player|quests::|world::", s)),
    ("answer encoding and outbox", lambda c, d, s: re.search(r"hot_encode|outbox|send_all|ServerMessage", s)),
    ("metrics", lambda c, d, s: "metrics::" in s),
    ("PostgreSQL client (sqlx, in the server)", lambda c, d, s: "sqlx" in s),
    ("allocator, memcpy", lambda c, d, s: re.search(r"rjem|malloc|free|memmove|memcpy|memset|memcmp", s)),
    ("WebSocket, runtime and the rest", lambda c, d, s: True),
]
rounds = json.load(open(f"{work}/bench.json"))["rounds"][0]
per_message = {}
for phase in ("echo", "step"):
    messages = rounds[phase]["messages"] / 2  # 3 s of a 6 s phase
    totals = {}
    for line in open(f"{work}/{phase}.txt"):
        m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[.\]\s+(.*)", line)
        if not m:
            continue
        n, comm, dso, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        name = next(name for name, test in stages if test(comm, dso, sym))
        totals[name] = totals.get(name, 0) + n
    per_message[phase] = {k: v / messages / hz * 1e6 for k, v in totals.items()}
print("| stage | echo µs/msg | step µs/msg | step − echo |\n|---|---|---|---|")
for name, _ in stages:
    e, s = per_message["echo"].get(name, 0), per_message["step"].get(name, 0)
    print(f"| {name} | {e:.2f} | {s:.2f} | {s - e:+.2f} |")
e, s = sum(per_message["echo"].values()), sum(per_message["step"].values())
print(f"| **all** | **{e:.2f}** | **{s:.2f}** | **{s - e:+.2f}** (ratio {e / s:.2f}) |")
PY
