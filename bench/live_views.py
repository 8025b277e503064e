#!/usr/bin/env python3
"""What the live views cost: the target's extra CPU while counters are read every second, and
clrspy's own CPU and RSS for `counters collect`, `top` and `stack`, side by side with
dotnet-trace asking for the same providers (the session cost; dotnet-counters and dotnet-stack
are not served here).

    python3 bench/live_views.py [--seconds 20] [--rounds 3] [--parts idle,web,own] [--no-build]

Part 1, the session cost: one idle .NET process (testapps/Workloads `idle`) and one web app
(testapps/RazorApp) under a fixed number of `ab` requests; per mode, the target's CPU (from
/proc/PID/stat; idle: per second, web: per 1000 requests) over the same window — bare, `clrspy counters collect` (System.Runtime's meter,
1 s), the same with the old EventCounters (`EventCounters\\System.Runtime`), and dotnet-trace with
each of those two sessions. The extra CPU is each round's figure minus that round's bare one
(median of the rounds). Part 2, clrspy's own cost: GNU time's user+sys and peak RSS of
`counters collect`, `top` (without a terminal: snapshots) on a CPU-bound workload, and `stack`
(10 calls on the loaded web app, each call's wall time). Prints markdown tables; writes
bench/out/live_views.json. Needs cargo, the .NET SDK, `ab` and GNU time; loopback only, every run
bounded. Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench/out/live_views")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
TOOLS = os.path.join(ROOT, "bench/out/tools")
DT = os.path.join(TOOLS, "dotnet-trace")
WORKLOADS = os.path.join(ROOT, "target/testapps/Workloads-bench")
RAZOR = os.path.join(ROOT, "target/testapps/RazorApp")
HZ = os.sysconf("SC_CLK_TCK")
METER = ("System.Diagnostics.Metrics:0x2:4:SessionId=bench;Metrics=System.Runtime;"
         "RefreshInterval=1;MaxHistograms=10;MaxTimeSeries=1000")
EVENTCOUNTERS = "System.Runtime:0:4:EventCounterIntervalSec=1"
MODES = {
    "bare": None,
    "clrspy counters (meter)": ["counters", "collect", "--format", "jsonl"],
    "clrspy counters (EventCounters)": ["counters", "collect", "--format", "jsonl",
                                        "--counters", "EventCounters\\System.Runtime"],
    "dotnet-trace (meter)": METER,
    "dotnet-trace (EventCounters)": EVENTCOUNTERS,
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(no_build):
    env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")
    if not no_build:
        run(["cargo", "build", "-q", "--release", "--locked", "-p", "clrspy"], cwd=ROOT)
        for proj, out in (("testapps/Workloads", WORKLOADS), ("testapps/RazorApp", RAZOR)):
            run(["dotnet", "build", "-c", "Release", "--nologo", "-v", "q", "-o", out,
                 os.path.join(ROOT, proj)], env=env, stdout=subprocess.DEVNULL)
    if not os.path.exists(DT):
        run(["dotnet", "tool", "install", "--tool-path", TOOLS, "dotnet-trace"],
            stdout=subprocess.DEVNULL)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def timed(cmd, tag):
    """`cmd` under GNU time; returns (Popen, the file GNU time writes)."""
    tfile = os.path.join(OUT, tag + ".time")
    p = subprocess.Popen(["/usr/bin/time", "-f", "%U %S %e %M", "-o", tfile] + cmd,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(OUT, tag + ".log"), "w"))
    return p, tfile


def read_time(tfile):
    with open(tfile) as f:
        u, s, e, m = f.read().split()[-4:]
    return {"cpu_s": float(u) + float(s), "wall_s": float(e), "rss_mb": int(m) / 1024}


def recorder(mode, pid, seconds, tag):
    spec = MODES[mode]
    if spec is None:
        return None, None
    if isinstance(spec, list):
        cmd = [CLRSPY] + spec + ["-p", str(pid), "--duration", f"{seconds + 2}s",
                                 "-o", os.path.join(OUT, tag + ".jsonl")]
    else:
        hh = time.strftime("%H:%M:%S", time.gmtime(seconds + 2))
        cmd = [DT, "collect", "-p", str(pid), "--providers", spec, "--duration", f"00:{hh}",
               "-o", os.path.join(OUT, tag + ".nettrace")]
    return timed(cmd, tag)


def ab(port, n):
    out = subprocess.run(["timeout", "300", "ab", "-q", "-n", str(n), "-c", "4",
                          f"http://127.0.0.1:{port}/"], capture_output=True, text=True).stdout
    m = re.search(r"Requests per second:\s+([\d.]+)", out)
    return float(m.group(1)) if m else 0.0


def session_cost(target, pid, port, a):
    rows = []
    for r in range(a.rounds):
        names = list(MODES)
        order = names[r % len(names):] + names[:r % len(names)]
        for mode in order:
            tag = f"{target}-{r}-{names.index(mode)}"
            p, tfile = recorder(mode, pid, a.seconds, tag)
            time.sleep(1.0)
            t0, w0 = cpu_ticks(pid), time.time()
            if port:
                ab(port, a.requests)
            else:
                time.sleep(a.seconds)
            cpu_ms = 1000 * (cpu_ticks(pid) - t0) / HZ
            # Idle: the target's CPU per second; the web app (a fixed number of requests,
            # as fast as it serves them): its CPU per 1000 requests.
            per = cpu_ms / (time.time() - w0) if not port else cpu_ms / a.requests * 1000
            row = {"target": target, "mode": mode, "round": r, "target_cpu": per}
            if p:
                try:
                    p.wait(timeout=a.seconds + 120)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                row.update(read_time(tfile))
            rows.append(row)
            print(f"{target} round {r + 1}: {mode}: {row['target_cpu']:.1f}", file=sys.stderr)
    return rows


def start_idle():
    p = subprocess.Popen(["dotnet", os.path.join(WORKLOADS, "Workloads.dll"), "idle",
                          "--seconds", "3000"], stdout=subprocess.DEVNULL)
    time.sleep(3)
    return p, p.pid


def start_razor():
    p = subprocess.Popen(["dotnet", os.path.join(RAZOR, "RazorApp.dll")],
                         stdout=subprocess.PIPE, text=True)
    fields = dict(w.split("=", 1) for w in p.stdout.readline().split() if "=" in w)
    return p, int(fields["pid"]), int(fields["port"])


def own_cost(a):
    """clrspy's own CPU and RSS: top on a CPU-bound workload, stack on the loaded web app."""
    rows = []
    cpu = subprocess.Popen(["dotnet", os.path.join(WORKLOADS, "Workloads.dll"), "cpu",
                            "--seconds", str(a.seconds + 20)], stdout=subprocess.DEVNULL)
    time.sleep(3)
    try:
        p, tfile = timed([CLRSPY, "top", "-p", str(cpu.pid), "--duration", f"{a.seconds}s"], "top")
        p.wait(timeout=a.seconds + 120)
        rows.append(dict(read_time(tfile), what=f"top, {a.seconds} s, CPU-bound target"))
    finally:
        cpu.kill()
        cpu.wait()
    app, pid, port = start_razor()
    try:
        ab(port, 2000)
        load = subprocess.Popen(["timeout", "120", "ab", "-q", "-t", "60", "-n", "10000000",
                                 "-c", "8", f"http://127.0.0.1:{port}/"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        calls = []
        for k in range(10):
            p, tfile = timed([CLRSPY, "stack", "-p", str(pid), "--json"], f"stack-{k}")
            p.wait(timeout=60)
            calls.append(read_time(tfile))
        load.kill()
        load.wait()
        rows.append({"what": "stack, web app under ab -c 8 (median of 10 calls)",
                     "cpu_s": statistics.median(c["cpu_s"] for c in calls),
                     "wall_s": statistics.median(c["wall_s"] for c in calls),
                     "rss_mb": statistics.median(c["rss_mb"] for c in calls),
                     "wall_max_s": max(c["wall_s"] for c in calls)})
    finally:
        app.kill()
        app.wait()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--parts", default="idle,web,own",
                    help="which parts to run, comma-separated: idle, web, own")
    a = ap.parse_args()
    parts = a.parts.split(",")
    os.makedirs(OUT, exist_ok=True)
    build(a.no_build)
    rows = []
    if "idle" in parts:
        idle, pid = start_idle()
        try:
            rows += session_cost("idle", pid, None, a)
        finally:
            idle.kill()
            idle.wait()
    if "web" in parts:
        app, pid, port = start_razor()
        try:
            ab(port, 2000)  # warm up
            rows += session_cost("web", pid, port, a)
        finally:
            app.kill()
            app.wait()
    own = own_cost(a) if "own" in parts else []
    print("| target | mode | target CPU (median; idle: ms/s, web: ms per 1000 requests) | extra vs "
          "bare | recorder CPU % of a core | recorder peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for target in [p for p in ("idle", "web") if p in parts]:
        bare = {x["round"]: x["target_cpu"] for x in rows
                if x["target"] == target and x["mode"] == "bare"}
        for mode in MODES:
            xs = [x for x in rows if x["target"] == target and x["mode"] == mode]
            med = statistics.median(x["target_cpu"] for x in xs)
            extra = statistics.median(x["target_cpu"] - bare[x["round"]] for x in xs)
            rec = "– | –"
            if "cpu_s" in xs[0]:
                rec = (f"{100 * statistics.median(x['cpu_s'] / max(x['wall_s'], 1e-9) for x in xs):.2f}"
                       f" | {statistics.median(x['rss_mb'] for x in xs):.1f}")
            print(f"| {target} | {mode} | {med:.1f} | {extra:+.1f} | {rec} |")
    print()
    print("| clrspy command | CPU s | wall s | peak RSS MB |")
    print("|---|---|---|---|")
    for r in own:
        print(f"| {r['what']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} | {r['rss_mb']:.1f} |")
    with open(os.path.join(ROOT, "bench/out/live_views.json"), "w") as f:
        json.dump({"seconds": a.seconds, "rows": rows, "own": own}, f, indent=1)


if __name__ == "__main__":
    main()
