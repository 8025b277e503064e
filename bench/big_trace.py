#!/usr/bin/env python3
"""Reports and conversions on one large real trace, side by side, in one run.

    bench/big_trace.py [TRACE]   (default bench/out/traces/big.nettrace, >= 500 MB)

Measures wall time and peak RSS (of the process tree's largest member, via wait4) of:
  clrspy report TRACE cpu / clrspy report TRACE (summary)
  TraceEvent's route to the same top-N (bench/TraceEventHarness cpu-top: TraceLog .etlx
  conversion, then walking every sample's stack)
  dotnet-trace report TRACE topN
  clrspy convert --to speedscope|chromium|folded|flamegraph|pprof|html
  dotnet-trace convert --format Speedscope|Chromium
and the output sizes. Each command gets --timeout seconds (default 900). Writes
bench/out/big_trace.json and prints markdown tables with ratios.

Make the trace with: CIRCULAR_MB=512 testapps/record-with-env.sh \\
  target/testapps/Workloads/Workloads.dll bigtrace bench/out/traces/big.nettrace --seconds 40
"""
import argparse, json, os, subprocess, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
DT = os.path.join(ROOT, "bench/out/tools/dotnet-trace")
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
OUT = os.path.join(ROOT, "bench/out/big")


def timed(cmd, timeout):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = t0 + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            _, status, ru = os.wait4(p.pid, 0)
            return {"wall_s": None, "timeout": True}
        time.sleep(0.05)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")[-300:] if p.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    return {"wall_s": wall, "peak_rss_mb": ru.ru_maxrss / 1024.0, "exit": code,
            "error": err.strip() if code else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", default=os.path.join(ROOT, "bench/out/traces/big.nettrace"))
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "clrspy", "-q"], cwd=ROOT, check=True)
    if not os.path.exists(DT):
        subprocess.run(["dotnet", "tool", "install", "--tool-path", os.path.dirname(DT), "dotnet-trace"], check=True)
    subprocess.run(["dotnet", "build", "-c", "Release", "-v", "q", "--nologo", "-o", os.path.dirname(HARNESS),
                    os.path.join(ROOT, "bench/TraceEventHarness")], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(OUT, exist_ok=True)
    size_mb = os.path.getsize(a.trace) / 1048576
    print(f"trace: {a.trace} ({size_mb:.0f} MB)")
    r = {"trace": a.trace, "trace_mb": size_mb}
    runs = [
        ("clrspy report cpu", [CLRSPY, "report", a.trace, "cpu"]),
        ("clrspy report (summary)", [CLRSPY, "report", a.trace]),
        ("TraceEvent TraceLog route (etlx + stacks)", ["dotnet", HARNESS, "cpu-top", a.trace]),
        ("dotnet-trace report topN", [DT, "report", a.trace, "topN"]),
    ]
    for fmt in ["speedscope", "chromium", "folded", "flamegraph", "pprof", "html"]:
        runs.append((f"clrspy convert {fmt}", [CLRSPY, "convert", a.trace, "--to", fmt, "-o",
                                              os.path.join(OUT, f"big.{fmt}")]))
    for fmt in ["Speedscope", "Chromium"]:
        runs.append((f"dotnet-trace convert {fmt}", [DT, "convert", a.trace, "--format", fmt, "-o",
                                                     os.path.join(OUT, f"dt-big")]))
    for name, cmd in runs:
        res = timed(cmd, a.timeout)
        r[name] = res
        print(f"  {name}: {res}", flush=True)
    sizes = {}
    for f in os.listdir(OUT):
        sizes[f] = os.path.getsize(os.path.join(OUT, f))
    r["output_sizes"] = sizes
    with open(os.path.join(ROOT, "bench/out/big_trace.json"), "w") as f:
        json.dump(r, f, indent=2)

    def cell(x):
        if x.get("timeout"):
            return f"> {a.timeout} s (killed)", ""
        if x.get("exit"):
            return f"failed ({x.get('error', '')[:60]})", ""
        return f"{x['wall_s']:.2f} s", f"{x['peak_rss_mb']:.0f} MB"
    print(f"\n| on {size_mb:.0f} MB | time | peak RSS |\n|---|---|---|")
    for name, _ in runs:
        t, m = cell(r[name])
        print(f"| {name} | {t} | {m} |")
    print("\noutput sizes:", {k: f"{v/1048576:.1f} MB" for k, v in sorted(sizes.items())})


if __name__ == "__main__":
    main()
