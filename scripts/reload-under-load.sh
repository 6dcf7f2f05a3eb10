#!/usr/bin/env bash
# Reloads of a large content folder beside honest players (issue 22): the honest players' p99
# with no reload running, then with reloads back to back for the whole run. Reloads load and
# check on a blocking thread, one at a time, so the players' steps should not notice them.
#
# A warm-up load (WARMUP seconds, not measured) comes first, so that the calm run meets a warm
# server (statement caches, SQLite's page cache, a database past its first pages) as the run
# beside the reloads does.
#
#   scripts/reload-under-load.sh                  # 10,000 extra NPCs, 5 quests each, 50 bots, 30 s
#   NPCS=3000 BOTS=100 DURATION=20 scripts/reload-under-load.sh
#   BIN=target/release BUILD=0 scripts/reload-under-load.sh   # binaries already built
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib-under-load.sh
. scripts/lib-under-load.sh

NPCS=${NPCS:-10000}
BOTS=${BOTS:-50}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-10}
PORT=${PORT:-7381}
KEY=${KEY:-banter-development-service-key}
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release}
WORK=$(mktemp -d /tmp/banter-reload.XXXXXX)

if [ "${BUILD:-1}" = 1 ]; then
    cargo build --release -q -p banter-server -p banter-sim
fi

# N NPCs after the sample's generated ones: each a copy of Hattie's transcription (three quests)
# plus two more talk quests, under ids of its own, spread over the sample's islands.
mkdir -p "$WORK/transcriptions"
cp content-src/transcriptions/*.json "$WORK/transcriptions/"
python3 - "$WORK/transcriptions" "$NPCS" <<'PY'
import json, sys, copy
out, n = sys.argv[1], int(sys.argv[2])
base = json.load(open("content-src/transcriptions/hattie.json"))
islands = ["brinehollow", "gullrock", "mistral_cay", "kelpwick"]
talk = next(q for q in base["Quests"] if q["Shape"] == "talk")
for i in range(n):
    t = copy.deepcopy(base)
    island = islands[i % len(islands)]
    t["Npc"] = {"Id": f"npc{i}", "Name": f"Villager {i}", "Island": island,
                "Position": [float(3000 + (i % 100) * 30), 2.0, float(3000 + (i // 100) * 30)]}
    t["Conversation"] = f"Villager{i}"
    quests = t["Quests"] + [copy.deepcopy(talk), copy.deepcopy(talk)]
    for k, q in enumerate(quests):
        q["Id"] = f"{q['Id']}{i}x{k}"
        q["Prerequisites"] = [f"{p}{i}x0" for p in q.get("Prerequisites", [])][:1]
        for o in q["Objectives"]:
            o["Island"] = island
        q["Ask"] = f"{q['Ask']} ({k})"
    t["Quests"] = quests
    json.dump(t, open(f"{out}/npc{i}.json", "w"))
PY
cp -r content "$WORK/content"
"$BIN/banter-server" gen-content "$WORK/transcriptions" --out "$WORK/content" >/dev/null
/usr/bin/time -f "check-content: %e s, %M KiB" "$BIN/banter-server" check-content "$WORK/content" >/dev/null

"$BIN/banter-server" serve --bind "127.0.0.1:$PORT" --database-url "sqlite://$WORK/banter.db" \
    --content "$WORK/content" >"$WORK/server.log" 2>&1 &
SERVER=$!
# The reloader loops until `stop` exists: an early exit must stop it too, or it spins on.
trap 'touch "$WORK/stop"; kill $SERVER 2>/dev/null || true' EXIT
# A large world takes as long to load at start as a reload does: wait up to 20 minutes.
wait_ready "http://127.0.0.1:$PORT" 12000

# One load run into $WORK/<run>.json. banter-sim fails a run with any refusal or error; say
# what they were before `set -e` ends the script, instead of stopping without a word.
load() {
    if ! "$BIN/banter-sim" load --url "http://127.0.0.1:$PORT" --bots "$BOTS" \
        --duration "${2:-$DURATION}" --content "$WORK/content" --service-key "$KEY" --no-progress \
        --json >"$WORK/$1.json"; then
        echo "the $1 run failed: $(failures <"$WORK/$1.json" || echo 'no report'); see $WORK" >&2
        return 1
    fi
}

failures() {
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["errors"], "errors,", r["rejections"], "refusals", r["rejections_by_code"], "e.g.", sorted(set(r["error_samples"])))'
}

p99() { python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["latency_us"]["p99"])'; }

echo "warm-up: $BOTS bots, $WARMUP s (not measured)"
load warmup "$WARMUP"
echo "calm run: $BOTS bots, $DURATION s"
load calm
echo "reload run: the same, with reloads back to back"
(
    while [ ! -e "$WORK/stop" ]; do
        start=$(date +%s.%N)
        code=$(curl -s -o "$WORK/reload.out" -w '%{http_code}' -X POST \
            -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/admin/reload")
        echo "$code $(echo "$(date +%s.%N) - $start" | bc)" >>"$WORK/reloads.txt"
    done
) &
RELOADER=$!
load reload
touch "$WORK/stop"
wait $RELOADER
calm=$(p99 <"$WORK/calm.json")
during=$(p99 <"$WORK/reload.json")
echo "reloads: $(wc -l <"$WORK/reloads.txt") ($(cut -d' ' -f1 "$WORK/reloads.txt" | sort | uniq -c | tr '\n' ' ')), seconds each: $(cut -d' ' -f2 "$WORK/reloads.txt" | tr '\n' ' ')"
echo "honest p99: calm $calm us, during reloads $during us, ratio $(echo "scale=2; $during / $calm" | bc)"
echo "details in $WORK"
