#!/usr/bin/env python3
"""`clrspy repair` against TraceEvent: cut a real trace at random offsets, and for each cut
require that TraceEvent 4.0.0 (the bench harness, `counts`) reads the repaired file without an
error and finds at least every event it had recovered from the cut file itself.

    bench/repair.py [--cuts N] [--seed S] [TRACE]

TRACE defaults to the objver4 test trace (unzipped). Builds clrspy (release) and the harness
when missing. Prints one line per cut that fails and a summary; exits 1 on any failure.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLRSPY = os.environ.get("CLRSPY_BIN", os.path.join(ROOT, "target/release/clrspy"))
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
DEFAULT = os.path.join(ROOT, "crates/nettrace/tests/data/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")


def te_counts(path):
    p = subprocess.run(["dotnet", HARNESS, "counts", path], capture_output=True, text=True)
    v = json.loads(p.stdout)
    return v["events"], v.get("error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("trace", nargs="?", default=DEFAULT)
    a = ap.parse_args()
    if "CLRSPY_BIN" not in os.environ:
        subprocess.run(["cargo", "build", "-q", "--release", "--locked", "-p", "clrspy"], cwd=ROOT, check=True)
    if not os.path.exists(HARNESS):
        subprocess.run(["dotnet", "build", os.path.join(ROOT, "bench/TraceEventHarness"), "-c", "Release",
                        "--nologo", "-v", "q", "-o", os.path.dirname(HARNESS)], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        if a.trace.endswith(".zip"):
            with zipfile.ZipFile(a.trace) as z:
                data = z.read(z.namelist()[0])
        else:
            data = open(a.trace, "rb").read()
        rng = random.Random(a.seed)
        cuts = sorted(rng.randrange(100, len(data)) for _ in range(a.cuts))
        cut_path, fixed = os.path.join(tmp, "cut.nettrace"), os.path.join(tmp, "fixed.nettrace")
        failures, te_err_before, kept_more = 0, 0, 0
        for c in cuts:
            with open(cut_path, "wb") as f:
                f.write(data[:c])
            before, err_before = te_counts(cut_path)
            te_err_before += err_before is not None
            r = subprocess.run([CLRSPY, "repair", cut_path, "-o", fixed, "--json"], capture_output=True, text=True)
            if r.returncode != 0:
                # A cut inside the stream header leaves nothing to keep: clrspy says so.
                if "not a trace" in r.stderr and c < 1024:
                    continue
                print(f"cut {c}: clrspy repair failed: {r.stderr.strip()}")
                failures += 1
                continue
            after, err_after = te_counts(fixed)
            if err_after is not None or after < before:
                print(f"cut {c}: TraceEvent read {before} events from the cut file, {after} from the repaired one ({err_after})")
                failures += 1
            kept_more += after > before
        print(f"{len(cuts)} cuts of {os.path.basename(a.trace)} ({len(data)} bytes): TraceEvent failed on "
              f"{te_err_before} cut files and on {failures} repaired ones; the repaired file had more events "
              f"for TraceEvent in {kept_more} cuts")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
