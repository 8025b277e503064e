#!/usr/bin/env bash
# Checks clrspy's .gcdump against the reference implementation: dotnet-gcdump's DotNetHeapDump
# reader classes, fetched from dotnet/diagnostics at bench time (never committed) and built
# against TraceEvent 4.0.0 (bench/GcdumpHarness).
#
#   bench/gcdump_reference.sh FILE.gcdump
#
# 1. The reference reader loads FILE and must see the object count, bytes and per-type
#    counts and bytes that `clrspy heap FILE --json` reports.
# 2. The reference writer writes FILE again; clrspy must read that file to the same totals.
# DIAG_SRC=/path/to/diagnostics uses a checkout (or a bare git directory) instead of cloning.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
file=$1
h="$root/bench/GcdumpHarness"
clrspy=${CLRSPY:-"$root/target/release/clrspy"}
[ -x "$clrspy" ] || clrspy="$root/target/debug/clrspy"
if [ ! -f "$h/ref/GCHeapDump.cs" ]; then
    src=${DIAG_SRC:-}
    if [ -z "$src" ]; then
        src=$(mktemp -d)
        git clone -q --depth 1 https://github.com/dotnet/diagnostics "$src"
    fi
    mkdir -p "$h/ref"
    for f in GCHeapDump.cs Graph.cs MemoryGraph.cs DotNetHeapInfo.cs; do
        p=src/Tools/dotnet-gcdump/DotNetHeapDump/$f
        if [ -f "$src/$p" ]; then
            cp "$src/$p" "$h/ref/$f"
        else
            git --git-dir="$src" show "HEAD:$p" > "$h/ref/$f"
        fi
    done
fi
dotnet build "$h" -c Release --nologo -v q -o "$h/out" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dotnet "$h/out/GcdumpHarness.dll" "$file" > "$tmp/ref.json"
"$clrspy" heap "$file" --json --top 100000000 > "$tmp/clrspy.json"
dotnet "$h/out/GcdumpHarness.dll" rewrite "$file" "$tmp/rewritten.gcdump"
"$clrspy" heap "$tmp/rewritten.gcdump" --json --top 100000000 > "$tmp/clrspy2.json"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
ref = json.load(open(f"{d}/ref.json"))
bad = 0
for name in ("clrspy.json", "clrspy2.json"):
    c = json.load(open(f"{d}/{name}"))
    ours = {t["type"]: [t["count"], t["bytes"]] for t in c["types"]}
    if (c["objects"], c["bytes"]) != (ref["objects"], ref["bytes"]):
        print(f"{name}: objects/bytes {c['objects']}/{c['bytes']} != reference {ref['objects']}/{ref['bytes']}")
        bad += 1
    diff = [t for t in set(ours) | set(ref["types"]) if ours.get(t) != ref["types"].get(t)]
    for t in diff[:10]:
        print(f"{name}: {t}: clrspy {ours.get(t)} reference {ref['types'].get(t)}")
    bad += len(diff)
print(f"reference: {ref['objects']} objects, {ref['bytes']} bytes, {len(ref['types'])} types; "
      + ("clrspy agrees (its file and the reference's rewrite of it)" if bad == 0 else f"{bad} differences"))
sys.exit(1 if bad else 0)
PY
