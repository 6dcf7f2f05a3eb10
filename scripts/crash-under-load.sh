#!/usr/bin/env bash
# Crash under load (RELIABILITY.md, scenario 5): `kill -9` the server in the middle of a
# `banter-sim load` run against PostgreSQL, start it again on the same database, let the bots
# reconnect and play on, then check the database against everything the bots were told:
# every acknowledged reward is in the ledger (with its coins), no reward is there twice, and
# every acknowledged objective progress is stored, and every payout has its audit row (written in
# the payout's own transaction, so a crash keeps both or neither). Exit 1 on any violation.
#
#   scripts/crash-under-load.sh                # 100 bots, 30 s, kill at 10 s, down 2 s
#   BOTS=200 DURATION=60 KILLS=3 scripts/crash-under-load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-under-load.sh
. scripts/lib-under-load.sh

PG=${PG:-postgres://postgres@127.0.0.1:5432}
DB=${DB:-banter_crash}
PORT=${PORT:-7370}
BOTS=${BOTS:-100}
DURATION=${DURATION:-30}
KILL_AFTER=${KILL_AFTER:-10}
KILLS=${KILLS:-1}
DOWN=${DOWN:-2}
WORK=$(mktemp -d /tmp/banter-crash.XXXXXX)
BIN=${CARGO_TARGET_DIR:-target}/release

cargo build --release -q -p banter-server -p banter-sim
psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" >/dev/null

start_server() {
    "$BIN/banter-server" serve --bind "127.0.0.1:$PORT" --database-url "$PG/$DB" \
        >>"$WORK/server.log" 2>&1 &
    SERVER=$!
    wait_ready "http://127.0.0.1:$PORT"
}

start_server
"$BIN/banter-sim" load --url "http://127.0.0.1:$PORT" --bots "$BOTS" --duration "$DURATION" \
    --json --no-progress --acknowledged-out "$WORK/acknowledged.json" >"$WORK/load.json" &
LOAD=$!
for kill_number in $(seq 1 "$KILLS"); do
    sleep "$KILL_AFTER"
    echo "kill -9 the server (pid $SERVER), crash $kill_number of $KILLS" >&2
    kill -9 "$SERVER"
    wait "$SERVER" 2>/dev/null || true
    sleep "$DOWN"
    start_server
done
# The load reports errors for the requests the crash cut off: expected here, checked below.
wait "$LOAD" || true
kill -TERM "$SERVER"
wait "$SERVER" 2>/dev/null || true

psql "$PG/$DB" -tAF '|' -c "SELECT player_id, quest_id, coins FROM reward_ledger" >"$WORK/ledger.txt"
psql "$PG/$DB" -tAF '|' -c "SELECT player_id, quest_id, objective_id, progress FROM objective_progress" \
    >"$WORK/progress.txt"
psql "$PG/$DB" -tAF '|' -f scripts/sql/payout-audit-rows.sql >"$WORK/audited.txt"

python3 - "$WORK" <<'PY'
import collections, json, sys
work = sys.argv[1]
acknowledged = json.load(open(f"{work}/acknowledged.json"))
load = json.load(open(f"{work}/load.json"))
ledger = [l.split("|") for l in open(f"{work}/ledger.txt").read().split("\n") if l]
stored = {(p, q, o): int(v) for p, q, o, v in
          (l.split("|") for l in open(f"{work}/progress.txt").read().split("\n") if l)}
audited = collections.Counter(tuple(l.split("|")) for l in open(f"{work}/audited.txt").read().split("\n") if l)
paid = collections.Counter((p, q) for p, q, _ in ledger)
unaudited = [k for k in paid if audited[k] != 1]
audited_unpaid = [k for k in audited if k not in paid]
coins = {(p, q): int(c) for p, q, c in ledger}
twice = [k for k, n in paid.items() if n > 1]
missing = [r for r in acknowledged["rewards"] if (r["player"], r["quest"]) not in paid]
wrong = [r for r in acknowledged["rewards"]
         if (r["player"], r["quest"]) in coins and coins[(r["player"], r["quest"])] != r["coins"]]
lost = [p for p in acknowledged["progress"]
        if stored.get((p["player"], p["quest"], p["objective"]), -1) < p["progress"]]
summary = {
    "bots": load["bots"], "messages": load["messages"], "errors": load["errors"],
    "rejections": load["rejections"], "rejections_by_code": load["rejections_by_code"],
    "reconnects": load["reconnects"],
    "rewards_acknowledged": len(acknowledged["rewards"]), "ledger_rows": len(ledger),
    "rewards_missing_from_ledger": len(missing), "rewards_paid_twice": len(twice),
    "rewards_with_other_coins": len(wrong),
    "progress_acknowledged": len(acknowledged["progress"]), "progress_lost": len(lost),
    "payout_audit_rows": sum(audited.values()),
    "payouts_without_exactly_one_audit_row": len(unaudited),
    "payout_audit_rows_without_a_payout": len(audited_unpaid),
}
print(json.dumps(summary, indent=2))
sys.exit(1 if missing or twice or wrong or lost or unaudited or audited_unpaid else 0)
PY
