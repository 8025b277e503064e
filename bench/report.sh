#!/usr/bin/env bash
# "Top methods" of one big real trace, four ways, in one run: wall time and peak RSS of
#   1. clrspy report TRACE cpu
#   2. clrspy report TRACE            (summary)
#   3. TraceEvent's TraceLog route    (bench/TraceEventHarness cpu-top: .etlx conversion, then
#                                      TraceEventStackSource + CallTree over the samples, top N)
#   4. dotnet-trace report TRACE topN
# and a table with the ratios to `clrspy report cpu`. Goals checked: clrspy >= 20x faster than
# TraceEvent's route, and < 200 MB peak RSS.
#
#   bench/report.sh [TRACE]      (default bench/out/traces/big.nettrace, recorded if missing)
#
# Peak RSS and wall time come from /usr/bin/time -v when it is installed, else from Python
# (wall clock, resource.getrusage(RUSAGE_CHILDREN).ru_maxrss of a fresh interpreter per command).
# The trace is read once beforehand so that every command sees it in the page cache.
# Output: the table on stdout; raw figures in bench/out/report/ (report.json, *.time, *.out).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
trace=${1:-$root/bench/out/traces/big.nettrace}
out=$root/bench/out/report
clrspy=$root/target/release/clrspy
harness=$root/bench/out/harness/TraceEventHarness.dll
dt=$root/bench/out/tools/dotnet-trace
mkdir -p "$out"

if [ ! -f "$trace" ]; then
    # The bigtrace workload (many events, 4 threads burning CPU); record-with-env.sh enables
    # Microsoft-DotNETCore-SampleProfiler, so the trace has CPU samples.
    echo "recording $trace (bigtrace workload, 40 s)..." >&2
    dotnet build "$root/testapps/Workloads" -c Release --nologo -v q -o "$root/target/testapps/Workloads" >&2
    mkdir -p "$(dirname "$trace")"
    CIRCULAR_MB=512 "$root/testapps/record-with-env.sh" "$root/target/testapps/Workloads/Workloads.dll" \
        bigtrace "$trace" --seconds 40 >&2
fi

(cd "$root" && cargo build --release -q -p clrspy)
dotnet build "$root/bench/TraceEventHarness" -c Release -v q --nologo -o "$(dirname "$harness")" >/dev/null
if [ ! -x "$dt" ]; then
    dotnet tool install --tool-path "$(dirname "$dt")" dotnet-trace >&2
fi

size=$(stat -c %s "$trace")
samples=$("$clrspy" info "$trace" --json |
    python3 -c 'import json,sys; print(sum(e["count"] for e in json.load(sys.stdin)["per_event"] if e["name"] == "Thread/Sample"))')
if [ "$samples" -eq 0 ]; then
    echo "report.sh: $trace has no Thread/Sample events (record with the sample profiler)" >&2
    exit 1
fi
if [ "$size" -lt $((500 * 1024 * 1024)) ]; then
    echo "report.sh: warning: $trace is only $((size / 1048576)) MB (the goal is measured on >= 500 MB)" >&2
fi
cat "$trace" >/dev/null

# dotnet-trace writes its .etlx next to the trace: give it a private link so that no stale
# .etlx is reused and none is left beside the trace.
dtdir=$out/dotnet-trace
rm -rf "$dtdir" && mkdir -p "$dtdir"
ln -s "$(realpath "$trace")" "$dtdir/$(basename "$trace")"

measure() { # name, command...
    local name=$1
    shift
    echo "running: $*" >&2
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v -o "$out/$name.time" "$@" >"$out/$name.out" 2>"$out/$name.err" || echo "exit=$?" >>"$out/$name.time"
    else
        python3 - "$out/$name.time" "$@" >"$out/$name.out" 2>"$out/$name.err" <<'EOF'
import resource, subprocess, sys, time
t0 = time.monotonic()
code = subprocess.call(sys.argv[2:])
wall = time.monotonic() - t0
kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(sys.argv[1], "w") as f:
    f.write(f"\tElapsed (wall clock) time (h:mm:ss or m:ss): {wall:.3f}\n")
    f.write(f"\tMaximum resident set size (kbytes): {kb}\n")
    if code:
        f.write(f"exit={code}\n")
EOF
    fi
}

measure clrspy_cpu "$clrspy" report "$trace" cpu
measure clrspy_summary "$clrspy" report "$trace"
measure traceevent dotnet "$harness" cpu-top "$trace" --top 20
measure dotnet_trace "$dt" report "$dtdir/$(basename "$trace")" topN -n 20
rm -rf "$dtdir"

python3 - "$out" "$trace" "$size" "$samples" <<'EOF'
import json, os, re, sys
out, trace, size, samples = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def parse(name):
    text = open(os.path.join(out, name + ".time")).read()
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    parts = [float(p) for p in m.group(1).split(":")]
    wall = sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1)) / 1024
    failed = re.search(r"exit=(\d+)|Exit status: ([1-9]\d*)", text)
    return {"wall_s": wall, "rss_mb": rss, "failed": bool(failed)}

rows = [("clrspy report cpu", "clrspy_cpu"), ("clrspy report (summary)", "clrspy_summary"),
        ("TraceEvent TraceLog route (.etlx + stack source, harness cpu-top)", "traceevent"),
        ("dotnet-trace report topN", "dotnet_trace")]
r = {key: parse(key) for _, key in rows}
te = json.load(open(os.path.join(out, "traceevent.out")))
r["traceevent"].update(etlx_s=te["etlx_ms"] / 1000, stacks_s=(te["stacks_ms"]) / 1000,
                       samples=te["samples"], etlx_mb=te["etlx_mb"])
base = r["clrspy_cpu"]
print(f"trace: {trace} ({size / 1048576:.0f} MB, {samples:,} samples)\n")
print("| command | wall time | peak RSS | time / clrspy report cpu | RSS / clrspy report cpu |")
print("|---|---|---|---|---|")
for label, key in rows:
    x = r[key]
    note = " (failed)" if x["failed"] else ""
    print(f"| {label}{note} | {x['wall_s']:.2f} s | {x['rss_mb']:.0f} MB | {x['wall_s'] / base['wall_s']:.1f}x "
          f"| {x['rss_mb'] / base['rss_mb']:.1f}x |")
t = r["traceevent"]
print(f"\nTraceEvent route phases: .etlx conversion {t['etlx_s']:.1f} s ({t['etlx_mb']:.0f} MB .etlx), "
      f"stack source + aggregation {t['stacks_s']:.1f} s, {t['samples']:,} samples")
speed = t["wall_s"] / base["wall_s"]
ok_speed = speed >= 20
ok_rss = max(base["rss_mb"], r["clrspy_summary"]["rss_mb"]) < 200
print(f"goal: clrspy report cpu >= 20x faster than TraceEvent's route: {speed:.1f}x -> {'met' if ok_speed else 'NOT met'}")
print(f"goal: clrspy < 200 MB peak RSS: {base['rss_mb']:.0f} MB (cpu), {r['clrspy_summary']['rss_mb']:.0f} MB (summary) "
      f"-> {'met' if ok_rss else 'NOT met'}")
r.update(trace=trace, bytes=size, samples=samples, speedup_vs_traceevent=speed)
json.dump(r, open(os.path.join(out, "report.json"), "w"), indent=2)
EOF
