# Shell functions the *-under-load.sh scripts share; sourced, not run.

# wait_ready URL [TRIES]: polls URL/readyz every 0.1 s, TRIES times (default 100: about 10 s),
# until the server answers 200; otherwise exits 1, pointing at $WORK/server.log.
wait_ready() {
    local url=$1 tries=${2:-100}
    for _ in $(seq 1 "$tries"); do
        curl -sf "$url/readyz" >/dev/null && return 0
        sleep 0.1
    done
    curl -sf "$url/readyz" >/dev/null && return 0
    echo "the server did not become ready; see $WORK/server.log" >&2
    exit 1
}
