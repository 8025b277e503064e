#!/usr/bin/env python3
"""What sampling costs a loaded web app: requests/s of testapps/RazorApp under `ab` with no
recorder, with `clrspy record --sampler kernel`, with `clrspy record` (the runtime's sample
profiler, which suspends the managed threads ~1000 times a second) and with `dotnet-trace collect`
(the same runtime sampler), in interleaved rounds on one app process.

    python3 bench/sampler_overhead.py [--rounds 3] [--seconds 15] [--concurrency 8] [--pin]
                                      [--warmup 10] [--no-build] [--app razor|diag|template]

`--app diag` loads testapps/DiagScenarios' `/api/diag/work/300` instead (each request hashes
4 KB 300 times, about 2 ms of CPU: the same work every request, whatever happens to the thread
meanwhile; RazorApp compiles expressions per request and its rate drifts by 2x over minutes. Not
`/highcpu`, which spins for a wall-clock time: a thread suspended by the runtime's sampler still
finishes on time, so that cost would not show). `--app template` loads the `dotnet new web`
template's "Hello World!" at `/` (target/testapps/TemplateWeb, made by the live tests or here
with `dotnet new web`): tens of microseconds a request, so what a sampler costs per request is
mostly the runtime's and the kernel's, not the app's code.

Each round runs every mode once, in a rotated order (the loss is the median of each round's
rate against that round's bare rate); each mode's recorder attaches, the load runs
for --seconds (`ab -t`), the recorder stops. Per mode: the median requests/s and its loss against
no recorder, the recorder's CPU (user+sys, % of one core over its run) and peak RSS (GNU time),
and the app's own CPU over the load, and per request (the app's CPU milliseconds per request:
what sampling costs inside the app, less noisy than the rate on a saturated machine). `--pin`
(root, cgroup v1 cpuset) gives the app CPU 1 alone and runs ab and the recorders on CPU 0: the
app's loss is then what the sampler costs inside it (suspensions, perf interrupts, the runtime's
EventPipe threads), the recorder's own CPU is its column. Prints a markdown table; writes
bench/out/sampler.json.
Needs cargo, the .NET SDK, `ab` (apache2-utils) and GNU time; dotnet-trace is installed into
bench/out/tools when missing. Loopback only; every run bounded. Standard library only.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench/out/sampler")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
TOOLS = os.path.join(ROOT, "bench/out/tools")
DT = os.path.join(TOOLS, "dotnet-trace")
APPS = {
    # name: (project, output folder, the path ab loads, the app's arguments)
    "razor": ("RazorApp", os.path.join(ROOT, "target/testapps/RazorApp"), "/", []),
    "diag": ("DiagScenarios", os.path.join(ROOT, "bench/out/apps/DiagScenarios"),
             "/api/diag/work/300", ["--urls", "http://127.0.0.1:0"]),
    # No ready line: the port is chosen here and polled.
    "template": ("TemplateWeb", os.path.join(ROOT, "target/testapps/TemplateWeb"), "/", None),
}
TEMPLATE_SRC = os.path.join(ROOT, "target/testapps/TemplateWeb-src")
# The cpu profile's providers, for dotnet-trace (clrspy's default profile is the same).
PROVIDERS = "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4"
MODES = ["bare", "clrspy --sampler kernel", "clrspy (runtime sampler)", "dotnet-trace"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(no_build, app):
    project, out = APPS[app][:2]
    env = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")
    if not no_build or not os.path.exists(os.path.join(out, project + ".dll")):
        if not no_build:
            run(["cargo", "build", "-q", "--release", "--locked", "-p", "clrspy"], cwd=ROOT)
        src = os.path.join(ROOT, "testapps", project)
        if app == "template":
            src = TEMPLATE_SRC
            if not os.path.exists(os.path.join(src, project + ".csproj")):
                run(["dotnet", "new", "web", "-n", project, "-o", src, "--force"], env=env,
                    stdout=subprocess.DEVNULL)
        run(["dotnet", "build", "-c", "Release", "--nologo", "-v", "q", "-o", out, src], env=env)
    if not os.path.exists(DT):
        run(["dotnet", "tool", "install", "--tool-path", TOOLS, "dotnet-trace"],
            stdout=subprocess.DEVNULL)


def start_app(app):
    project, out, _, args = APPS[app]
    if args is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen(["dotnet", os.path.join(out, project + ".dll"), "--urls",
                              f"http://127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                             env=dict(os.environ, ASPNETCORE_ENVIRONMENT="Production"))
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return p, p.pid, port
            except OSError:
                time.sleep(0.1)
        p.kill()
        sys.exit(f"{project} did not listen on {port}")
    p = subprocess.Popen(["dotnet", os.path.join(out, project + ".dll")] + args,
                         stdout=subprocess.PIPE, text=True)
    # Its "ready pid=… port=…" line (DiagScenarios may log before it); 200 lines at most.
    for _ in range(200):
        line = p.stdout.readline()
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if "pid" in fields and "port" in fields:
            # The rest of its output is not read: send it nowhere, so it never blocks.
            subprocess.Popen(["cat"], stdin=p.stdout, stdout=subprocess.DEVNULL)
            return p, int(fields["pid"]), int(fields["port"])
    p.kill()
    sys.exit(f"no ready line from {project}")


def cpuset(name, cpus, pid):
    """Moves process `pid` (all its threads, and its children to come) into a cgroup v1
    cpuset of its own that runs on `cpus` only."""
    d = f"/sys/fs/cgroup/cpuset/clrspy-bench-{name}"
    os.makedirs(d, exist_ok=True)
    for f, v in (("cpuset.cpus", cpus), ("cpuset.mems", "0"), ("cgroup.procs", str(pid))):
        with open(os.path.join(d, f), "w") as fh:
            fh.write(v)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])


def ab(port, seconds, concurrency, path="/"):
    out = subprocess.run(
        ["timeout", str(seconds + 30), "ab", "-q", "-t", str(seconds), "-n", "10000000",
         "-c", str(concurrency), f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True).stdout
    m = re.search(r"Requests per second:\s+([\d.]+)", out)
    failed = re.search(r"Failed requests:\s+(\d+)", out)
    if not m:
        sys.exit(f"ab gave no rate:\n{out}")
    return float(m.group(1)), int(failed.group(1)) if failed else 0


def recorder(mode, pid, seconds, trace):
    """The recorder's command (under GNU time), or None for no recorder."""
    dur = seconds + 2
    if mode == "bare":
        return None
    if mode == "dotnet-trace":
        hh = time.strftime("%H:%M:%S", time.gmtime(dur))
        cmd = [DT, "collect", "-p", str(pid), "--providers", PROVIDERS,
               "--duration", f"00:{hh}", "-o", trace]
    else:
        cmd = [CLRSPY, "record", "-p", str(pid), "--duration", f"{dur}s", "-o", trace]
        cmd += ["--sampler", "kernel" if "kernel" in mode else "runtime"]
    return ["/usr/bin/time", "-f", "%U %S %e %M", "-o", trace + ".time"] + cmd


def one(mode, pid, port, a, k):
    trace = os.path.join(OUT, f"{mode.split()[0]}-{k}-{len(mode)}.nettrace")
    cmd = recorder(mode, pid, a.seconds, trace)
    rec = None
    if cmd:
        rec = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=open(trace + ".log", "w"))
        time.sleep(1.0)
    t0 = cpu_ticks(pid)
    rps, failed = ab(port, a.seconds, a.concurrency, APPS[a.app][2])
    app_cpu = (cpu_ticks(pid) - t0) / os.sysconf("SC_CLK_TCK") / a.seconds
    row = {"mode": mode, "rps": rps, "failed": failed, "app_cpus": app_cpu,
           "app_ms_per_req": 1000 * app_cpu / max(rps, 1e-9)}
    if rec:
        try:
            rec.wait(timeout=a.seconds + 120)
        except subprocess.TimeoutExpired:
            rec.kill()
            rec.wait()
        with open(trace + ".time") as f:
            u, s_, e, m = f.read().split()[-4:]
        row.update(rec_cpu=(float(u) + float(s_)) / max(float(e), 1e-9),
                   rec_rss_mb=int(m) / 1024, trace_mb=os.path.getsize(trace) / 2**20
                   if os.path.exists(trace) else 0)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--warmup", type=int, default=10, help="seconds of load before the rounds")
    ap.add_argument("--app", choices=sorted(APPS), default="razor")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    build(a.no_build, a.app)
    if a.pin:
        cpuset("rest", "0", os.getpid())
    app, pid, port = start_app(a.app)
    if a.pin:
        cpuset("app", "1", pid)
    rows = []
    try:
        ab(port, a.warmup, a.concurrency, APPS[a.app][2])  # warm up: tiering, the views' compilation
        for r in range(a.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
            for mode in order:
                row = one(mode, pid, port, a, r)
                row["round"] = r
                rows.append(row)
                print(f"round {r + 1}: {mode}: {row['rps']:.0f} req/s", file=sys.stderr)
    finally:
        app.kill()
        app.wait()
    med = lambda m, k: statistics.median(x[k] for x in rows if x["mode"] == m and k in x)
    print(f"| mode | req/s (median of {a.rounds}) | loss vs bare (median of the rounds' ratios) | app CPUs "
          "| app CPU ms per request | recorder CPU (% of a core) | recorder peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    def loss(m):
        # Each round's rate against that round's bare rate: the machine's drift cancels.
        bare_of = {x["round"]: x["rps"] for x in rows if x["mode"] == "bare"}
        return statistics.median(1 - x["rps"] / bare_of[x["round"]]
                                 for x in rows if x["mode"] == m)
    for m in MODES:
        rps = med(m, "rps")
        rec = (f"{100 * med(m, 'rec_cpu'):.1f} | {med(m, 'rec_rss_mb'):.0f}"
               if m != "bare" else "– | –")
        print(f"| {m} | {rps:.0f} | {100 * loss(m):.1f}% | {med(m, 'app_cpus'):.2f} "
              f"| {med(m, 'app_ms_per_req'):.2f} | {rec} |")
    with open(os.path.join(ROOT, "bench/out/sampler.json"), "w") as f:
        json.dump({"app": a.app, "seconds": a.seconds, "concurrency": a.concurrency,
                   "pin": a.pin, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
