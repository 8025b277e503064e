#!/usr/bin/env bash
# The loader report's counts against TraceEvent's raw event counts on the same traces:
# AssemblyLoader/Start = `requested`, AssemblyLoader/Stop = `loaded` + `reused` + `failed`,
# AssemblyLoader/KnownPathProbed = `probes`. Prints one line per trace; exit 1 on a mismatch.
#
#   dotnet build bench/TraceEventHarness -c Release -o bench/out/harness
#   cargo build --release -p clrspy
#   bench/loader_counts.sh crates/clrspy/tests/data/loadfail*.nettrace.zip
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
harness=${HARNESS:-$here/out/harness/TraceEventHarness.dll}
clrspy=${CLRSPY:-$here/../target/release/clrspy}
status=0
for trace in "$@"; do
    tmp=$(mktemp -d)
    case "$trace" in
        *.zip) unzip -q -d "$tmp" "$trace"; file=$(ls "$tmp"/*.nettrace) ;;
        *) file=$trace ;;
    esac
    dotnet "$harness" counts "$file" >"$tmp/te.json"
    "$clrspy" report "$file" loader --json >"$tmp/report.json"
    python3 - "$trace" "$tmp/te.json" "$tmp/report.json" <<'PY' || status=1
import json, sys
name, te, rep = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
def count(i):
    return sum(e["count"] for e in te["per_event"]
               if e["event_id"] == i and e["provider"] == "Microsoft-Windows-DotNETRuntime")
te_v = (count(290), count(291), count(296))
ours = (rep["requested"], rep["loaded"] + rep["reused"] + rep["failed"], rep["probes"])
ok = te_v == ours
print(f"{name}: TraceEvent Start/Stop/KnownPathProbed {te_v}, report requested/ended/probes {ours}: {'same' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
    rm -rf "$tmp"
done
exit $status
