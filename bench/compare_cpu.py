#!/usr/bin/env python3
"""Samples per method: clrspy against TraceEvent's TraceLog route, trace by trace, with reasons.

    bench/compare_cpu.py [--top N] [--max-mb MB] [--no-build] [TRACE ...]

Default traces: every trace in crates/nettrace/tests/data (zips are unpacked to a temporary
folder), every .nettrace in bench/out/traces/ and every bench/out/*.nettrace.

For each trace:
  * TraceEvent: `TraceEventHarness cpu-top TRACE --fold PATTERNS --addresses` (TraceLog .etlx,
    TraceEventStackSource over the Thread/Sample events, CallTree.ByID = PerfView's "By Name";
    every sample counts, TraceEvent cannot tell CPU from waiting). The same run also gives the
    counts with PerfView's fold patterns set to the GC poll frames (what clrspy does) and the
    leaf addresses TraceLog could not name.
  * clrspy: `clrspy report TRACE cpu --json` and `... waits --json`; a method's samples are its
    exclusive cpu + waits samples (clrspy splits every sample between the two).
Names are compared without module (`Module!`) and argument list (`(args)`); unresolved frames
(TraceEvent `module!?`/`?!?`, clrspy `[native]`, `[unknown ...]`, `lib!+0x...`) are counted
apart. The methods compared are the union of the --top N (default 50) heaviest resolved methods
of each side; their values are exact (clrspy is asked for every row, `--top 1000000`, a superset
of `--top 50`).

Every method that does not agree exactly gets a reason, tried in this order:
  safepoint  — TraceEvent with the GC poll frames folded (PerfView FoldPats
               `System.Threading.Thread.PollGC;System.Threading.Thread.<PollGC>`) agrees: clrspy
               folds those frames into their caller (profile.rs fold_safepoint_frames);
  r2r        — the difference is exactly the TraceEvent-unresolved leaf samples that lie within
               4 KB after a `Method/R2RGetEntryPoint` entry point of this method (TraceEvent
               4.0.0 ignores those events; clrspy names ReadyToRun code from them, symbols.rs);
  moved-cpu  — the trace has clrspy's thread CPU readings and clrspy's cpu + waits total
               exceeds the number of samples (see bench/README.md: blocked samples' CPU share
               is added to running stacks without being taken from their waiting time);
  truncated  — a cut trace: the two readers salvage different numbers of samples;
  unexplained.
Writes bench/out/compare_cpu.json and prints one markdown table.
"""
import argparse, bisect, collections, json, os, re, subprocess, sys, tempfile, zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
DATA = os.path.join(ROOT, "crates/nettrace/tests/data")
FOLD = "System.Threading.Thread.PollGC;System.Threading.Thread.<PollGC>"
R2R_MAX_SIZE = 4096  # symbols.rs R2R_MAX_SIZE


def norm(name):
    """`Module!NS.Type.Method(args)` or `NS.Type.Method(args)` → `NS.Type.Method` (argument
    lists may hold `!!0`, generic parameters: cut them first)."""
    name = re.sub(r"\(.*$", "", name)
    if "!" in name and not name.startswith("["):
        name = name.split("!", 1)[1]
    return name


def clrspy_unresolved(name):
    """`[native]`, `[unknown 0x...]`, `libcoreclr.so!+0x1234`."""
    return name.startswith("[") or re.search(r"!\+0x[0-9a-f]+$", name) is not None


def default_traces():
    out = [os.path.join(DATA, f) for f in sorted(os.listdir(DATA))
           if f.endswith((".nettrace", ".nettrace.zip"))]
    for d in (os.path.join(ROOT, "bench/out/traces"), os.path.join(ROOT, "bench/out")):
        if os.path.isdir(d):
            out += [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".nettrace")]
    return out


def plain(path, tmp):
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            n = z.namelist()[0]
            z.extract(n, tmp)
            return os.path.join(tmp, n)
    return path


def run_json(cmd, jsonl=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 3):
        raise RuntimeError((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:200])
    if jsonl:
        return [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    return json.loads(r.stdout)


def clrspy_side(p):
    """Exclusive cpu + waits samples per normalized name, totals, how CPU was split."""
    per = collections.Counter()
    unresolved = 0.0
    totals = {}
    how = None
    for kind in ("cpu", "waits"):
        r = run_json([CLRSPY, "report", p, kind, "--json", "--top", "1000000"])
        totals[kind] = r["total_samples"]
        how = r["method"]
        for m in r["top_exclusive"]:
            if clrspy_unresolved(m["method"]):
                unresolved += m["samples"]
            else:
                per[norm(m["method"])] += m["samples"]
    info = run_json([CLRSPY, "info", p, "--json"])
    samples = sum(e["count"] for e in info["per_event"] if e["name"] == "Thread/Sample")
    return per, unresolved, totals, how, samples, info


def te_side(methods):
    per = collections.Counter()
    unresolved = 0
    nostack = 0
    for m in methods:
        if m["kind"] == "method":
            per[m["method"]] += m["exclusive"]
        elif m["kind"] == "unresolved":
            unresolved += m["exclusive"]
        else:
            nostack += m["exclusive"]
    return per, unresolved, nostack


def r2r_prediction(p, te):
    """Samples TraceEvent leaves unresolved that clrspy names from R2R entry points, per name."""
    addrs = te.get("unresolved_leaf_addresses") or []
    if not addrs:
        return collections.Counter(), 0
    entries = {}
    for e in run_json([CLRSPY, "events", p, "--event", "Method/R2RGetEntryPoint", "--json", "--no-stacks"],
                      jsonl=True):
        f = e["fields"]
        ep = int(f["EntryPoint"]) if not isinstance(f["EntryPoint"], str) else int(f["EntryPoint"], 16)
        if ep:
            entries[ep] = norm(f["MethodNamespace"] + "." + f["MethodName"] if f["MethodNamespace"]
                               else f["MethodName"])
    starts = sorted(entries)
    pred = collections.Counter()
    named = 0
    for a in addrs:
        ip = int(a["address"], 16)
        i = bisect.bisect_right(starts, ip) - 1
        if i < 0:
            continue
        s = starts[i]
        nxt = starts[i + 1] if i + 1 < len(starts) else 1 << 64
        if ip - s < R2R_MAX_SIZE and ip < nxt:
            pred[entries[s]] += a["samples"]
            named += a["samples"]
    return pred, named


def compare(t, p, top):
    name = os.path.basename(t)
    res = {"trace": name, "path": t, "mb": round(os.path.getsize(p) / 1048576, 1)}
    ours, our_unres, totals, how, samples, info = clrspy_side(p)
    res.update(samples_in_trace=samples, clrspy_cpu=totals["cpu"], clrspy_waits=totals["waits"],
               clrspy_method=how, clrspy_unresolved=round(our_unres, 1),
               truncated=bool(info.get("truncated")))
    if samples == 0:
        res["note"] = "no Thread/Sample events"
        return res
    run = subprocess.run(["dotnet", HARNESS, "cpu-top", p, "--top", str(top), "--fold", FOLD, "--addresses"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        res["traceevent_error"] = (run.stderr.strip().splitlines() or ["?"])[0][:200]
        return res
    te = json.loads(run.stdout)
    theirs, te_unres, te_nostack = te_side(te["methods"])
    folded, _, _ = te_side(te["folded"]["methods"])
    res.update(samples_traceevent=te["samples"], traceevent_unresolved=te_unres,
               traceevent_no_stack=te_nostack, traceevent_conversion_error=te.get("conversion_error"))
    pred, r2r_named = r2r_prediction(p, te)
    res["traceevent_unresolved_named_by_r2r"] = r2r_named

    def heaviest(c):
        return {k for k, v in sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[:top] if v > 0}
    names = sorted(heaviest(ours) | heaviest(theirs))
    excess = totals["cpu"] + totals["waits"] - samples
    rows = []
    for n in names:
        a = round(ours.get(n, 0))
        b = theirs.get(n, 0)
        row = {"method": n, "clrspy": round(ours.get(n, 0), 1), "traceevent": b, "diff": a - b}
        if a != b:
            if folded.get(n, 0) == a:
                row["why"] = "safepoint"
            elif folded.get(n, 0) + pred.get(n, 0) == a and pred.get(n, 0):
                row["why"] = "r2r"
            elif how in ("thread-cpu-times", "mixed") and excess > 0.5 and a > b:
                row["why"] = "moved-cpu"
            elif te.get("conversion_error") or info.get("truncated"):
                row["why"] = "truncated"
            else:
                row["why"] = "unexplained"
        rows.append(row)
    diffs = [r for r in rows if r["diff"]]
    res.update(
        methods_compared=len(rows),
        agree=len(rows) - len(diffs),
        agree_with_folding=sum(1 for r in rows if folded.get(r["method"], 0) == round(ours.get(r["method"], 0))),
        max_diff=max((abs(r["diff"]) for r in rows), default=0),
        clrspy_excess_over_samples=round(excess, 1),
        reasons=dict(collections.Counter(r["why"] for r in diffs)),
        differences=sorted(diffs, key=lambda r: (-abs(r["diff"]), r["method"])),
        etlx_ms=round(te["etlx_ms"]), stacks_ms=round(te["stacks_ms"]),
    )
    return res


TEST_TRACES = [
    "crates/nettrace/tests/data/only_managed_samples.nettrace.zip",
    "crates/nettrace/tests/data/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
    "crates/nettrace/tests/data/trace.nettrace",
    # Recorded by `clrspy record` (thread CPU readings): see
    # crates/clrspy/tests/offline/cpu_vs_traceevent.rs.
    "crates/clrspy/tests/data/contention-thread-cpu.nettrace.zip",
]
TEST_DATA = "crates/clrspy/tests/data/traceevent-cpu.json"


def write_test_data(tmp):
    """TraceEvent's side only (run once; the test compares clrspy with it)."""
    out = {
        "_made_with": "python3 bench/compare_cpu.py --write-test-data: bench/TraceEventHarness cpu-top TRACE "
                      "--fold FOLD_PATS --addresses (TraceEvent 4.0.0: TraceLog .etlx, TraceEventStackSource over "
                      "Thread/Sample, CallTree.ByID), names without module and argument list; 2026-11-22",
        "fold_pats": FOLD,
        "r2r_max_size": R2R_MAX_SIZE,
        "traces": {},
    }
    for rel in TEST_TRACES:
        p = plain(os.path.join(ROOT, rel), tmp)
        run = subprocess.run(["dotnet", HARNESS, "cpu-top", p, "--fold", FOLD, "--addresses"],
                             capture_output=True, text=True, check=True)
        te = json.loads(run.stdout)
        raw, unres, nostack = te_side(te["methods"])
        folded, _, _ = te_side(te["folded"]["methods"])
        pred, named = r2r_prediction(p, te)
        out["traces"][os.path.basename(rel)] = {
            "path": rel,
            "samples": te["samples"],
            "conversion_error": te.get("conversion_error"),
            "unresolved": unres,
            "no_stack": nostack,
            "exclusive": dict(sorted(raw.items())),
            "exclusive_folded": dict(sorted(folded.items())),
            "r2r": dict(sorted(pred.items())),
        }
        print(f"{rel}: {te['samples']} samples, {len(raw)} methods, {unres} unresolved, {named} of them R2R",
              file=sys.stderr)
    with open(os.path.join(ROOT, TEST_DATA), "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="*")
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--max-mb", type=float, default=None, help="skip traces larger than this")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--write-test-data", action="store_true",
                    help=f"write {TEST_DATA} (TraceEvent's counts for cpu_vs_traceevent.rs) and stop")
    ap.add_argument("--clrspy", help="the clrspy binary to compare (default target/release/clrspy)")
    a = ap.parse_args()
    global CLRSPY
    if a.clrspy:
        CLRSPY, a.no_build = os.path.abspath(a.clrspy), True
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "clrspy"], cwd=ROOT, check=True)
        subprocess.run(["dotnet", "build", "-c", "Release", "-v", "q", "--nologo", "-o", os.path.dirname(HARNESS),
                        os.path.join(ROOT, "bench/TraceEventHarness")], check=True, stdout=subprocess.DEVNULL)
    if a.write_test_data:
        with tempfile.TemporaryDirectory() as tmp:
            write_test_data(tmp)
        return
    traces = a.traces or default_traces()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            if a.max_mb is not None and os.path.getsize(t) > a.max_mb * 1048576:
                print(f"{os.path.basename(t)}: skipped (> {a.max_mb} MB)", file=sys.stderr)
                continue
            p = plain(t, tmp)
            try:
                r = compare(t, p, a.top)
            except RuntimeError as e:
                r = {"trace": os.path.basename(t), "path": t, "error": str(e)}
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "differences"}), file=sys.stderr, flush=True)
            for d in r.get("differences", [])[:6]:
                print(f"    {d['diff']:+d} {d['method']} (clrspy {d['clrspy']}, TraceEvent {d['traceevent']}): {d['why']}",
                      file=sys.stderr)
    os.makedirs(os.path.join(ROOT, "bench/out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/out/compare_cpu.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("| trace | samples (trace / TraceEvent / clrspy cpu+waits) | unresolved leaf samples (TraceEvent / clrspy) "
          "| methods compared | agree exactly | agree with GC-poll folding | max diff | reasons for the others |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['trace']} | error: {r['error']} | | | | | | |")
            continue
        ours = f"{r['clrspy_cpu'] + r['clrspy_waits']:,.1f}"
        if "note" in r:
            print(f"| {r['trace']} | 0 | | | | | | {r['note']} |")
            continue
        if "traceevent_error" in r:
            print(f"| {r['trace']} | {r['samples_in_trace']:,} / — / {ours} | | | | | | TraceEvent failed: {r['traceevent_error']} |")
            continue
        why = ", ".join(f"{k} {v}" for k, v in sorted(r["reasons"].items())) or "—"
        print(f"| {r['trace']} | {r['samples_in_trace']:,} / {r['samples_traceevent']:,} / {ours} "
              f"| {r['traceevent_unresolved']:,} / {r['clrspy_unresolved']:,.0f} | {r['methods_compared']} "
              f"| {r['agree']} | {r['agree_with_folding']} | {r['max_diff']:,} | {why} |")


if __name__ == "__main__":
    main()
