#!/usr/bin/env bash
# The live pipeline on an event-dense workload: `clrspy record -p` attaches to testapps/Workloads'
# `bigtrace` scenario (THREADS threads writing small EventSource events with deep stacks as
# fast as they can, plus the runtime's samples every 1 ms) for SECONDS, with the live event
# tap decoding everything the file gets. Prints clrspy's own closing lines (events counted
# by the tap, what it skipped and said it skipped, what the runtime dropped), the file's own
# event count (`clrspy info`), the tap's events/s, and clrspy's peak RSS and CPU.
#
#   bench/tap_dense.sh     (SECONDS_REC=60 THREADS=64 by default; CLRSPY_BIN=another binary
#                          to compare, e.g. an older release build)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${SECONDS_REC:-60}
threads=${THREADS:-64}
cargo build --release --locked -p clrspy >&2
dotnet build testapps/Workloads -c Release --nologo -v q -o target/testapps/Workloads >&2
out=bench/out/traces/tap-dense.nettrace
mkdir -p "$(dirname "$out")"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bin=${CLRSPY_BIN:-target/release/clrspy}
# The workload runs on its own and clrspy attaches, so the peak RSS is clrspy's alone.
dotnet target/testapps/Workloads/Workloads.dll bigtrace --seconds $((seconds + 10)) \
    --threads "$threads" > /dev/null &
app=$!
sleep 2
/usr/bin/time -v "$bin" record -p "$app" --duration "${seconds}s" --buffer-size 256 \
    --providers 'Clrspy-Workloads:0xffffffffffff:5,Microsoft-DotNETCore-SampleProfiler:0:5' \
    -o "$out" > /dev/null 2> "$log" || true
kill "$app" 2> /dev/null || true
wait "$app" 2> /dev/null || true
grep -E '^(Wrote|Thread CPU|The live view|warning)' "$log" || true
wall=$(grep 'Elapsed (wall clock)' "$log" | awk '{print $NF}')
rss=$(grep 'Maximum resident set size' "$log" | awk '{print $NF}')
user=$(grep 'User time' "$log" | awk '{print $NF}')
sys=$(grep 'System time' "$log" | awk '{print $NF}')
events=$(grep -oE '[0-9]+ events' "$log" | head -1 | awk '{print $1}' || true)
file_events=$(target/release/clrspy info "$out" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
echo "file: $(stat -c %s "$out") bytes, $file_events events (clrspy info)"
echo "tap: ${events:-?} events decoded live in $wall wall ($(python3 -c "print(round(${events:-0}/$seconds))") events/s over the workload's ${seconds} s)"
echo "clrspy: peak RSS $((rss / 1024)) MB, CPU ${user} s user + ${sys} s system"
