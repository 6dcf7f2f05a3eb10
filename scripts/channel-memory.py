#!/usr/bin/env python3
"""Server memory per player carried on game-server channels (docs/CAPACITY.md).

Starts nothing: point it at a running server (its address and process id). Issues a credential
with the development service key, opens CHANNELS channels, joins PLAYERS players spread over them
(each placed by a position in the same batch, as a game server does), acknowledges every event,
then reads the server's RSS (VmRSS) before the first join and once everything is joined:

    scripts/channel-memory.py --url http://127.0.0.1:7350 --pid <server pid> --players 20000

The players then stay joined until the channels end (the server's idle timeout, 60 s): the
script prints and exits.
"""
import argparse
import json
import time
import urllib.request

SERVICE_KEY = "banter-development-service-key"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit(f"no VmRSS for process {pid}")


def request(url, method, body, bearer):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Bearer {bearer}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=120) as answer:
        return json.loads(answer.read() or b"null")


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--url", required=True)
    args.add_argument("--pid", type=int, required=True)
    args.add_argument("--players", type=int, default=20000)
    args.add_argument("--channels", type=int, default=20)
    args.add_argument("--per-batch", type=int, default=500)
    opts = args.parse_args()

    run = f"m{int(time.time())}"
    issued = request(f"{opts.url}/admin/game-servers", "POST",
                     {"name": run, "players": [f"{run}-"]}, SERVICE_KEY)
    credential = issued["credential"]
    before = rss_kib(opts.pid)
    per_channel = opts.players // opts.channels
    started = time.monotonic()
    events = 0
    for c in range(opts.channels):
        channel = request(f"{opts.url}/v1/channels", "POST", None, credential)["channel"]
        seq, ack = 0, 0
        players = [f"{run}-{c}-{i}" for i in range(per_channel)]
        for first in range(0, per_channel, opts.per_batch):
            chunk = players[first:first + opts.per_batch]
            seq += 1
            batch = {
                "seq": seq, "ack": ack,
                "positions": [{"player": p, "position": [0.0, 0.0, float(i)]}
                              for i, p in enumerate(chunk)],
                "items": [{"player": p, "join": {}} for p in chunk],
            }
            answer = request(f"{opts.url}/v1/channels/{channel}/batch", "POST", batch, credential)
            while True:
                for event in answer["events"]:
                    ack = max(ack, event["n"])
                    events += 1
                    if event["message"]["type"] == "error":
                        raise SystemExit(f"refused: {event}")
                if not answer["more"]:
                    break
                seq += 1
                answer = request(f"{opts.url}/v1/channels/{channel}/batch", "POST",
                                 {"seq": seq, "ack": ack}, credential)
        # Acknowledge the last events, so none stays queued.
        seq += 1
        request(f"{opts.url}/v1/channels/{channel}/batch", "POST", {"seq": seq, "ack": ack}, credential)
    joined = time.monotonic() - started
    time.sleep(2)
    after = rss_kib(opts.pid)
    players = per_channel * opts.channels
    print(json.dumps({
        "players": players,
        "channels": opts.channels,
        "events": events,
        "join_seconds": round(joined, 1),
        "rss_before_kib": before,
        "rss_after_kib": after,
        "rss_per_player_kib": round((after - before) / players, 2),
    }, indent=1))


if __name__ == "__main__":
    main()
