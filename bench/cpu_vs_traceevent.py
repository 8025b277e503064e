#!/usr/bin/env python3
"""Sample counts per method: clrspy against TraceEvent's TraceLog route (the harness's cpu-top).

For each trace, TraceEvent's exclusive samples per method (all samples: TraceEvent cannot tell
CPU from waiting) are compared with clrspy's exclusive cpu + waits samples per method. Names are
compared without argument lists; unresolved frames (TraceEvent `module!?`, clrspy `[native]`,
`[unknown ...]`) are left out.

    bench/cpu_vs_traceevent.py [TRACE...]   (default: the shared traces with samples)
"""
import json, os, re, subprocess, sys, tempfile, zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
DATA = os.path.join(ROOT, "crates/nettrace/tests/data")
DEFAULT = ["only_managed_samples.nettrace.zip", "eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip",
           "trace.nettrace"]


def norm(name):
    return re.sub(r"\(.*$", "", name)


def unresolved(name):
    return name.endswith("!?") or name.startswith("[")


def plain(path, tmp):
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            n = z.namelist()[0]
            z.extract(n, tmp)
            return os.path.join(tmp, n)
    return path


def main():
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "clrspy", "-q"], cwd=ROOT, check=True)
    subprocess.run(["dotnet", "build", "-c", "Release", "-v", "q", "--nologo", "-o",
                    os.path.dirname(HARNESS), os.path.join(ROOT, "bench/TraceEventHarness")], check=True,
                   stdout=subprocess.DEVNULL)
    traces = sys.argv[1:] or [os.path.join(DATA, t) for t in DEFAULT]
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in traces:
            p = plain(t, tmp)
            run = subprocess.run(["dotnet", HARNESS, "cpu-top", p, "--top", "100000"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                why = (run.stderr.strip().splitlines() or ["?"])[0][:160]
                print(f"{os.path.basename(t)}: TraceEvent's TraceLog route failed: {why}")
                result[os.path.basename(t)] = {"traceevent_error": why}
                continue
            te = json.loads(run.stdout)
            ours = {}
            for kind in ("cpu", "waits"):
                r = json.loads(subprocess.run([CLRSPY, "report", p, kind, "--json", "--top", "100000"],
                                              capture_output=True, text=True).stdout)
                for m in r["top_exclusive"]:
                    ours[norm(m["method"])] = ours.get(norm(m["method"]), 0) + m["samples"]
            theirs = {}
            for m in te["top_exclusive"]:
                theirs[norm(m["method"])] = theirs.get(norm(m["method"]), 0) + m["samples"]
            names = [n for n in set(ours) | set(theirs) if not unresolved(n)]
            agree = [n for n in names if round(ours.get(n, 0)) == theirs.get(n, 0)]
            diff = sorted(((abs(round(ours.get(n, 0)) - theirs.get(n, 0)), n, round(ours.get(n, 0)), theirs.get(n, 0))
                           for n in names if n not in agree), reverse=True)
            total_ours = sum(ours.values())
            result[os.path.basename(t)] = {
                "samples_traceevent": te["samples"], "samples_clrspy": round(total_ours),
                "methods": len(names), "agree": len(agree), "largest_differences": diff[:5],
                "unresolved_traceevent": sum(v for k, v in theirs.items() if unresolved(k)),
                "unresolved_clrspy": round(sum(v for k, v in ours.items() if unresolved(k))),
            }
            r = result[os.path.basename(t)]
            print(f"{os.path.basename(t)}: {r['agree']}/{r['methods']} methods agree exactly; "
                  f"samples {r['samples_clrspy']} (clrspy) vs {r['samples_traceevent']} (TraceEvent); "
                  f"unresolved {r['unresolved_clrspy']} vs {r['unresolved_traceevent']}; "
                  f"largest differences {r['largest_differences'][:3]}")
    os.makedirs(os.path.join(ROOT, "bench/out"), exist_ok=True)
    with open(os.path.join(ROOT, "bench/out/cpu_vs_traceevent.json"), "w") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
