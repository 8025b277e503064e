#!/usr/bin/env bash
# The agent under load, on loopback, bounded in time (about 2 minutes):
#   1. starts 10 idle .NET processes (testapps/Workloads `idle`) and a release `clrspy agent`
#      with the metrics collector on, waits until it collects from all of them;
#   2. prints the agent's idle RSS (VmRSS, VmHWM, RssAnon, threads);
#   3. RATE requests/s of /processes for SECONDS (default 1000/s for 30 s: p50/p99/max, errors);
#   4. MIXED requests (default 10,000: /health, /processes, /processes/{pid}, /metrics, bad keys
#      401, traversal 400, 404s) with the RSS after each 1,000 (bench/agent_load.py).
# Exits non-zero on any error or unexpected status.
#
#   bench/agent_load.sh [--rate N] [--seconds S] [--mixed N] [--procs N]
#   CLRSPY=path/to/clrspy bench/agent_load.sh      (default target/release/clrspy, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=1000 SECONDS_=30 MIXED=10000 PROCS=10
while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE=$2; shift 2 ;;
    --seconds) SECONDS_=$2; shift 2 ;;
    --mixed) MIXED=$2; shift 2 ;;
    --procs) PROCS=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
CLRSPY=${CLRSPY:-target/release/clrspy}
[ -x "$CLRSPY" ] || cargo build --release -p clrspy
DLL=target/testapps/Workloads/Workloads.dll
[ -f "$DLL" ] || dotnet build -c Release --nologo -v q -o target/testapps/Workloads testapps/Workloads

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  [ -n "${AGENT:-}" ] && kill "$AGENT" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

for _ in $(seq "$PROCS"); do
  dotnet "$DLL" idle --seconds 600 > /dev/null &
  PIDS+=("$!")
done

read -r KEY HASH < <("$CLRSPY" agent new-key --json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["key"], v["hash"])')
printf '[metrics]\nrefresh_seconds = 5\nrescan_seconds = 5\n' > "$WORK/agent.toml"
"$CLRSPY" agent --config "$WORK/agent.toml" --urls http://127.0.0.1:0 --api-key-hash "$HASH" \
  2> "$WORK/agent.err" &
AGENT=$!
BASE=
for _ in $(seq 100); do
  BASE=$(sed -n 's/^clrspy agent: listening on //p' "$WORK/agent.err" | head -1)
  [ -n "$BASE" ] && break
  sleep 0.1
done
[ -n "$BASE" ] || { cat "$WORK/agent.err" >&2; exit 1; }

# The dotnet host's pid is the runtime's: wait until the collector has a session in each.
echo "waiting for $PROCS sessions (up to 150 s)..."
for _ in $(seq 300); do
  OPEN=$(curl -s -H "Authorization: Bearer $KEY" "$BASE/metrics" \
    | sed -n 's/^clrspy_agent_sessions_open \([0-9]*\).*/\1/p')
  [ "${OPEN:-0}" -ge "$PROCS" ] && break
  sleep 0.5
done
echo "sessions open: ${OPEN:-0} of $PROCS"
sleep 5
PIDLIST=$(IFS=,; echo "${PIDS[*]}")
python3 bench/agent_load.py --base "$BASE" --key "$KEY" --agent-pid "$AGENT" --pids "$PIDLIST" \
  --rate "$RATE" --seconds "$SECONDS_" --mixed "$MIXED"
