#!/usr/bin/env bash
# Dumps: how late an exception dump starts, and what compressing as createdump writes costs.
#
#   bench/dumps.sh [RUNS]        (RUNS launches for the delay, default 5)
#
# 1. Delay: RUNS times, `clrspy record --dump-on-exception '*.InvalidCastException'` launches the
#    cast workload; clrspy prints the time from the exception event's timestamp (the throw, on
#    the runtime's monotonic clock) to the dump command. Min / median / max of dump 1.
# 2. Size and time: a leak workload (growing slowly: 80 KB/s) dumped as mini, heap and full
#    by `clrspy dump`: raw, gzip and zstd compressed as written (through a FIFO), then `gzip -6`
#    and `zstd -3` on the raw core. One markdown table on stdout.
# Needs cargo, dotnet, gzip, zstd; builds clrspy (release) and the workloads when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
clrspy=${CLRSPY:-$root/target/release/clrspy}   # CLRSPY=another build to compare
wl=$root/target/testapps/Workloads/Workloads.dll
runs=${1:-5}
[ -n "${CLRSPY:-}" ] || (cd "$root" && cargo build -q --release --locked -p clrspy)
[ -f "$wl" ] || dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$(dirname "$wl")" >&2
out=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

echo "## Exception to dump delay (mini, gzip; $runs launches)"
delays=()
for i in $(seq "$runs"); do
    "$clrspy" record --dump-on-exception '*.InvalidCastException' --dump-compress gzip \
        -o "$out/d$i.nettrace" -- dotnet "$wl" cast --count 3 --seconds 0.5 >/dev/null 2>"$out/d$i.err" || true
    d=$(sed -n 's/^Dump 1 (.*, \([0-9.]*\) ms after the event).*/\1/p' "$out/d$i.err")
    [ -n "$d" ] && delays+=("$d")
    rm -f "$out"/d"$i"_*.dmp.gz
done
printf '%s\n' "${delays[@]}" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "delay ms: min %.1f  median %.1f  max %.1f  (n=%d)\n", a[1], a[int((NR+1)/2)], a[NR], NR}'

if hook=$("$root/hooks/build.sh" "$root/bench/out/hooks" 2>/dev/null); then
    delays=()
    for i in $(seq "$runs"); do
        "$clrspy" record --dump-on-exception '*.InvalidCastException' --dump-compress gzip \
            --dump-hold-hook "$hook" -o "$out/h$i.nettrace" -- dotnet "$wl" cast --count 3 --seconds 0.5 >/dev/null 2>"$out/h$i.err" || true
        d=$(sed -n 's/^Dump 1 (.*, \([0-9.]*\) ms after the event).*/\1/p' "$out/h$i.err")
        [ -n "$d" ] && delays+=("$d")
        rm -f "$out"/h"$i"_*.dmp.gz
    done
    printf '%s\n' "${delays[@]}" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "hold mode (the hook sees the throw; to the dump command) ms: min %.1f  median %.1f  max %.1f  (n=%d)\n", a[1], a[int((NR+1)/2)], a[NR], NR}'
fi

echo
echo "## Dump size and time: raw vs compressed as written vs gzip -6 / zstd -3 afterwards"
dotnet "$wl" leak --seconds 600 --count 2000 > "$out/w.out" &
for _ in $(seq 50); do grep -q 'ready pid=' "$out/w.out" 2>/dev/null && break; sleep 0.1; done
pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$out/w.out")
sleep 3
secs() { python3 -c 'import sys,time; print("%.2f" % (time.time() - float(sys.argv[1])))' "$1"; }
mb() { python3 -c 'import sys; print("%.1f" % (int(sys.argv[1]) / 1048576))' "$1"; }
echo
echo "| type | raw MB | raw s | gzip stream MB | s | zstd stream MB | s | gzip -6 MB | s (after raw) | zstd -3 MB | s (after raw) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for t in mini heap full; do
    t0=$(date +%s.%N); "$clrspy" dump -p "$pid" --type "$t" --compress none -o "$out/raw.dmp" 2>/dev/null; raw_s=$(secs "$t0")
    raw=$(stat -c %s "$out/raw.dmp")
    t0=$(date +%s.%N); "$clrspy" dump -p "$pid" --type "$t" --compress gzip -o "$out/s.dmp.gz" 2>/dev/null; gz_s=$(secs "$t0")
    t0=$(date +%s.%N); "$clrspy" dump -p "$pid" --type "$t" --compress zstd -o "$out/s.dmp.zst" 2>/dev/null; zs_s=$(secs "$t0")
    t0=$(date +%s.%N); gzip -6 -c "$out/raw.dmp" > "$out/raw.dmp.gz"; g6_s=$(secs "$t0")
    t0=$(date +%s.%N); zstd -q -3 -c "$out/raw.dmp" > "$out/raw.dmp.zst"; z3_s=$(secs "$t0")
    echo "| $t | $(mb "$raw") | $raw_s | $(mb "$(stat -c %s "$out/s.dmp.gz")") | $gz_s | $(mb "$(stat -c %s "$out/s.dmp.zst")") | $zs_s | $(mb "$(stat -c %s "$out/raw.dmp.gz")") | $g6_s | $(mb "$(stat -c %s "$out/raw.dmp.zst")") | $z3_s |"
    rm -f "$out"/*.dmp "$out"/*.gz "$out"/*.zst
done
