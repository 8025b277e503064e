#!/usr/bin/env bash
# Reading a large heap dump: `clrspy dump analyze` against `dotnet-dump analyze`, in one run.
#
#   bench/dump_analyze.sh [MB]      (managed heap the workload holds, default 2048)
#
# Starts the `bigheap` workload (about MB of live 64 KB byte arrays and small objects: some
# 8 million objects at 2048), takes a heap dump of it with `clrspy dump --compress none` (the raw
# core) and one with the default (seekable zstd), kills it, then measures wall time and peak RSS
# (GNU /usr/bin/time; else Python's wait4) of each pair, one run each, the raw core read once
# beforehand so every run starts with it in the page cache:
#   clrspy dump analyze CORE heap      vs  dotnet-dump analyze CORE -c "dumpheap -stat" -c exit
#   clrspy dump analyze CORE locks     vs  ... -c syncblk
#   clrspy dump analyze CORE threads   vs  ... -c "clrstack -all"
# and clrspy's three on the .zst (read in place). Prints a markdown table with dotnet-dump / clrspy
# ratios and the heap totals both found; raw figures go to bench/out/dump_analyze.tsv, the
# outputs to bench/out/dump_analyze/ (the dumps are deleted at the end; KEEP=1 keeps them).
# Needs cargo, dotnet; builds clrspy (release) and the workloads when missing. dotnet-dump is
# installed into bench/out/tools when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mb=${1:-2048}
out=$root/bench/out/dump_analyze
clrspy=${CLRSPY:-$root/target/release/clrspy}   # CLRSPY=another build to compare
dd=$root/bench/out/tools/dotnet-dump
wl=$root/target/testapps/Workloads/Workloads.dll
timeout_s=${TIMEOUT:-1800}
mkdir -p "$out"

[ -n "${CLRSPY:-}" ] || (cd "$root" && cargo build -q --release -p clrspy)
[ -f "$wl" ] || dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$(dirname "$wl")" >&2
[ -x "$dd" ] || DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1 \
    dotnet tool install --tool-path "$(dirname "$dd")" dotnet-dump >/dev/null
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1

core=$out/bigheap.core
cleanup() {
    [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
    if [ "${KEEP:-0}" != 1 ]; then
        rm -f "$core" "$core".* "$out"/bigheap.zst.dmp "$out"/bigheap.zst.dmp.*
    fi
}
trap cleanup EXIT

# The workload: its `ready pid=N` line, then `bigheap arrays=.. items=..` once allocated.
fifo=$out/.stdout
rm -f "$fifo"
mkfifo "$fifo"
dotnet "$wl" bigheap --count "$mb" >"$fifo" &
pid=$!
exec 3<"$fifo"
rm -f "$fifo"
start=$SECONDS
while read -r -u 3 line; do
    echo "workload: $line" >&2
    case $line in bigheap*) break ;; esac
done
echo "allocated in $((SECONDS - start)) s; RSS $(awk '/VmRSS/ {print $2 / 1024 " MB"}' "/proc/$pid/status")" >&2

t=$SECONDS
"$clrspy" dump -p "$pid" --compress none -o "$core" 2>&1 | grep -E '^Wrote' >&2
echo "  (raw dump: $((SECONDS - t)) s)" >&2
t=$SECONDS
"$clrspy" dump -p "$pid" -o "$out/bigheap.zst.dmp" 2>&1 | grep -E '^Wrote' >&2
echo "  (zstd dump: $((SECONDS - t)) s)" >&2
zst=$out/bigheap.zst.dmp.zst
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=

# measure NAME CMD...: appends "NAME wall_s rss_kb exit" to the results; stdout to
# $out/NAME.txt (spaces as _).
results=$root/bench/out/dump_analyze.tsv
: >"$results"
measure() {
    local name=$1 m file
    shift
    file=$out/${name// /_}.txt
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%e %M %x' -o "$out/.time" timeout "$timeout_s" "$@" >"$file" 2>"$out/.stderr" || true
        m=$(tail -n 1 "$out/.time")
    else
        m=$(python3 -c '
import os, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.DEVNULL)
_, st, ru = os.wait4(p.pid, 0)
print(f"{time.monotonic() - t:.2f} {ru.ru_maxrss} {os.waitstatus_to_exitcode(st)}")
' "$file" timeout "$timeout_s" "$@")
    fi
    printf '%s\t%s\n' "$name" "${m// /$'\t'}" >>"$results"
    echo "  $name: wall/rss_kb/exit $m" >&2
}

size=$(stat -c %s "$core")
echo "warming the page cache with $core ($((size / 1048576)) MB) ..." >&2
cat "$core" >/dev/null
measure "clrspy heap" "$clrspy" dump analyze "$core" heap --json --top 0
measure "dotnet-dump heap" "$dd" analyze "$core" -c "dumpheap -stat" -c exit
measure "clrspy locks" "$clrspy" dump analyze "$core" locks
measure "dotnet-dump locks" "$dd" analyze "$core" -c syncblk -c exit
measure "clrspy threads" "$clrspy" dump analyze "$core" threads
measure "dotnet-dump threads" "$dd" analyze "$core" -c "clrstack -all" -c exit
measure "clrspy-zst heap" "$clrspy" dump analyze "$zst" heap --json --top 0
measure "clrspy-zst locks" "$clrspy" dump analyze "$zst" locks
measure "clrspy-zst threads" "$clrspy" dump analyze "$zst" threads
rm -f "$out/.time" "$out/.stderr"

# The table, and the heap totals each found.
python3 - "$results" "$core" "$size" "$zst" "$out" <<'EOF'
import json, os, re, sys
results, core, size, zst, out = sys.argv[1:]
rows = {}
for line in open(results):
    name, wall, rss, code = line.rstrip("\n").split("\t")
    rows[name] = (float(wall), int(rss) / 1024, int(code))
def cell(r):
    if r is None:
        return ["-", "-"]
    wall, rss, code = r
    if code != 0:
        return [f"failed (exit {code})", ""]
    return [f"{wall:.2f} s", f"{rss:.1f} MB"]
print(f"\n{core}: {int(size) / 1048576:.0f} MB raw core; {os.path.getsize(zst) / 1048576:.1f} MB as seekable zstd\n")
print("| view (dotnet-dump command) | clrspy raw core time | peak RSS | clrspy .zst time | peak RSS | dotnet-dump time | peak RSS | time dotnet-dump / clrspy (raw) | RSS dotnet-dump / clrspy (raw) |")
print("|---|---|---|---|---|---|---|---|---|")
for view, cmd in [("heap", "dumpheap -stat"), ("locks", "syncblk"), ("threads", "clrstack -all")]:
    c, z, d = rows.get(f"clrspy {view}"), rows.get(f"clrspy-zst {view}"), rows.get(f"dotnet-dump {view}")
    ratio = ["", ""]
    if c and d and c[2] == 0 and d[2] == 0:
        ratio = [f"{d[0] / c[0]:.1f}x", f"{d[1] / c[1]:.1f}x"]
    print("| " + " | ".join([f"{view} (`{cmd}`)"] + cell(c) + cell(z) + cell(d) + ratio) + " |")
try:
    h = json.load(open(os.path.join(out, "clrspy_heap.txt")))["heap"]
    z = json.load(open(os.path.join(out, "clrspy-zst_heap.txt")))["heap"]
    text = open(os.path.join(out, "dotnet-dump_heap.txt")).read()
    m = re.search(r"Total ([\d,]+) objects, ([\d,]+) bytes", text)
    d = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))) if m else None
    print(f"\nheap totals: clrspy {h['objects']:,} objects, {h['bytes']:,} bytes ({len(h['types'])} types); "
          f"on the .zst {z['objects']:,} / {z['bytes']:,}; dotnet-dump {d[0]:,} objects, {d[1]:,} bytes" if d else "dotnet-dump: no total")
except (OSError, ValueError, KeyError) as e:
    print(f"\nheap totals: not compared ({e})")
EOF
