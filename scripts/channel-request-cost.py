#!/usr/bin/env python3
# Server CPU per game-server channel request and per position (docs/CAPACITY.md, M7): against a
# running server, `scripts/channel-request-cost.py http://127.0.0.1:7350 <server pid>`. Issues a
# credential with the development service key, joins 50 players on one channel, then times 2,000
# empty batches and 2,000 batches of 50 positions by the server's CPU (/proc/<pid>/stat).
import json, sys, time, urllib.request, http.client
url, pid = sys.argv[1], int(sys.argv[2])
host, port = url.split("//")[1].split(":")
KEY = "banter-development-service-key"
conn = http.client.HTTPConnection(host, int(port))
def req(method, path, body, bearer):
    data = None if body is None else json.dumps(body)
    headers = {"Authorization": f"Bearer {bearer}"}
    if data is not None: headers["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse(); return json.loads(r.read() or b"null")
def cpu():
    f = open(f"/proc/{pid}/stat").read().split(); return int(f[13]) + int(f[14])
run = f"r{int(time.time())}"
cred = req("POST", "/admin/game-servers", {"name": run, "players": [f"{run}-"]}, KEY)["credential"]
ch = req("POST", "/v1/channels", None, cred)["channel"]
players = [f"{run}-{i}" for i in range(50)]
seq = 1; ack = 0
a = req("POST", f"/v1/channels/{ch}/batch", {"seq": seq, "ack": 0, "positions": [{"player": p, "position": [0.0, 0.0, float(i)]} for i, p in enumerate(players)], "items": [{"player": p, "join": {}} for p in players]}, cred)
ack = max(e["n"] for e in a["events"])
N = 2000
c0 = cpu(); t0 = time.time()
for _ in range(N):
    seq += 1
    req("POST", f"/v1/channels/{ch}/batch", {"seq": seq, "ack": ack}, cred)
c1 = cpu(); t1 = time.time()
print(f"empty batch: {(c1-c0)*10000/N:.1f} us server CPU per request ({N} in {t1-t0:.1f} s)")
c0 = cpu()
for k in range(N):
    seq += 1
    req("POST", f"/v1/channels/{ch}/batch", {"seq": seq, "ack": ack, "positions": [{"player": p, "position": [float(k % 3), 0.0, float(i)]} for i, p in enumerate(players)]}, cred)
c1 = cpu()
print(f"batch of 50 positions: {(c1-c0)*10000/N:.1f} us server CPU per request, {(c1-c0)*10000/N/50:.2f} us per position")
