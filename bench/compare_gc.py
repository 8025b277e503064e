#!/usr/bin/env python3
"""GCs: clrspy's `report gc` against TraceEvent's GC analysis (PerfView's GCStats), GC by GC.

    bench/compare_gc.py [--clrspy BIN] [--harness DLL] TRACE [TRACE ...]

For each trace it runs `dotnet HARNESS gc-stats TRACE` (bench/TraceEventHarness/GcStats.cs) and
`clrspy report TRACE gc --json`, pairs the GCs by number, and counts the GCs whose generation,
reason, type, pause (more than 0.05 ms apart) or heap size after (more than 1 KB apart) differ.
TraceEvent's types end in "GC" (`NonConcurrentGC`) and its MB are 10^6 bytes, clrspy's 2^20:
both are compared as the same thing. Prints one line per trace and the first differences; exit
status 1 when any trace differs.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def traceevent(harness, trace):
    out = subprocess.run(["dotnet", harness, "gc-stats", trace], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(out)


def clrspy(binary, trace):
    out = subprocess.run([binary, "report", trace, "gc", "--json"], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(out)


def differences(ours, theirs):
    """(field, number, ours, theirs) for every GC that differs; GCs only one side has too."""
    mine = {g["number"]: g for g in ours["gcs"]}
    diffs = []
    for t in theirs["gcs"]:
        n = t["number"]
        o = mine.pop(n, None)
        if o is None:
            diffs.append(("missing", n, None, t))
            continue
        for f in ("generation", "reason"):
            if o[f] != t[f]:
                diffs.append((f, n, o[f], t[f]))
        if o["type"] + "GC" != t["type"]:
            diffs.append(("type", n, o["type"], t["type"]))
        if abs(o["pause_ms"] - t["pause_ms"]) > 0.05:
            diffs.append(("pause_ms", n, o["pause_ms"], t["pause_ms"]))
        a = o["heap_after_mb"]
        b = t.get("heap_after_mb")
        if (a is None) != (b is None) or (a is not None and abs(a * 2**20 - b * 1e6) > 1024):
            diffs.append(("heap_after", n, a, b))
    for n in mine:
        diffs.append(("extra", n, mine[n], None))
    return diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clrspy", default=str(ROOT / "target/release/clrspy"))
    ap.add_argument("--harness", default=str(ROOT / "bench/out/harness/TraceEventHarness.dll"))
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    bad = 0
    for trace in a.traces:
        ours, theirs = clrspy(a.clrspy, trace), traceevent(a.harness, trace)
        d = differences(ours, theirs)
        zero = sum(1 for g in ours["gcs"] if g["pause_ms"] == 0)
        print(f"{trace}: {len(theirs['gcs'])} GCs (TraceEvent), {len(ours['gcs'])} (clrspy); "
              f"{len(d)} differences; clrspy pause 0: {zero}, p50 {ours['totals']['p50_pause_ms']:.3f} ms; "
              f"mode {ours.get('gc_mode')} concurrent {ours.get('concurrent')} heaps {ours.get('heaps')}; "
              f"TraceEvent {theirs.get('processes')}")
        by = {}
        for f, n, o, t in d:
            by.setdefault(f, []).append((n, o, t))
        for f, rows in by.items():
            print(f"  {f}: {len(rows)}, e.g. {rows[:3]}")
        bad += bool(d)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
