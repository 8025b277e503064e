#!/usr/bin/env bash
# The agent's memory while it streams a big trace: `GET /trace?pid&duration&profile` of a
# Workloads scenario read by curl at full speed (or --limit-rate RATE: a slow client), with the
# agent's RSS (/proc/PID/status VmRSS, sampled each second, and VmHWM at the end) and the
# spool's disk use in the agent's folder (du, sampled) beside the bytes streamed.
#
#   bench/agent_stream.sh [SECONDS [PROFILE [SCENARIO [CURL ARGS...]]]]
#       defaults: 90 cpu bigtrace          e.g. bench/agent_stream.sh 60 cpu bigtrace --limit-rate 2m
#
# PROFILE "bigtrace" asks for the providers of bench/big_trace.py's trace instead (the sampler,
# the runtime's verbose events, the workload's own EventSource): about 10 MB/s.
# Needs cargo, dotnet, curl; builds clrspy (release) and the workloads when missing. CLRSPY=another
# build to use it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-90}
profile=${2:-cpu}
scenario=${3:-bigtrace}
shift $(( $# < 3 ? $# : 3 ))
clrspy=${CLRSPY:-$root/target/release/clrspy}
wl=$root/target/testapps/Workloads/Workloads.dll
[ -n "${CLRSPY:-}" ] || (cd "$root" && cargo build -q --release --locked -p clrspy)
[ -f "$wl" ] || dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$(dirname "$wl")" >&2
d=$(mktemp -d)
dotnet "$wl" "$scenario" --seconds $((secs + 60)) > "$d/w.out" & wpid=$!
apid=
cleanup() {
  kill "$wpid" 2>/dev/null || true
  [ -z "$apid" ] || kill "$apid" 2>/dev/null || true
  [ -z "${spid:-}" ] || kill "$spid" 2>/dev/null || true
  rm -rf "$d"
}
trap cleanup EXIT
for _ in $(seq 300); do grep -q 'ready pid=' "$d/w.out" 2>/dev/null && break; sleep 0.1; done
pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$d/w.out")
keys=$("$clrspy" agent new-key --json)
key=$(printf '%s' "$keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
hash=$(printf '%s' "$keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hash"])')
mkdir -m 700 "$d/folder"
printf 'folder = "%s"\ndisk_mb = 4096\n[auth]\napi_key_hashes = ["%s"]\n[metrics]\nenabled = false\n' \
  "$d/folder" "$hash" > "$d/agent.toml"
"$clrspy" agent --urls http://127.0.0.1:0 --config "$d/agent.toml" 2> "$d/agent.err" & apid=$!
for _ in $(seq 300); do grep -q 'listening on' "$d/agent.err" 2>/dev/null && break; sleep 0.1; done
base=$(sed -n 's/^clrspy agent: listening on \(.*\)$/\1/p' "$d/agent.err" | head -1)
kb() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$apid/status"; }
idle=$(kb VmRSS)
( while kill -0 "$apid" 2>/dev/null; do
    echo "$(kb VmRSS) $(du -sk "$d/folder" 2>/dev/null | cut -f1)" >> "$d/samples"; sleep 1
  done ) & spid=$!
what="profile=$profile"
[ "$profile" != bigtrace ] || what="providers=Microsoft-DotNETCore-SampleProfiler:0x0:5,Microsoft-Windows-DotNETRuntime:0x4c14fccbd:5,Clrspy-Workloads:0xffffffff:5"
t0=$(date +%s.%N)
got=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$@" \
  -H "Authorization: Bearer $key" "$base/trace?pid=$pid&duration=${secs}s&$what")
t1=$(date +%s.%N)
sleep 1
hwm=$(kb VmHWM)
kill "$spid" 2>/dev/null || true
read -r code bytes <<< "$got"
maxrss=$(awk 'max < $1 { max = $1 } END { print max + 0 }' "$d/samples")
maxdisk=$(awk 'max < $2 { max = $2 } END { print max + 0 }' "$d/samples")
left=$(ls -A "$d/folder" | wc -l)
echo "status $code: $bytes bytes streamed ($(( bytes >> 20 )) MB) in $(printf '%.1f' "$(echo "$t1 - $t0" | bc)") s"
echo "agent RSS: idle $(( idle / 1024 )) MB, sampled max $(( maxrss / 1024 )) MB, VmHWM $(( hwm / 1024 )) MB"
echo "spool on disk: max $(( maxdisk / 1024 )) MB sampled; files left in the folder: $left"
