#!/usr/bin/env python3
"""clrspy's live-process side against dotnet-trace, in one run.

Measures: `ps` wall time with several .NET processes alive; the recorder's own CPU use (% of one
core), peak RSS, bytes/s, events/s and events the runtime lost while recording the same
providers for the same time from the cpu workload; and whether each tool's trace reads
completely in the other's reader (clrspy info / TraceEvent via bench/TraceEventHarness).

    bench/record_vs_dotnet_trace.py [--seconds 30]

Needs: cargo, the .NET SDK; installs dotnet-trace into bench/out/tools when missing.
Writes bench/out/record_vs_dotnet_trace.json and prints a markdown table.
"""
import argparse, json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench/out/record")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
DT = os.path.join(ROOT, "bench/out/tools/dotnet-trace")
WL = os.path.join(ROOT, "target/testapps/Workloads/Workloads.dll")
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
PROVIDERS = "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def setup():
    sh(["cargo", "build", "--release", "--locked", "-p", "clrspy"], cwd=ROOT)
    if not os.path.exists(WL):
        sh(["dotnet", "build", "-c", "Release", "-v", "q", "--nologo", "-o",
            os.path.dirname(WL), os.path.join(ROOT, "testapps/Workloads")])
    if not os.path.exists(DT):
        sh(["dotnet", "tool", "install", "--tool-path", os.path.dirname(DT), "dotnet-trace"])
    if not os.path.exists(HARNESS):
        sh(["dotnet", "build", "-c", "Release", "-v", "q", "--nologo", "-o",
            os.path.dirname(HARNESS), os.path.join(ROOT, "bench/TraceEventHarness")])
    os.makedirs(OUT, exist_ok=True)


def start(scenario, *args):
    p = subprocess.Popen(["dotnet", WL, scenario, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    if not line.startswith("ready pid="):
        p.kill()
        raise SystemExit(f"workload {scenario} did not start: {line!r}")
    return p


def timed(cmd):
    """Runs cmd; returns (wall s, cpu s, peak RSS MB, exit code)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status)


def info(path):
    r = subprocess.run([CLRSPY, "info", path, "--json"], capture_output=True, text=True)
    return json.loads(r.stdout)


def te_count(path):
    r = subprocess.run(["dotnet", HARNESS, "counts", path], capture_output=True, text=True)
    try:
        d = json.loads(r.stdout)
        return d.get("events"), d.get("lost_events")
    except Exception:
        return None, r.stderr.strip()[-200:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=30)
    a = ap.parse_args()
    setup()
    results = {}
    procs = []
    try:
        # ps with four idle .NET processes alive.
        procs = [start("idle", "--seconds", "120") for _ in range(4)]
        for name, cmd in [("clrspy", [CLRSPY, "ps"]), ("dotnet-trace", [DT, "ps"])]:
            walls = [timed(cmd)[0] for _ in range(5)]
            results[f"ps_{name}"] = statistics.median(walls)
        for p in procs:
            p.kill()
        procs = []
        # Recording cost, one tool at a time on a fresh cpu workload.
        runs = [
            ("clrspy", lambda pid, o: [CLRSPY, "record", "-p", str(pid), "--providers", PROVIDERS,
                                       "--duration", f"{a.seconds}s", "-o", o]),
            ("clrspy --no-thread-cpu", lambda pid, o: [CLRSPY, "record", "-p", str(pid), "--providers",
                                                       PROVIDERS, "--no-thread-cpu", "--duration",
                                                       f"{a.seconds}s", "-o", o]),
            ("dotnet-trace", lambda pid, o: [DT, "collect", "-p", str(pid), "--providers", PROVIDERS,
                                             "--duration", f"00:00:00:{a.seconds:02d}", "-o", o]),
        ]
        for name, make in runs:
            w = start("cpu", "--seconds", str(a.seconds + 15))
            procs = [w]
            pid = w.pid  # `dotnet app.dll` runs the app in the host process itself
            o = os.path.join(OUT, name.replace(" ", "_") + ".nettrace")
            if os.path.exists(o):
                os.remove(o)
            wall, cpu, rss, code = timed(make(pid, o))
            w.kill()
            w.wait()
            procs = []
            i = info(o) if os.path.exists(o) else {}
            size = os.path.getsize(o) if os.path.exists(o) else 0
            te_events, te_lost = te_count(o) if size else (None, None)
            results[name] = {
                "exit": code, "wall_s": wall, "cpu_s": cpu, "cpu_pct_of_core": 100 * cpu / wall,
                "peak_rss_mb": rss, "bytes": size, "bytes_per_s": size / a.seconds,
                "events": i.get("events"), "events_per_s": (i.get("events") or 0) / a.seconds,
                "dropped_events": i.get("dropped_events"), "ended_cleanly": i.get("ended_cleanly"),
                "traceevent_events": te_events, "traceevent_lost": te_lost,
            }
    finally:
        for p in procs:
            p.kill()
    with open(os.path.join(ROOT, "bench/out/record_vs_dotnet_trace.json"), "w") as f:
        json.dump(results, f, indent=2)
    c, n, d = results["clrspy"], results["clrspy --no-thread-cpu"], results["dotnet-trace"]
    def ratio(x, y):
        return f"{x / y:.2f}" if y else "-"
    print(f"\n| metric ({a.seconds} s, cpu workload, same providers) | clrspy | clrspy --no-thread-cpu | dotnet-trace | clrspy / dotnet-trace |")
    print("|---|---|---|---|---|")
    print(f"| `ps` wall time, 4 .NET processes (median of 5) | {results['ps_clrspy']*1000:.0f} ms | | {results['ps_dotnet-trace']*1000:.0f} ms | {ratio(results['ps_clrspy'], results['ps_dotnet-trace'])} |")
    for key, label, fmt in [
        ("cpu_pct_of_core", "recorder CPU, % of one core", "{:.2f}%"),
        ("peak_rss_mb", "recorder peak RSS", "{:.1f} MB"),
        ("bytes_per_s", "trace bytes/s", "{:,.0f}"),
        ("events_per_s", "events/s", "{:,.0f}"),
        ("dropped_events", "events lost by the runtime", "{}"),
        ("events", "events (clrspy info)", "{}"),
        ("traceevent_events", "events (TraceEvent)", "{}"),
    ]:
        vals = [fmt.format(r[key]) if r[key] is not None else "-" for r in (c, n, d)]
        rt = ratio(c[key], d[key]) if isinstance(c[key], (int, float)) and isinstance(d[key], (int, float)) else ""
        print(f"| {label} | {vals[0]} | {vals[1]} | {vals[2]} | {rt} |")


if __name__ == "__main__":
    main()
