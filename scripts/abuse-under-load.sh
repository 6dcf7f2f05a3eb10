#!/usr/bin/env bash
# Abuse under load (RELIABILITY.md, scenario 6). On one release server and a fresh SQLite file:
#
# 0. warm-up: a short honest load, not measured, so the calm run meets a warm server (statement
#    caches, SQLite's page cache) as the abuse run does;
# 1. calm run: an honest `banter-sim load` alone; then the server's VmRSS is the baseline;
# 2. abuse run: the same load again with `banter-sim abuse` beside it (slowloris, never-reading
#    sessions, 1,000 connects/s churn, malformed frames, expired-token replay), the server's
#    VmRSS sampled throughout for the peak;
# 3. after: wait until /metrics shows every session and HTTP connection gone, then poll VmRSS
#    until it is back within the tolerance (the allocator returns freed memory to the system
#    over seconds, not at once), for at most RSS_SETTLE_TIMEOUT seconds.
#
# The abuser runs under `nice -n ABUSE_NICE` (10): on 2 cores an abuser at full priority starves the honest
# client of CPU, and what is measured would be the client's queueing, not the server's.
#
# Exit 1 when an invariant fails:
#   - the honest p99 under abuse is more than RATIO_MAX (2) times the calm p99;
#   - the server's RSS after is more than the baseline + RSS_TOLERANCE_KIB (16 MiB: allocator
#     slack for a process whose calm baseline is a few tens of MiB);
#   - a reward acknowledged is missing from the ledger, paid twice, paid with other coins, or a
#     ledger row no bot was told about (nothing crashes here, so the two must be equal);
#   - any honest rejection or error, in either run;
#   - the server stopped answering /healthz (banter-sim abuse checks during and after) or an
#     expired or foreign token got a session (banter-sim abuse exits non-zero for both).
#
#   scripts/abuse-under-load.sh                       # 100 bots, 45 s each run
#   BOTS=100 DURATION=60 ABUSE_ARGS="--churn-rate 2000" scripts/abuse-under-load.sh
#   SERVER_BIN=/path/to/other/banter-server scripts/abuse-under-load.sh   # another build, same run
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${PORT:-7380}
# 100 bots for 45 s: about 4,500 honest round trips a run, so the p99 is the 45th slowest and
# not one unlucky fsync.
BOTS=${BOTS:-100}
DURATION=${DURATION:-45}
WARMUP=${WARMUP:-10}
# The abusers start this many seconds before the honest load (so slowloris and the never-reading
# sessions are in place) and stop this many after it.
ABUSE_LEAD=${ABUSE_LEAD:-3}
ABUSE_ARGS=${ABUSE_ARGS:-}
ABUSE_NICE=${ABUSE_NICE:-10}
RATIO_MAX=${RATIO_MAX:-2}
RSS_TOLERANCE_KIB=${RSS_TOLERANCE_KIB:-16384}
# How long to wait for the server to let go of what the abusers held.
RELEASE_TIMEOUT=${RELEASE_TIMEOUT:-120}
# How long to wait, after that, for RSS to come back within the tolerance.
RSS_SETTLE_TIMEOUT=${RSS_SETTLE_TIMEOUT:-60}
WORK=$(mktemp -d /tmp/banter-abuse.XXXXXX)
BIN=${CARGO_TARGET_DIR:-target}/release
URL="http://127.0.0.1:$PORT"

# 500 slowloris sockets, 200 never-reading sessions, churn and the bots: more than 1,024 files.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cargo build --release -q -p banter-server -p banter-sim

"${SERVER_BIN:-$BIN/banter-server}" serve --bind "127.0.0.1:$PORT" --database-url "sqlite://$WORK/banter.db" \
    >"$WORK/server.log" 2>&1 &
SERVER=$!
SAMPLER=
cleanup() {
    [ -n "$SAMPLER" ] && kill "$SAMPLER" 2>/dev/null || true
    kill -TERM "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 100); do
    curl -sf "$URL/readyz" >/dev/null && break
    sleep 0.1
done
curl -sf "$URL/readyz" >/dev/null || { echo "the server did not become ready; see $WORK/server.log" >&2; exit 1; }

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER/status" 2>/dev/null || echo 0; }
# Bytes queued in the kernel on the server's sockets, not yet taken by the peer: what a client
# that never reads costs outside the process (not in VmRSS).
sendq() { ss -tnH state established "( sport = :$PORT )" 2>/dev/null | awk '{ q += $2 } END { print q + 0 }'; }
metric() { curl -sf --max-time 5 "$URL/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# Polls /metrics until no session is open and no HTTP connection but the poll itself is being
# served (the handshake gauge, where the server has it); fails after RELEASE_TIMEOUT seconds.
wait_released() {
    local start=$SECONDS sessions http
    while :; do
        if ! kill -0 "$SERVER" 2>/dev/null; then
            echo "the server is gone" >&2
            echo -1
            return 0
        fi
        sessions=$(metric banter_open_sessions || true)
        http=$(metric banter_http_connections_open || true)
        if [ "${sessions:-x}" = 0 ] && [ "${http:-1}" -le 1 ]; then
            echo $((SECONDS - start))
            return 0
        fi
        if [ $((SECONDS - start)) -ge "$RELEASE_TIMEOUT" ]; then
            echo "after ${RELEASE_TIMEOUT} s: open sessions ${sessions:-?}, HTTP connections ${http:-?}" >&2
            echo -1
            return 0
        fi
        sleep 1
    done
}

load() { # $1: run name, $2: seconds
    "$BIN/banter-sim" load --url "$URL" --bots "$BOTS" --duration "${2:-$DURATION}" --json --no-progress \
        --acknowledged-out "$WORK/$1-acknowledged.json" >"$WORK/$1-load.json" \
        2>"$WORK/$1-load.err" || true # refusals and errors are checked below, from the JSON
}

RSS_START=$(rss)
echo "warm-up: $BOTS bots for $WARMUP s (not measured)" >&2
load warmup "$WARMUP"
wait_released >/dev/null
echo "calm run: $BOTS bots for $DURATION s" >&2
load calm
CALM_RELEASE_S=$(wait_released)
RSS_BASELINE=$(rss)

echo "abuse run: the same load with banter-sim abuse beside it (nice -n $ABUSE_NICE)" >&2
( while kill -0 "$SERVER" 2>/dev/null; do echo "$(rss) $(sendq)"; sleep 0.5; done ) >"$WORK/rss-abuse.txt" 2>/dev/null &
SAMPLER=$!
ABUSE_SECONDS=$((DURATION + 2 * ABUSE_LEAD))
# shellcheck disable=SC2086 # ABUSE_ARGS is a list of flags
nice -n "$ABUSE_NICE" "$BIN/banter-sim" abuse --url "$URL" --seconds "$ABUSE_SECONDS" --json $ABUSE_ARGS \
    >"$WORK/abuse.json" 2>"$WORK/abuse.err" &
ABUSER=$!
sleep "$ABUSE_LEAD"
load abuse
ABUSE_RC=0
wait "$ABUSER" || ABUSE_RC=$?
RELEASE_S=$(wait_released)
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true
SAMPLER=
RSS_RELEASED=$(rss)
SETTLE_START=$SECONDS
RSS_AFTER=$RSS_RELEASED
while [ "$RSS_AFTER" -gt $((RSS_BASELINE + RSS_TOLERANCE_KIB)) ] \
    && [ $((SECONDS - SETTLE_START)) -lt "$RSS_SETTLE_TIMEOUT" ]; do
    sleep 1
    RSS_AFTER=$(rss)
done
RSS_SETTLE_S=$((SECONDS - SETTLE_START))
RSS_PEAK=$(awk '$1 > m { m = $1 } END { print m + 0 }' "$WORK/rss-abuse.txt")
SENDQ_PEAK=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$WORK/rss-abuse.txt")
HEALTHY=0
curl -sf --max-time 5 "$URL/healthz" >/dev/null && HEALTHY=1
sqlite3 -separator '|' "$WORK/banter.db" "SELECT player_id, quest_id, coins FROM reward_ledger" \
    >"$WORK/ledger.txt"

python3 - "$WORK" <<PY
import collections, json, sys
work = sys.argv[1]
def load(path):
    with open(path) as f:
        return json.load(f)
calm, abuse = load(f"{work}/calm-load.json"), load(f"{work}/abuse-load.json")
acknowledged = [r for run in ("warmup", "calm", "abuse")
                for r in load(f"{work}/{run}-acknowledged.json")["rewards"]]
try:
    abuser = load(f"{work}/abuse.json")
except (OSError, ValueError):
    abuser = None
ledger = [l.split("|") for l in open(f"{work}/ledger.txt").read().split("\n") if l]
paid = collections.Counter((p, q) for p, q, _ in ledger)
coins = {(p, q): int(c) for p, q, c in ledger}
told = {(r["player"], r["quest"]) for r in acknowledged}
missing = [r for r in acknowledged if (r["player"], r["quest"]) not in paid]
twice = [k for k, n in paid.items() if n > 1]
wrong = [r for r in acknowledged
         if (r["player"], r["quest"]) in coins and coins[(r["player"], r["quest"])] != r["coins"]]
untold = [k for k in paid if k not in told]

ratio_max, tolerance = float("$RATIO_MAX"), int("$RSS_TOLERANCE_KIB")
baseline, peak, after = int("$RSS_BASELINE"), int("$RSS_PEAK"), int("$RSS_AFTER")
ratio = lambda k: abuse["latency_us"][k] / max(calm["latency_us"][k], 1)
ms = lambda us: f"{us / 1000:.1f} ms"

failures = []
if ratio("p99") > ratio_max:
    failures.append(f"honest p99 under abuse is {ratio('p99'):.2f}x the calm p99 (limit {ratio_max}x)")
if after > baseline + tolerance:
    failures.append(f"server RSS {after} KiB > baseline {baseline} + {tolerance} KiB, {int('$RSS_SETTLE_TIMEOUT')} s after the release")
if missing or twice or wrong or untold:
    failures.append(f"ledger: {len(missing)} missing, {len(twice)} twice, {len(wrong)} other coins, {len(untold)} untold")
warmup = load(f"{work}/warmup-load.json")
for name, run in (("warm-up", warmup), ("calm", calm), ("abuse", abuse)):
    if run["rejections"] or run["errors"]:
        failures.append(f"{name} run: {run['rejections']} honest rejections {run['rejections_by_code']}, "
                        f"{run['errors']} errors {run['error_samples'][:3]}")
if "$ABUSE_RC" != "0":
    failures.append(f"banter-sim abuse exited $ABUSE_RC (healthz failed or a bad token got a session; see abuse.json)")
if "$HEALTHY" != "1":
    failures.append("the server does not answer /healthz at the end")
if int("$RELEASE_S") < 0:
    failures.append(f"the server still held sessions or connections {int('$RELEASE_TIMEOUT')} s after the abusers stopped")

rows = [
    ("", "calm", "abuse", "ratio"),
    ("honest bots", str(calm["bots"]), str(abuse["bots"]), ""),
    ("honest messages", str(calm["messages"]), str(abuse["messages"]), ""),
    ("honest msgs/s", str(calm["messages_per_sec"]), str(abuse["messages_per_sec"]), ""),
    ("latency p50", ms(calm["latency_us"]["p50"]), ms(abuse["latency_us"]["p50"]), f"{ratio('p50'):.2f}"),
    ("latency p99", ms(calm["latency_us"]["p99"]), ms(abuse["latency_us"]["p99"]), f"{ratio('p99'):.2f}"),
    ("latency p99.9", ms(calm["latency_us"]["p999"]), ms(abuse["latency_us"]["p999"]), f"{ratio('p999'):.2f}"),
    ("latency max", ms(calm["latency_us"]["max"]), ms(abuse["latency_us"]["max"]), ""),
    ("honest rejections", str(calm["rejections"]), str(abuse["rejections"]), ""),
    ("honest errors", str(calm["errors"]), str(abuse["errors"]), ""),
    ("quests completed", str(calm["quests_completed"]), str(abuse["quests_completed"]), ""),
]
# Which requests the tail belongs to: the p99 of each kind, calm and under abuse.
for kind in sorted(set(calm.get("latency_by_kind_us", {})) | set(abuse.get("latency_by_kind_us", {}))):
    c, a = calm["latency_by_kind_us"].get(kind), abuse["latency_by_kind_us"].get(kind)
    cell = lambda k: f"{ms(k['p99'])} ({k['messages']})" if k else "-"
    rows.append((f"  p99 {kind} (msgs)", cell(c), cell(a), ""))
width = [max(len(r[i]) for r in rows) for i in range(4)]
for r in rows:
    print("  ".join(c.ljust(width[i]) for i, c in enumerate(r)).rstrip())
print()
print(f"server RSS: start {int('$RSS_START')} KiB, baseline after calm {baseline} KiB, "
      f"peak under abuse {peak} KiB, {int('$RSS_RELEASED')} KiB when every connection was gone, "
      f"{after} KiB {int('$RSS_SETTLE_S')} s later (tolerance +{tolerance} KiB)")
print(f"server sockets' kernel send queues: peak {int('$SENDQ_PEAK') // 1024} KiB under abuse (not in RSS)")
print(f"released: calm run {'$CALM_RELEASE_S'} s, abuse run {'$RELEASE_S'} s after the abusers stopped "
      "(open sessions and HTTP connections back to 0)")
print(f"rewards acknowledged {len(acknowledged)}, ledger rows {len(ledger)}: "
      f"{len(missing)} missing, {len(twice)} twice, {len(wrong)} other coins, {len(untold)} untold")
if abuser:
    s, n, c, m, r, h = (abuser[k] for k in ("slowloris", "noread", "churn", "malformed", "replay", "health"))
    print(f"slowloris: {s['connected']} connected, {s['closed_by_server']} closed by the server "
          f"after p50 {s['closed_after_s']['p50']} s (max {s['closed_after_s']['max']}), open at end {s['open_at_end']}")
    print(f"never-reading: {n['sessions_opened']} sessions, {n['requests_sent']} requests, "
          f"{n['closed_by_server']} dropped after p50 {n['closed_after_s']['p50']} s, open at end {n['open_at_end']}")
    print(f"churn: {c['attempted']} upgrades, {c['achieved_per_sec']}/s; valid {c['valid']}; garbage {c['garbage']}")
    print(f"malformed: {m['frames_total']} frames on {m['connects']} connects; errors {m['errors_received']}; "
          f"byes {m['byes']}; closed by server {m['closed_by_server']}")
    print(f"replay: {r['attempted']} upgrades; {r['answers']}; admitted {r['admitted']}")
    print(f"healthz: {h['probes']} probes, {h['failures']} failed, slowest {h['slowest_ms']} ms")
    for f in abuser["findings"]:
        print(("FAIL: " if f["fail"] else "note: ") + f["what"])
print(f"files: {work}")
for f in failures:
    print(f"INVARIANT FAILED: {f}")
print("abuse under load: " + ("FAILED" if failures else "held"))
sys.exit(1 if failures else 0)
PY
