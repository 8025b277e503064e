#!/usr/bin/env bash
# Whole traces on every stop, checked by TraceEvent: records the cpu workload with clrspy and
# ends each recording a different way, then opens every file with TraceEvent 4.0.0 (the bench
# harness, `counts`) and with `clrspy info`. Each must read to its end with no error.
#
#   bench/whole_traces.sh
#
# Stops: the target SIGKILLed; clrspy itself SIGKILLed (as the OOM killer does); Ctrl+C to the whole process group in launch mode (as a terminal
# sends it); two SIGTERMs to clrspy; --duration; a full disk (a 64 KB tmpfs, root only).
# Needs cargo, dotnet; builds clrspy (release), the workloads and the harness when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
clrspy=${CLRSPY:-$root/target/release/clrspy}   # CLRSPY=another build to compare
harness=$root/bench/out/harness/TraceEventHarness.dll
wl=$root/target/testapps/Workloads/Workloads.dll
[ -n "${CLRSPY:-}" ] || (cd "$root" && cargo build -q --release --locked -p clrspy)
[ -f "$harness" ] || dotnet build "$root/bench/TraceEventHarness" -c Release --nologo -v q -o "$(dirname "$harness")" >&2
[ -f "$wl" ] || dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$(dirname "$wl")" >&2
out=$(mktemp -d)
cleanup() { mountpoint -q "$out/full" 2>/dev/null && umount "$out/full"; rm -rf "$out"; }
trap cleanup EXIT

start_workload() { # -> pid of a 30 s cpu workload
    dotnet "$wl" cpu --seconds 30 > "$out/w.out" &
    for _ in $(seq 50); do grep -q 'ready pid=' "$out/w.out" 2>/dev/null && break; sleep 0.1; done
    sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$out/w.out"
}

# 1. The target is killed mid-recording.
pid=$(start_workload)
"$clrspy" record -p "$pid" -o "$out/killed.nettrace" 2>/dev/null & rec=$!
sleep 3; kill -9 "$pid"; wait "$rec" || true

# 2. Ctrl+C to the whole process group, launch mode.
set -m
"$clrspy" record -o "$out/group.nettrace" -- dotnet "$wl" cpu --seconds 30 >/dev/null 2>&1 & job=$!
set +m
sleep 3; kill -INT -- "-$job"; wait "$job" || true

# 3. Two SIGTERMs to clrspy.
pid=$(start_workload)
"$clrspy" record -p "$pid" -o "$out/term2.nettrace" 2>/dev/null & rec=$!
sleep 3; kill -TERM "$rec"; kill -TERM "$rec"; wait "$rec" || true; kill "$pid" 2>/dev/null || true

# 4. --duration.
"$clrspy" record --duration 3s -o "$out/duration.nettrace" -- dotnet "$wl" cpu --seconds 30 >/dev/null 2>&1 || true

# 5. clrspy itself SIGKILLed (the OOM killer): no chance to close the file.
pid=$(start_workload)
"$clrspy" record -p "$pid" -o "$out/sigkill.nettrace" 2>/dev/null & rec=$!
sleep 4; kill -KILL "$rec"; wait "$rec" || true; kill "$pid" 2>/dev/null || true

# 6. A full disk.
files=(killed group term2 duration sigkill)
if [ "$(id -u)" = 0 ] && mkdir -p "$out/full" && mount -t tmpfs -o size=64k tmpfs "$out/full" 2>/dev/null; then
    "$clrspy" record -o "$out/full/full.nettrace" -- dotnet "$wl" cpu --seconds 30 >/dev/null 2>&1 || true
    cp "$out/full/full.nettrace" "$out/full.nettrace"
    files+=(full)
fi

fail=0
printf '| %-9s | %9s | %10s | %-30s | %-22s |\n' stop bytes "events" "TraceEvent" "clrspy info"
printf '|%s|%s|%s|%s|%s|\n' ----------- ----------- ------------ -------------------------------- ------------------------
for f in "${files[@]}"; do
    t=$out/$f.nettrace
    te=$(dotnet "$harness" counts "$t" 2>/dev/null | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["events"], v.get("error") or "ok")')
    ci=$("$clrspy" info "$t" --json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["events"], "whole" if v["ended_cleanly"] and not v["error"] else "CUT")')
    printf '| %-9s | %9s | %10s | %-30s | %-22s |\n' "$f" "$(stat -c %s "$t")" "${te%% *}" "${te#* }" "$ci"
    case "$te $ci" in *ok*whole*) ;; *) fail=1 ;; esac
done
exit $fail
