#!/usr/bin/env bash
# Conversion of one large real trace, clrspy against dotnet-trace, in one run.
#
#   bench/convert.sh [TRACE]     (default bench/out/traces/big.nettrace, recorded if missing)
#
# For every `clrspy convert --to` format this build has (speedscope, chromium, folded,
# flamegraph, pprof, html) and for `dotnet-trace convert --format Speedscope|Chromium` on the same
# file: wall time, peak RSS (GNU /usr/bin/time; else Python's wait4) and output size. The trace is
# read once beforehand so every run starts with it in the page cache. Prints a markdown table with
# dotnet-trace / clrspy ratios for the formats both write; raw figures go to bench/out/convert.tsv,
# outputs to bench/out/convert/.
# Needs cargo, dotnet (for the workload and dotnet-trace). dotnet-trace is installed into
# bench/out/tools when missing (`dotnet tool install --tool-path bench/out/tools dotnet-trace`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trace=${1:-$root/bench/out/traces/big.nettrace}
out=$root/bench/out/convert
clrspy=$root/target/release/clrspy
dt=$root/bench/out/tools/dotnet-trace
wl=$root/target/testapps/Workloads/Workloads.dll
timeout_s=${TIMEOUT:-900}
mkdir -p "$out"

(cd "$root" && cargo build -q --release -p clrspy)
if [ ! -f "$trace" ]; then
    [ -f "$wl" ] || dotnet build -c Release -v q --nologo "$root/testapps/Workloads" -o "$(dirname "$wl")"
    mkdir -p "$(dirname "$trace")"
    echo "recording $trace (bigtrace workload, 40 s) ..." >&2
    CIRCULAR_MB=512 "$root/testapps/record-with-env.sh" "$wl" bigtrace "$trace" --seconds 40 >/dev/null
fi
[ -x "$dt" ] || dotnet tool install --tool-path "$(dirname "$dt")" dotnet-trace >/dev/null
size=$(stat -c %s "$trace")
if [ "$size" -lt $((500 * 1048576)) ]; then
    echo "note: $trace is $((size / 1048576)) MB, under the 500 MB this benchmark is meant for" >&2
fi

# measure NAME OUTPUT CMD...: appends "NAME wall_s rss_kb exit output_bytes" to the results.
results=$root/bench/out/convert.tsv
: >"$results"
measure() {
    local name=$1 output=$2 m
    shift 2
    rm -f "$output"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%e %M %x' -o "$out/.time" timeout "$timeout_s" "$@" >/dev/null 2>"$out/.stderr" || true
        m=$(tail -n 1 "$out/.time")
    else
        m=$(python3 -c '
import os, subprocess, sys, time
t = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, st, ru = os.wait4(p.pid, 0)
print(f"{time.monotonic() - t:.2f} {ru.ru_maxrss} {os.waitstatus_to_exitcode(st)}")
' timeout "$timeout_s" "$@")
    fi
    local bytes=0
    [ -f "$output" ] && bytes=$(stat -c %s "$output")
    printf '%s\t%s\t%s\n' "$name" "${m// /$'\t'}" "$bytes" >>"$results"
    echo "  $name: wall/rss_kb/exit $m, $bytes bytes" >&2
}

echo "warming the page cache with $trace ($((size / 1048576)) MB) ..." >&2
cat "$trace" >/dev/null
formats=(speedscope chromium folded flamegraph pprof html)
help=$("$clrspy" convert --help)
for f in "${formats[@]}"; do
    if ! grep -q -- "^ *- $f:" <<<"$help"; then
        echo "  clrspy $f: not in this build, skipped" >&2
        continue
    fi
    measure "clrspy $f" "$out/big.$f" "$clrspy" convert "$trace" --to "$f" -o "$out/big.$f"
done
for f in Speedscope Chromium; do
    lower=$(tr 'A-Z' 'a-z' <<<"$f")
    # dotnet-trace adds the extension itself (dt-big.speedscope.json, dt-big.chromium.json).
    measure "dotnet-trace $lower" "$out/dt-big.$lower.json" "$dt" convert "$trace" --format "$f" -o "$out/dt-big"
done
rm -f "$out/.time" "$out/.stderr"

# The table.
python3 - "$results" "$trace" "$size" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    name, wall, rss, code, size = line.rstrip("\n").split("\t")
    rows[name] = (float(wall), int(rss) / 1024, int(code), int(size) / 1048576)
def cell(r):
    if r is None:
        return ["", "", ""]
    wall, rss, code, size = r
    if code != 0:
        return [f"failed (exit {code})", "", ""]
    return [f"{wall:.2f} s", f"{rss:.1f} MB", f"{size:.2f} MB"]
print(f"\n{sys.argv[2]} ({int(sys.argv[3]) / 1048576:.0f} MB)\n")
print("| format | clrspy time | clrspy peak RSS | clrspy output | dotnet-trace time | dotnet-trace peak RSS | dotnet-trace output | time dotnet-trace / clrspy | RSS dotnet-trace / clrspy |")
print("|---|---|---|---|---|---|---|---|---|")
for f in ["speedscope", "chromium", "folded", "flamegraph", "pprof", "html"]:
    c, d = rows.get(f"clrspy {f}"), rows.get(f"dotnet-trace {f}")
    if c is None and d is None:
        continue
    ratio = ["", ""]
    if c and d and c[2] == 0 and d[2] == 0:
        ratio = [f"{d[0] / c[0]:.1f}x", f"{d[1] / c[1]:.1f}x"]
    print("| " + " | ".join([f] + cell(c) + (cell(d) if d else ["-", "-", "-"]) + (ratio if d else ["-", "-"])) + " |")
EOF
