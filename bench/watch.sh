#!/usr/bin/env bash
# What `clrspy watch` costs and how fast it acts:
#  1. idle: CPU % and RSS of watch over SECONDS with rules no process matches (other .NET
#     processes on the machine are seen and logged, as in real use);
#  2. latency: the age of a process when its rule's trace starts (`age_ms` of `action_started`
#     in decisions.jsonl: from the process's start to the rule being applied), for programs found
#     by polling (attach) and for programs held at the listen port (--listen);
#  3. the hold: wall time of a short program no rule matches, with and without the port variable.
#
#   bench/watch.sh [SECONDS]      # default 600 (10 minutes); RUNS=5 programs per latency case
#
# CLRSPY picks the binary (default: target/release/clrspy, built here). Needs dotnet.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
runs=${RUNS:-5}
clrspy=${CLRSPY:-$root/target/release/clrspy}
if [ -z "${CLRSPY:-}" ]; then
    (cd "$root" && cargo build -q --release --locked -p clrspy)
fi
wl=$root/target/testapps/Workloads
if [ ! -f "$wl/Workloads.dll" ]; then
    dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$wl" >/dev/null
fi
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
# A folder link of our own: the rules match this path and nothing else on the machine.
ln -s "$wl" "$work/bench-watch-wl"
dll=$work/bench-watch-wl/Workloads.dll
hz=$(getconf CLK_TCK)

cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

echo "== idle: $seconds s, rules that match nothing =="
cat > "$work/none.json" <<'JSON'
{ "rules": [ { "name": "none", "match": { "name": "no-such-process-anywhere" }, "dump": {} } ] }
JSON
"$clrspy" watch --rules "$work/none.json" --out "$work/idle" --quiet > "$work/idle.out" 2>&1 &
wpid=$!
pids+=("$wpid")
sleep 2
t0=$(cpu_ticks "$wpid")
start=$(date +%s.%N)
max_rss=$(rss_kb "$wpid")
end_at=$(( $(date +%s) + seconds ))
while [ "$(date +%s)" -lt "$end_at" ]; do
    sleep 5
    r=$(rss_kb "$wpid")
    [ "$r" -gt "$max_rss" ] && max_rss=$r
done
t1=$(cpu_ticks "$wpid")
stop=$(date +%s.%N)
final_rss=$(rss_kb "$wpid")
kill -TERM "$wpid"; wait "$wpid" || true
seen=$(grep -c '"event":"seen"' "$work/idle/decisions.jsonl" || true)
python3 - "$t0" "$t1" "$hz" "$start" "$stop" "$max_rss" "$final_rss" "$seen" <<'PY'
import sys
t0, t1, hz, start, stop, mx, fin, seen = sys.argv[1:]
cpu = (int(t1) - int(t0)) / int(hz)
wall = float(stop) - float(start)
print(f"watch idle over {wall:.0f} s: CPU {cpu:.2f} s = {100 * cpu / wall:.3f} % of one core; "
      f"RSS max {int(mx) / 1024:.1f} MB, at the end {int(fin) / 1024:.1f} MB; "
      f"{seen} other .NET process(es) seen meanwhile")
PY

latency() {
    local mode=$1
    shift
    local out=$work/lat-$mode
    cat > "$work/lat.json" <<'JSON'
{ "rules": [ { "name": "lat", "match": { "command_line": "bench-watch-wl/" },
               "trace": { "profile": "gc-collect", "duration": "1s" } } ] }
JSON
    "$clrspy" watch --rules "$work/lat.json" --out "$out" --quiet "$@" > "$out.txt" 2>&1 &
    local w=$!
    pids+=("$w")
    sleep 1
    for _ in $(seq "$runs"); do
        if [ "$mode" = listen ]; then
            DOTNET_DiagnosticPorts=$work/port.sock,connect,suspend dotnet "$dll" idle --seconds 2 > /dev/null
        else
            dotnet "$dll" idle --seconds 2 > /dev/null
        fi
        sleep 1
    done
    sleep 2
    kill -TERM "$w"; wait "$w" || true
    python3 - "$mode" "$out/decisions.jsonl" <<'PY'
import json, statistics, sys
mode, path = sys.argv[1:]
ages = [l["age_ms"] for l in map(json.loads, open(path))
        if l.get("event") == "action_started" and "age_ms" in l]
if not ages:
    print(f"{mode}: no trace started (see the log {path})")
else:
    print(f"{mode}: process start -> rule applied (trace started): "
          f"min {min(ages)} ms, median {statistics.median(ages):.0f} ms, max {max(ages)} ms "
          f"over {len(ages)} programs")
PY
}

echo "== latency: $runs programs each =="
latency attach --poll-ms 250
latency listen --listen "$work/port.sock"

echo "== the hold: a short program no rule matches, $runs runs each =="
"$clrspy" watch --rules "$work/none.json" --out "$work/hold" --quiet --listen "$work/hold.sock" > /dev/null 2>&1 &
w=$!
pids+=("$w")
sleep 1
python3 - "$dll" "$work/hold.sock" "$runs" <<'PY'
import os, statistics, subprocess, sys, time
dll, sock, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(env):
    t = time.monotonic()
    subprocess.run(["dotnet", dll, "idle", "--seconds", "0"], env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.monotonic() - t) * 1000
plain = dict(os.environ)
held = dict(os.environ, DOTNET_DiagnosticPorts=f"{sock},connect,suspend")
a = [run(plain) for _ in range(runs)]
b = [run(held) for _ in range(runs)]
print(f"without the port: median {statistics.median(a):.0f} ms; held and resumed by watch: "
      f"median {statistics.median(b):.0f} ms (+{statistics.median(b) - statistics.median(a):.0f} ms)")
PY
kill -TERM "$w"; wait "$w" || true
