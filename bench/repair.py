#!/usr/bin/env python3
"""`clrspy repair` against TraceEvent and our own reader.

    bench/repair.py [--cuts N] [--seed S] [--whole DIR] [TRACE ...]

For each TRACE (default: the objver4 test trace; a .zip is unzipped), cut it at N random
offsets and for each cut require that the repaired file
  - reads in TraceEvent 4.0.0 (the bench harness, `counts`) without an error,
  - has at least as many events for TraceEvent as TraceEvent recovers from the cut file,
  - has at least as many events as our reader recovers from the cut file (clrspy's
    `events_readable_before`; `events_kept` is our reader on the repaired file).
A NetPerf TRACE is also converted whole: the NetTrace file must have the same event count and
the same per-event counts in TraceEvent, no lost events, the same `clrspy info --json` (but for
the file, its format and size, and the stack table: NetPerf stacks are inline) and the same
`clrspy report` (but for the file's name).

--whole DIR (default: crates/nettrace/tests/data): every whole trace there must come out byte
for byte the same; a cut one (trace.nettrace) must keep every event our reader recovers.

Builds clrspy (release) and the harness when missing. Prints one line per failure and a summary
per trace; exits 1 on any failure.
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
HARNESS = os.environ.get("HARNESS", os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll"))
DATA = os.path.join(ROOT, "crates/nettrace/tests/data")
DEFAULT = os.path.join(DATA, "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip")


def te(path):
    p = subprocess.run(["dotnet", HARNESS, "counts", path], capture_output=True, text=True)
    return json.loads(p.stdout)


def per_event(v):
    return {(e["provider"], e["event_id"], e["version"], e["name"]): e["count"] for e in v["per_event"]}


def repair(src, dst):
    r = subprocess.run([CLRSPY, "repair", src, "-o", dst, "--json"], capture_output=True, text=True)
    return (json.loads(r.stdout) if r.returncode == 0 else None), r.stderr.strip()


def clrspy_out(*args):
    return subprocess.run([CLRSPY, *args], capture_output=True, text=True).stdout.splitlines()


def load(path):
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            return z.read(z.namelist()[0])
    return open(path, "rb").read()


def is_netperf(data):
    return data[4:24] == b"!FastSerialization.1"


def cuts(path, data, n, seed, tmp):
    """Random cuts of one trace. Returns the number of failures."""
    ext = ".netperf" if is_netperf(data) else ".nettrace"
    rng = random.Random(seed)
    offsets = sorted(rng.randrange(100, len(data)) for _ in range(n))
    cut_path, fixed = os.path.join(tmp, "cut" + ext), os.path.join(tmp, "fixed.nettrace")
    failures, te_err_before, more_te, more_ours, salvaged = 0, 0, 0, 0, 0
    for c in offsets:
        with open(cut_path, "wb") as f:
            f.write(data[:c])
        before = te(cut_path)
        te_err_before += before.get("error") is not None
        v, err = repair(cut_path, fixed)
        if v is None:
            # A cut inside the stream header leaves nothing to keep: clrspy says so.
            if "not a trace" in err and c < 1024:
                continue
            print(f"cut {c}: clrspy repair failed: {err}")
            failures += 1
            continue
        after = te(fixed)
        ours_before, ours_after = v["events_readable_before"], v["events_kept"]
        if after.get("error") is not None or after["events"] < before["events"]:
            print(f"cut {c}: TraceEvent read {before['events']} events from the cut file, "
                  f"{after['events']} from the repaired one ({after.get('error')})")
            failures += 1
        if ours_after < ours_before or not v["output_whole"]:
            print(f"cut {c}: our reader read {ours_before} events from the cut file, {ours_after} "
                  f"from the repaired one (whole: {v['output_whole']})")
            failures += 1
        more_te += after["events"] > before["events"]
        more_ours += ours_after > ours_before
        salvaged += v.get("salvaged_events", 0) > 0 or v.get("converted", False)
    print(f"{len(offsets)} cuts of {os.path.basename(path)} ({len(data)} bytes): TraceEvent errs on "
          f"{te_err_before} of the cut files; {failures} failures on the repaired ones; the repaired "
          f"file had more events than the cut one for TraceEvent in {more_te} cuts, for our reader "
          f"in {more_ours}; a cut block's events were kept (or converted) in {salvaged}")
    return failures


def convert_whole(path, data, tmp):
    """A whole NetPerf trace converted: the same for TraceEvent and for clrspy."""
    src, dst = os.path.join(tmp, "whole.netperf"), os.path.join(tmp, "whole.nettrace")
    with open(src, "wb") as f:
        f.write(data)
    v, err = repair(src, dst)
    name = os.path.basename(path)
    if v is None or not v["converted"] or not v["was_whole"]:
        print(f"{name}: not converted whole: {v} {err}")
        return 1
    a, b = te(src), te(dst)
    fails = []
    if b.get("error") is not None:
        fails.append(f"TraceEvent error on the converted file: {b['error']}")
    if (a["events"], per_event(a)) != (b["events"], per_event(b)):
        fails.append(f"TraceEvent counts differ: {a['events']} vs {b['events']}")
    for k in ["lost_events", "pointer_size", "process_id", "cpus", "session_start_utc", "duration_ms"]:
        if a.get(k) != b.get(k):
            fails.append(f"TraceEvent {k}: {a.get(k)} vs {b.get(k)}")
    # `info --json` the same but for the file, its format and size, and the stack table
    # (NetPerf stacks are inline, NetTrace interns them).
    skip = {"file", "format_version", "format", "stacks", "bytes_read", "bytes_total"}
    ia, ib = (json.loads("\n".join(clrspy_out("info", "--json", p))) for p in (src, dst))
    for k in sorted(set(ia) | set(ib)):
        if k not in skip and ia.get(k) != ib.get(k):
            fails.append(f"clrspy info {k}: {ia.get(k)} vs {ib.get(k)}")
    # The report names its file (first line, suggested command lines).
    ra, rb = ([ln.replace(p, "TRACE") for ln in clrspy_out("report", p)] for p in (src, dst))
    if ra != rb:
        fails.append("clrspy report differs")
    for f in fails:
        print(f"{name}: {f}")
    print(f"{name}: converted to NetTrace ({len(data)} -> {v['bytes_out']} bytes): {b['events']} events "
          f"for TraceEvent (was {a['events']}), per-event counts "
          f"{'the same' if per_event(a) == per_event(b) else 'DIFFERENT'}, "
          f"clrspy info/report {'the same' if not any('clrspy' in f for f in fails) else 'DIFFERENT'}")
    return len(fails)


def whole_dir(d, tmp):
    failures = 0
    for name in sorted(os.listdir(d)):
        if not (name.endswith(".nettrace") or name.endswith(".nettrace.zip") or name.endswith(".netperf")):
            continue
        path = os.path.join(d, name)
        out = os.path.join(tmp, "w.nettrace")
        v, err = repair(path, out)
        if v is None:
            print(f"{name}: clrspy repair failed: {err}")
            failures += 1
        elif v["was_whole"] and not v["converted"]:
            same = open(out, "rb").read() == load(path)
            failures += not same
            print(f"{name}: whole, {'byte for byte the same' if same else 'CHANGED'}")
        elif not v["was_whole"]:
            ok = v["output_whole"] and v["events_kept"] >= v["events_readable_before"]
            after = te(out)
            ok = ok and after.get("error") is None
            failures += not ok
            print(f"{name}: cut at {v['cut_at']}: kept {v['events_kept']} events ({v['salvaged_events']} from the "
                  f"cut block), our reader recovers {v['events_readable_before']} from the cut file, "
                  f"TraceEvent reads {after['events']} from the repaired one{'' if ok else ' FAILED'}")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", type=int, default=200)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--whole", default=DATA)
    ap.add_argument("traces", nargs="*", default=[DEFAULT])
    a = ap.parse_args()
    if "CLRSPY_BIN" not in os.environ:
        subprocess.run(["cargo", "build", "-q", "--release", "--locked", "-p", "clrspy"], cwd=ROOT, check=True)
    if not os.path.exists(HARNESS):
        subprocess.run(["dotnet", "build", os.path.join(ROOT, "bench/TraceEventHarness"), "-c", "Release",
                        "--nologo", "-v", "q", "-o", os.path.dirname(HARNESS)], check=True)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        failures += whole_dir(a.whole, tmp)
        for t in a.traces:
            data = load(t)
            if is_netperf(data):
                failures += convert_whole(t, data, tmp)
            failures += cuts(t, data, a.cuts, a.seed, tmp)
    print("FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
