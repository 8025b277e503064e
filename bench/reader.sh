#!/usr/bin/env bash
# The trace reader side by side with TraceEvent, in one run, on one large real trace.
#
#   bench/reader.sh [TRACE]
#
# Without TRACE it records bench/out/traces/big.nettrace (~600 MB) from the `bigtrace` workload
# with the runtime's own EventPipe settings. Prints, per pass, seconds, MB/s, events/s and peak
# memory for clrspy's reader (readbench) and for TraceEvent 4.0.0 (the harness), and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-bench/out/traces/big.nettrace}

cargo build --release --locked -p readbench >&2
dotnet build bench/TraceEventHarness -c Release --nologo -v q -o bench/out/harness >&2
if [ ! -f "$trace" ]; then
    dotnet build testapps/Workloads -c Release --nologo -v q -o target/testapps/Workloads >&2
    mkdir -p "$(dirname "$trace")"
    CIRCULAR_MB=512 testapps/record-with-env.sh target/testapps/Workloads/Workloads.dll bigtrace "$trace" --seconds 40 >&2
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Warm the page cache so both readers start equal.
cat "$trace" > /dev/null

run() { # name, command...
    local name=$1; shift
    /usr/bin/time -f '%M' -o "$out/$name.rss" "$@" > "$out/$name.json"
}
for pass in 1 2 3; do
    run "walk$pass" target/release/readbench walk "$trace"
done
run stream target/release/readbench stream "$trace"
run decode target/release/readbench decode "$trace"
run te dotnet bench/out/harness/TraceEventHarness.dll bench "$trace"

python3 - "$out" "$trace" <<'PY'
import json, os, sys
out, trace = sys.argv[1], sys.argv[2]
def load(name):
    j = json.load(open(os.path.join(out, name + ".json")))
    j["rss_mb"] = int(open(os.path.join(out, name + ".rss")).read().split()[-1]) / 1024
    return j
walk = min((load(f"walk{i}") for i in (1, 2, 3)), key=lambda j: j["seconds"])
stream, decode, te = load("stream"), load("decode"), load("te")
mb = os.path.getsize(trace) / 1e6
print(f"trace: {trace}, {mb:.0f} MB, {walk['events']:,} events, {walk['frames']:,} stack frames")
print(f"TraceEvent counted {te['events']:,} events, {te['stack_frames']:,} frames")
print(f"{'pass':<34}{'seconds':>9}{'MB/s':>9}{'M ev/s':>9}{'peak RSS':>10}{'vs TE':>8}")
def row(label, secs, events, rss, te_secs=None):
    ratio = f"{te_secs / secs:7.1f}x" if te_secs else ""
    print(f"{label:<34}{secs:9.3f}{mb / secs:9.0f}{events / secs / 1e6:9.1f}{rss:8.0f}MB{ratio:>8}")
row("clrspy walk (mmap)", walk["seconds"], walk["events"], walk["rss_mb"], te["seconds_walk"])
row("clrspy walk (io::Read stream)", stream["seconds"], stream["events"], stream["rss_mb"], te["seconds_walk"])
row("clrspy stream walk + decode payloads", decode["seconds"], decode["events"], decode["rss_mb"],
    te["seconds_decode"])
row("TraceEvent walk", te["seconds_walk"], te["events"], te["rss_mb"])
row("TraceEvent walk + decode (2nd pass)", te["seconds_decode"], te["events"], te["rss_mb"])
print(f"clrspy anonymous memory after the mmap walk: {walk['anon_rss_mb']:.0f} MB "
      "(the rest of its RSS is the mapped file, shared with the page cache)")
PY
