#!/usr/bin/env python3
"""`clrspy report http` against TraceEvent's raw event counts on the same trace.

Usage: bench/http_vs_traceevent.py TRACE [TRACE...]

For each trace: TraceEvent's counts (bench/TraceEventHarness `counts`, built into
target/testapps/harness as bench/README.md says) of System.Net.Http RequestStart, RequestStop
and RequestFailed, and of NameResolution ResolutionStart and Security HandshakeStart; and
clrspy's report with every request written by `--requests-jsonl`. Checks, and prints:
  RequestStart   = requests + in_flight         (each start is one request)
  RequestStop    = requests + without_start     (each stop ends one)
  RequestFailed  = rows with an error message   (each failure tied to its request)
  ResolutionStart = rows with a dns_ms          (each resolution ran for one request)
  HandshakeStart  = rows with a tls_ms          (client handshakes)
Exit status 1 when any differs.
"""
import json
import os
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(REPO, "target/testapps/harness/TraceEventHarness.dll")
CLRSPY = os.environ.get("CLRSPY", os.path.join(REPO, "target/debug/clrspy"))


def te_counts(trace):
    if trace.endswith(".zip"):
        with tempfile.TemporaryDirectory() as d:
            with zipfile.ZipFile(trace) as z:
                name = z.namelist()[0]
                z.extract(name, d)
            return te_counts(os.path.join(d, name))
    out = subprocess.run(["dotnet", HARNESS, "counts", trace], check=True, capture_output=True, text=True)
    counts = {}
    for e in json.loads(out.stdout)["per_event"]:
        # By id: TraceEvent names them `Request/Start`, the metadata `RequestStart`.
        key = (e["provider"], e["event_id"])
        counts[key] = counts.get(key, 0) + e["count"]
    return counts


def clrspy(trace):
    with tempfile.TemporaryDirectory() as d:
        rows_file = os.path.join(d, "rows.jsonl")
        out = subprocess.run(
            [CLRSPY, "report", trace, "http", "--json", "--requests-jsonl", rows_file],
            check=True, capture_output=True, text=True)
        with open(rows_file) as f:
            rows = [json.loads(line) for line in f]
    return json.loads(out.stdout), rows


def main():
    bad = False
    for trace in sys.argv[1:]:
        te = te_counts(trace)
        r, rows = clrspy(trace)
        get = lambda p, i: te.get((p, i), 0)
        checks = [
            ("RequestStart", get("System.Net.Http", 1), r["requests"] + r["in_flight"]),
            ("RequestStop", get("System.Net.Http", 2), r["requests"] + r["without_start"]),
            ("RequestFailed", get("System.Net.Http", 3), sum(1 for x in rows if x["error"])),
            ("ResolutionStart", get("System.Net.NameResolution", 1),
             sum(1 for x in rows if x["dns_ms"] is not None)),
            ("HandshakeStart", get("System.Net.Security", 1),
             sum(1 for x in rows if x["tls_ms"] is not None)),
        ]
        print(trace)
        for name, t, c in checks:
            mark = "ok" if t == c else "DIFFERS"
            bad |= t != c
            print(f"  {name:<16} TraceEvent {t:>6}  clrspy {c:>6}  {mark}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
