#!/usr/bin/env bash
# A stop while the database is gone (RELIABILITY.md, section 8): a release server on PostgreSQL
# through a TCP proxy of this script's own, `banter-sim load` playing quests, then the proxy
# takes the database away and the server gets SIGTERM with the default grace. Per mode:
#
#   down    every database connection is cut and new ones are refused (a stopped database)
#   frozen  every connection stays open and no byte moves either way (a hung database)
#
# Then, on the database directly: how long the stop took, what the server logged it could not
# write, every acknowledged reward in the ledger, and every payout with exactly one audit row.
# Exit 1 when the stop took longer than the grace (plus 0.5 s for the process to exit) or any
# money or audit check fails.
#
#   scripts/stop-under-load.sh                     # both modes, 100 bots, default grace (10 s)
#   MODES=frozen GRACE=5 scripts/stop-under-load.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PG_HOST=${PG_HOST:-127.0.0.1} PG_PORT=${PG_PORT:-5432}
PG=postgres://postgres@$PG_HOST:$PG_PORT
PROXY_PORT=${PROXY_PORT:-6544}
PORT=${PORT:-7372}
BOTS=${BOTS:-100}
FAULT_AFTER=${FAULT_AFTER:-8}
MODES=${MODES:-"down frozen"}
GRACE=${GRACE:-}
BUILD=${BUILD:-1}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
WORK=$(mktemp -d /tmp/banter-stop.XXXXXX)

[ "$BUILD" = 1 ] && cargo build --release -q -p banter-server -p banter-sim

# The proxy: SIGUSR1 takes the database down, SIGUSR2 freezes it.
cat >"$WORK/proxy.py" <<'PY'
import asyncio, signal, sys
listen_port, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
state = {"mode": "up"}
writers, frozen = set(), asyncio.Event()

async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            if state["mode"] == "frozen":
                await asyncio.Event().wait()  # hold the bytes, and the connection, for ever
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        if state["mode"] != "frozen":
            writer.close()

async def client(reader, writer):
    if state["mode"] == "down":
        writer.close()
        return
    if state["mode"] == "frozen":
        await asyncio.Event().wait()  # accepted, and never a byte: a database that hangs
    up_reader, up_writer = await asyncio.open_connection(host, port)
    writers.update({writer, up_writer})
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

async def main():
    server = await asyncio.start_server(client, "127.0.0.1", listen_port)
    loop = asyncio.get_running_loop()
    def down():
        state["mode"] = "down"
        for w in writers:
            w.transport.abort()
    def freeze():
        state["mode"] = "frozen"
    loop.add_signal_handler(signal.SIGUSR1, down)
    loop.add_signal_handler(signal.SIGUSR2, freeze)
    print("proxy up", flush=True)
    await server.serve_forever()

asyncio.run(main())
PY

failed=0
for mode in $MODES; do
    db=banter_stop_$mode
    psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
    python3 "$WORK/proxy.py" "$PROXY_PORT" "$PG_HOST" "$PG_PORT" >"$WORK/proxy-$mode.log" 2>&1 &
    proxy=$!
    for _ in $(seq 50); do grep -q "proxy up" "$WORK/proxy-$mode.log" && break; sleep 0.1; done
    grace_args=()
    [ -n "$GRACE" ] && grace_args=(--shutdown-grace-secs "$GRACE")
    "$BIN/banter-server" serve --bind "127.0.0.1:$PORT" \
        --database-url "postgres://postgres@127.0.0.1:$PROXY_PORT/$db" "${grace_args[@]}" \
        >"$WORK/server-$mode.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
    # The load outlives the stop by a few seconds and then ends by itself, writing what it was told.
    "$BIN/banter-sim" load --url "http://127.0.0.1:$PORT" --bots "$BOTS" \
        --duration $((FAULT_AFTER + 1 + ${GRACE:-10} + 3)) --json \
        --no-progress --acknowledged-out "$WORK/acknowledged-$mode.json" \
        >"$WORK/load-$mode.json" 2>"$WORK/load-$mode.log" &
    load=$!
    sleep "$FAULT_AFTER"
    if [ "$mode" = down ]; then kill -USR1 "$proxy"; else kill -USR2 "$proxy"; fi
    sleep 1
    started=$(date +%s.%N)
    kill -TERM "$server"
    wait "$server" || true
    stopped=$(date +%s.%N)
    # It reports errors for everything the stop cut off: expected, and not judged here.
    wait "$load" 2>/dev/null || true
    kill "$proxy" 2>/dev/null || true
    wait "$proxy" 2>/dev/null || true

    psql "$PG/$db" -tAF '|' -c "SELECT player_id, quest_id FROM reward_ledger" >"$WORK/ledger-$mode.txt"
    psql "$PG/$db" -tAF '|' -f scripts/sql/payout-audit-rows.sql >"$WORK/audited-$mode.txt"
    python3 - "$WORK" "$mode" "$started" "$stopped" "${GRACE:-10}" <<'PY' || failed=1
import collections, json, os, re, sys
work, mode, started, stopped, grace = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rows = lambda name: [tuple(l.split("|")) for l in open(f"{work}/{name}-{mode}.txt").read().split("\n") if l]
ledger, audited = collections.Counter(rows("ledger")), collections.Counter(rows("audited"))
path = f"{work}/acknowledged-{mode}.json"
acknowledged = json.load(open(path))["rewards"] if os.path.exists(path) and os.path.getsize(path) else []
log = re.sub(r"\x1b\[[0-9;]*m", "", open(f"{work}/server-{mode}.log").read())
lines = lambda what: [line for line in log.splitlines() if what in line]
records = lambda what: sum(int(n) for line in lines(what) for n in re.findall(r"records=(\d+)", line))
summary = {
    "mode": mode, "stop_seconds": round(stopped - started, 2), "grace_seconds": grace,
    "rewards_acknowledged": len(acknowledged), "ledger_rows": sum(ledger.values()),
    "rewards_missing_from_ledger": sum(1 for r in acknowledged if (r["player"], r["quest"]) not in ledger),
    "payout_audit_rows": sum(audited.values()),
    "payouts_without_exactly_one_audit_row": sum(1 for k in ledger if audited[k] != 1),
    "payout_audit_rows_without_a_payout": sum(1 for k in audited if k not in ledger),
    # Refusals and plain steps (the trail): best-effort, counted and logged when lost.
    "best_effort_audit_records_lost_logged": records("audit records dropped") + records("audit records not written"),
    "conversations_not_parked_logged": len(lines("cannot park the conversation")),
    "server_said_stopped_after": next((re.findall(r"seconds=([0-9.]+)", l)[0] for l in lines("INFO banter_server: stopped")), None),
    "panics": log.count("panicked"),
}
print(json.dumps(summary))
bad = (summary["stop_seconds"] > grace + 0.5 or summary["rewards_missing_from_ledger"]
       or summary["payouts_without_exactly_one_audit_row"] or summary["payout_audit_rows_without_a_payout"]
       or summary["panics"])
sys.exit(1 if bad else 0)
PY
done
echo "files: $WORK"
[ "$failed" = 0 ] && echo "stop under load: held" || echo "stop under load: FAILED"
exit "$failed"
