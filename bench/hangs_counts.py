#!/usr/bin/env python3
"""Compares `clrspy report TRACE hangs --json`'s event counts with TraceEvent's raw counts.

    python3 bench/hangs_counts.py TRACE [TRACE ...]

Needs bench/out/harness (bench/README.md: TraceEventHarness) and target/debug/clrspy (or
CLRSPY=path). For each trace: Contention/Start (81) and /Stop (91), WaitHandleWait/Start (301)
and /Stop (302), ThreadPoolWorkerThreadAdjustment/Adjustment (55), side by side; exit status 1
when one differs.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
CLRSPY = os.environ.get("CLRSPY", os.path.join(ROOT, "target/debug/clrspy"))
RUNTIME = "Microsoft-Windows-DotNETRuntime"


def traceevent(trace):
    out = subprocess.run(["dotnet", HARNESS, "counts", trace], check=True,
                         capture_output=True, text=True).stdout
    counts = {}
    for e in json.loads(out)["per_event"]:
        if e["provider"] == RUNTIME:
            counts[e["event_id"]] = counts.get(e["event_id"], 0) + e["count"]
    return counts


def clrspy(trace):
    out = subprocess.run([CLRSPY, "report", trace, "hangs", "--json"], check=True,
                         capture_output=True, text=True).stdout
    v = json.loads(out)
    return {
        81: v["lock_waits"],
        91: v["lock_waits_ended"],
        301: v["handle_waits"],
        302: v["handle_waits_ended"],
        55: sum(v["starvation"]["adjustments"].values()),
    }, len(v["deadlocks"])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    bad = 0
    for trace in sys.argv[1:]:
        te = traceevent(trace)
        ours, cycles = clrspy(trace)
        print(f"{trace}: {cycles} deadlock(s)")
        for eid, n in ours.items():
            ref = te.get(eid, 0)
            mark = "" if ref == n else "   DIFFERS"
            bad += ref != n
            print(f"  event {eid:>3}: TraceEvent {ref:>6}  clrspy {n:>6}{mark}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
