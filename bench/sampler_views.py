#!/usr/bin/env python3
"""What each sampler's trace costs downstream: testapps/RazorApp under the same `ab` load,
recorded once with `clrspy record --sampler runtime` and once with `--sampler kernel` (one app
process, one run, the recordings back to back), then per trace, side by side: its size, the
time and peak memory of `report` (the summary), `report cpu` and every `convert` view, and the
first rows of `report cpu`'s exclusive table (the default view: native frames grouped).

    python3 bench/sampler_views.py [--seconds 20] [--concurrency 8] [--no-build]

Prints a markdown table with the kernel/runtime ratios; writes bench/out/sampler_views.json.
Needs cargo, the .NET SDK, `ab` (apache2-utils) and GNU time. Loopback only; every run bounded.
Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import sampler_overhead as so

ROOT = so.ROOT
OUT = os.path.join(ROOT, "bench/out/sampler_views")
VIEWS = ["speedscope", "html", "chromium", "pprof", "folded", "flamegraph"]
SAMPLERS = ["runtime", "kernel"]


def timed(cmd, out_path=os.devnull):
    """Runs `cmd` under GNU time: (seconds, peak RSS MB, stdout text or '')."""
    tf = os.path.join(OUT, "time.txt")
    with open(out_path, "w") as out:
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", tf] + cmd,
                           stdout=out, stderr=subprocess.DEVNULL, timeout=600)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}")
    with open(tf) as f:
        e, m = f.read().split()[-2:]
    return float(e), int(m) / 1024


def record(sampler, pid, port, a):
    trace = os.path.join(OUT, f"{sampler}.nettrace")
    if os.path.exists(trace):
        os.remove(trace)
    rec = subprocess.Popen(
        ["/usr/bin/time", "-f", "%U %S %e %M", "-o", trace + ".time", so.CLRSPY, "record",
         "-p", str(pid), "--duration", f"{a.seconds}s", "--sampler", sampler, "-o", trace],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(trace + ".log", "w"))
    time.sleep(1.0)
    rps, failed = so.ab(port, a.seconds, a.concurrency)
    rec.wait(timeout=a.seconds + 120)
    with open(trace + ".time") as f:
        u, s_, _e, m = f.read().split()[-4:]
    return trace, {"rps": rps, "failed": failed, "rec_cpu_s": float(u) + float(s_),
                   "rec_rss_mb": int(m) / 1024}


def measure(trace):
    row = {"size_mb": os.path.getsize(trace) / 2**20}
    row["report"] = timed([so.CLRSPY, "report", trace])
    cpu_json = os.path.join(OUT, os.path.basename(trace) + ".cpu.json")
    row["report cpu"] = timed([so.CLRSPY, "report", trace, "cpu", "--json", "--top", "8"],
                              cpu_json)
    with open(cpu_json) as f:
        cpu = json.load(f)
    row["top"] = [(m["method"], m["percent"], (m.get("called_from") or {}).get("method"))
                  for m in cpu["top_exclusive"][:8]]
    for v in VIEWS:
        out = os.path.join(OUT, os.path.basename(trace) + "." + v)
        row[v] = timed([so.CLRSPY, "convert", trace, "--to", v, "-o", out])
        row[v + " size_mb"] = os.path.getsize(out) / 2**20
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    so.build(a.no_build, "razor")
    app, pid, port = so.start_app("razor")
    rows = {}
    try:
        so.ab(port, a.warmup, a.concurrency)
        traces = {}
        for s in SAMPLERS:
            traces[s], rows[s] = record(s, pid, port, a)
    finally:
        app.kill()
        app.wait()
    for s in SAMPLERS:
        rows[s].update(measure(traces[s]))
    with open(os.path.join(OUT, "..", "sampler_views.json"), "w") as f:
        json.dump(rows, f, indent=1)
    r, k = rows["runtime"], rows["kernel"]
    print(f"RazorApp, ab -c {a.concurrency}, {a.seconds} s each, one app process\n")
    print("| | --sampler runtime | --sampler kernel | kernel/runtime |")
    print("|---|---|---|---|")
    print(f"| requests/s under the recording | {r['rps']:.0f} | {k['rps']:.0f} | "
          f"{k['rps'] / max(r['rps'], 1e-9):.2f} |")
    print(f"| recorder CPU s, peak RSS MB | {r['rec_cpu_s']:.2f}, {r['rec_rss_mb']:.0f} | "
          f"{k['rec_cpu_s']:.2f}, {k['rec_rss_mb']:.0f} | "
          f"{k['rec_cpu_s'] / max(r['rec_cpu_s'], 1e-9):.2f} |")
    print(f"| trace MB | {r['size_mb']:.1f} | {k['size_mb']:.1f} | "
          f"{k['size_mb'] / r['size_mb']:.2f} |")
    for what in ["report", "report cpu"] + VIEWS:
        (rt, rm), (kt, km) = r[what], k[what]
        size = ""
        if what in VIEWS:
            size = f" ({r[what + ' size_mb']:.1f} / {k[what + ' size_mb']:.1f} MB)"
        print(f"| {what}: s, peak MB{size} | {rt:.2f}, {rm:.0f} | {kt:.2f}, {km:.0f} | "
              f"{kt / max(rt, 1e-9):.2f}, {km / max(rm, 1e-9):.2f} |")
    for s in SAMPLERS:
        print(f"\n`report cpu` (default view), --sampler {s}, exclusive:")
        for name, pct, paid in rows[s]["top"]:
            print(f"  {pct:5.1f}%  {name}" + (f"  (from {paid})" if paid else ""))


if __name__ == "__main__":
    main()
