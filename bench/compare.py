#!/usr/bin/env python3
"""Side by side with TraceEvent: event counts and decoded fields.

For every trace given (or every trace under crates/nettrace/tests/data and bench/out/traces),
runs `clrspy info --json` and `TraceEventHarness counts`, and requires identical event counts per
(provider, event id, version); then compares decoded field values of the first events of every
typed event kind (`clrspy events --json` against `TraceEventHarness fields`). Also writes small V5
and V6 traces (compressed and plain event headers) with clrspy's writer (`readbench generate`) and requires TraceEvent to read them
with the same counts. Prints one line per trace and a summary; exits 1 on any difference.

  bench/compare.py [--update-expected] [TRACE ...]

--update-expected rewrites crates/nettrace/tests/data/expected-counts.json from TraceEvent's
counts of the test traces (the reader's tests compare against it).
"""
import json
import re
import os
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "crates/nettrace/tests/data")
CLRSPY = os.environ.get("CLRSPY_BIN", os.path.join(ROOT, "target/release/clrspy"))
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return p


def unzip(path, tmp):
    if not path.endswith(".zip"):
        return path
    with zipfile.ZipFile(path) as z:
        name = z.namelist()[0]
        z.extract(name, tmp)
        return os.path.join(tmp, name)


def ours_counts(path):
    p = run([CLRSPY, "info", "--json", path])
    if p.returncode != 0:
        raise RuntimeError(f"clrspy info failed: {p.stderr.strip()}")
    j = json.loads(p.stdout)
    return j, {(e["provider"], e["event_id"], e["version"]): e["count"] for e in j["per_event"]}


# TraceEvent re-dispatches the runtime's GC dynamic events (id 39) under its own id 65524.
TE_ALIASES = {("Microsoft-Windows-DotNETRuntime", 65524): 39}


def te_counts(path):
    p = run(["dotnet", HARNESS, "counts", path])
    if p.returncode != 0:
        raise RuntimeError(f"TraceEvent failed: {p.stderr.strip()[-500:]}")
    j = json.loads(p.stdout)
    counts = defaultdict(int)
    for e in j["per_event"]:
        eid = TE_ALIASES.get((e["provider"], e["event_id"]), e["event_id"])
        counts[(e["provider"], eid, e["version"])] += e["count"]
    return j, dict(counts)


def norm(v):
    """Normalises a field value so both tools' renderings compare."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if s.lower().startswith("0x"):
            try:
                return int(s, 16)
            except ValueError:
                return s.lower()
        return s
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


# Fields TraceEvent computes rather than reads (or splits out of another field): not in the payload.
DERIVED = {"CompactMechanisms", "ExpandMechanisms",  # decoded from bit masks into enum values
           "TotalHeapSize", "TotalPromoted", "Depth", "OptimizationTier", "ModuleILFileName",
           "MemoryPressure", "Count", "ObjectSize", "Promoted"}


def same(name, ours, te):
    if norm(ours) == norm(te):
        return True
    if name == "MethodFlags" and isinstance(ours, int) and isinstance(te, int):
        # TraceEvent moves the optimization tier (bits 7-9) into its own OptimizationTier field.
        return ours & ~0x380 == te
    if isinstance(ours, int) and isinstance(te, int) and (ours - te) % (1 << 32) == 0 \
            and abs(te) < (1 << 32):
        return True  # the same 32 bits read as signed by one and unsigned by the other
    if isinstance(ours, (int, float)) and isinstance(te, str):
        return str(ours) == te  # TraceEvent renders some enums as text
    return False


def compare_fields(path, max_per_kind=3):
    """Compares the first events of each typed kind, in timestamp order."""
    p = run(["dotnet", HARNESS, "fields", path, "--max", str(max_per_kind)])
    if p.returncode != 0:
        return 0, [f"TraceEvent fields failed: {p.stderr.strip()[-300:]}"]
    te = defaultdict(list)
    for line in p.stdout.splitlines():
        if line.strip():
            e = json.loads(line)
            te[(e["provider"], e["event_id"], e["version"])].append(e)
    p = run([CLRSPY, "events", "--json", path])
    ours = defaultdict(list)
    for line in p.stdout.splitlines():
        e = json.loads(line)
        k = (e["provider"], e["event_id"], e["version"])
        if k in te:
            ours[k].append(e)
    compared, diffs = 0, []
    for k, tevs in te.items():
        mine = sorted(ours.get(k, []), key=lambda e: e["timestamp_ns"])[: len(tevs)]
        tevs = sorted(tevs, key=lambda e: e["timestamp_ns"])
        for a, b in zip(mine, tevs):
            for name, tv in b["fields"].items():
                if name not in a["fields"] and (re.search(r"_\d+$", name)
                                                or (k[1] == 29 and name == "TypeName")):
                    continue  # TraceEvent's flattened array preview / a type name it looked up
                if name not in a["fields"]:
                    # TraceEvent answers fields beyond an older version's payload with defaults.
                    if name not in DERIVED and tv not in (0, "", None, False):
                        diffs.append(f"{k}: field {name} missing in ours (TraceEvent: {tv!r})")
                    continue
                if name in DERIVED:
                    continue
                if not same(name, a["fields"][name], tv):
                    diffs.append(f"{k} @{b['timestamp_ns']}: {name}: ours {a['fields'][name]!r}, TraceEvent {tv!r}")
                else:
                    compared += 1
    return compared, diffs


def main():
    args = sys.argv[1:]
    update = "--update-expected" in args
    args = [a for a in args if a != "--update-expected"]
    traces = args
    if not traces:
        # Traces our writer makes, V5 and V6: TraceEvent must read them too.
        extra = os.path.join(ROOT, "bench/out/traces")
        os.makedirs(extra, exist_ok=True)
        readbench = os.path.join(ROOT, "target/release/readbench")
        for fmt in ("v5", "v6"):
            for plain in (False, True):
                out = os.path.join(extra, f"writer-{fmt}{'-plain' if plain else ''}.nettrace")
                if os.path.exists(readbench) and not os.path.exists(out):
                    run([readbench, "generate", out, "--mb", "4" if plain else "8", "--format", fmt]
                        + (["--plain"] if plain else []))
        traces = [os.path.join(DATA, f) for f in sorted(os.listdir(DATA))
                  if f.endswith((".nettrace", ".zip", ".netperf"))]
        extra = os.path.join(ROOT, "bench/out/traces")
        if os.path.isdir(extra):
            traces += [os.path.join(extra, f) for f in sorted(os.listdir(extra))
                       if f.endswith(".nettrace") and os.path.getsize(os.path.join(extra, f)) < 200_000_000]
    failures = 0
    expected = {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            name = os.path.basename(t)
            path = unzip(t, tmp)
            try:
                oj, ours = ours_counts(path)
                tj, te = te_counts(path)
            except RuntimeError as e:
                print(f"FAIL {name}: {e}")
                failures += 1
                continue
            if os.path.dirname(os.path.abspath(t)) == DATA:
                expected[name] = {"per_event": [
                    {"provider": p, "event_id": i, "version": v, "count": n} for (p, i, v), n in sorted(te.items())]}
            diff = []
            for k in sorted(set(ours) | set(te)):
                if ours.get(k, 0) != te.get(k, 0):
                    diff.append(f"{k}: ours {ours.get(k, 0)}, TraceEvent {te.get(k, 0)}")
            compared, fdiffs = compare_fields(path)
            status = "ok  " if not diff and not fdiffs else "DIFF"
            if oj.get("truncated") and diff and all(ours.get(k, 0) >= te.get(k, 0) for k in te):
                status = "ok* "  # truncated: we salvage more events than TraceEvent
            print(f"{status} {name}: {oj['events']} events (TraceEvent {tj['events']}), "
                  f"{len(te)} kinds, {compared} field values equal, {len(fdiffs)} differ")
            for d in (diff + fdiffs)[:15]:
                print(f"       {d}")
            if status == "DIFF":
                failures += 1
    if update:
        with open(os.path.join(DATA, "expected-counts.json"), "w") as f:
            json.dump(expected, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"wrote {len(expected)} traces to crates/nettrace/tests/data/expected-counts.json")
    print(f"{len(traces) - failures} of {len(traces)} traces agree with TraceEvent")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
