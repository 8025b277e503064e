#!/usr/bin/env bash
# clrspy's reading speed on an event-dense trace (and a large-payload one), side by side in one
# run with TraceEvent and, optionally, with an older clrspy binary.
#
#   bench/dense.sh [TRACE...]
#
# Without TRACE it uses bench/out/traces/dense.nettrace, recording it first when missing (the
# `bigtrace` workload on 64 threads for 40 s with the runtime's own EventPipe settings: ~400 MB,
# ~10-15 M small EventSource events, all with stacks, compressed headers), plus
# bench/out/traces/big.nettrace when it exists (bench/reader.sh records it).
#
# Environment (all optional):
#   BASE_CLRSPY   another clrspy binary to compare with (e.g. the base commit's release build:
#                 git worktree add /tmp/base BASE && cargo build --release -p clrspy there)
#   RUNS          runs per measurement, best of (default 3)
#   EVENTS_LIMIT  events written by `clrspy events --json --limit N` (default 2000000)
#   SECONDS_REC   recording length for the dense trace (default 40)
#   NO_TE=1       skip TraceEvent
#
# Prints per trace and command: best user CPU seconds and best wall seconds over RUNS, events/s
# and MB/s by user CPU time, and the ratios to TraceEvent's walk and to BASE_CLRSPY (by user CPU
# seconds for clrspy; TraceEvent's own wall-clock timing of its walk, which runs on one thread).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --locked -p clrspy >&2
if [ "${NO_TE:-0}" != "1" ]; then
    dotnet build bench/TraceEventHarness -c Release --nologo -v q -o bench/out/harness >&2
fi
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
    dense=bench/out/traces/dense.nettrace
    if [ ! -f "$dense" ]; then
        dotnet build testapps/Workloads -c Release --nologo -v q -o target/testapps/Workloads >&2
        mkdir -p "$(dirname "$dense")"
        CIRCULAR_MB=1024 testapps/record-with-env.sh target/testapps/Workloads/Workloads.dll \
            bigtrace "$dense" --seconds "${SECONDS_REC:-40}" --threads 64 >&2
    fi
    traces=("$dense")
    if [ -f bench/out/traces/big.nettrace ]; then
        traces+=(bench/out/traces/big.nettrace)
    fi
fi

python3 - "${traces[@]}" <<'PY'
import json, os, subprocess, sys

runs = int(os.environ.get("RUNS", "3"))
limit = int(os.environ.get("EVENTS_LIMIT", "2000000"))
new = "target/release/clrspy"
base = os.environ.get("BASE_CLRSPY")
no_te = os.environ.get("NO_TE") == "1"

def timed(cmd):
    """Best (user, wall) seconds over `runs` runs; stdout to /dev/null."""
    import time
    best_user, best_wall = None, None
    for _ in range(runs):
        t0 = time.monotonic()
        with open(os.devnull, "wb") as null:
            p = subprocess.Popen(cmd, stdout=null)
            _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        if status != 0:
            sys.exit(f"{' '.join(cmd)} failed ({status})")
        best_user = usage.ru_utime if best_user is None else min(best_user, usage.ru_utime)
        best_wall = wall if best_wall is None else min(best_wall, wall)
    return best_user, best_wall

for trace in sys.argv[1:]:
    subprocess.run(["cat", trace], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
    mb = os.path.getsize(trace) / 1e6
    info = json.loads(subprocess.run([new, "info", trace, "--json"], capture_output=True,
                                     check=True).stdout)
    events = info["events"]
    shown = min(events, limit)
    te = None
    if not no_te:
        te = json.loads(subprocess.run(
            ["dotnet", "bench/out/harness/TraceEventHarness.dll", "bench", trace],
            capture_output=True, check=True).stdout)
        if te["events"] != events:
            print(f"note: TraceEvent counted {te['events']:,} events, clrspy {events:,}")
    print(f"\ntrace: {trace}, {mb:.0f} MB, {events:,} events; best of {runs} runs")
    if te:
        print(f"TraceEvent walk: {te['seconds_walk']:.2f} s = {te['events'] / te['seconds_walk'] / 1e6:.1f} M ev/s, "
              f"{mb / te['seconds_walk']:.0f} MB/s; walk + decode {te['seconds_decode']:.2f} s")
    print(f"{'command':<34}{'binary':<7}{'user s':>8}{'wall s':>8}{'M ev/s':>8}{'MB/s':>8}"
          f"{'vs TE':>8}{'vs base':>9}")
    commands = [
        ("info", ["info", trace], events, mb),
        ("report", ["report", trace], events, mb),
        (f"events --json --limit {shown}", ["events", "--json", "--limit", str(limit), trace],
         shown, mb * shown / max(events, 1)),
    ]
    for label, args, n, size in commands:
        results = [("new", timed([new] + args))]
        if base:
            results.append(("base", timed([base] + args)))
        base_user = results[-1][1][0] if base else None
        for name, (user, wall) in results:
            vs_te = f"{te['seconds_walk'] * n / te['events'] / user:7.1f}x" if te else ""
            vs_base = f"{base_user / user:8.2f}x" if base else ""
            print(f"{label:<34}{name:<7}{user:8.2f}{wall:8.2f}{n / user / 1e6:8.1f}"
                  f"{size / user:8.0f}{vs_te:>8}{vs_base:>9}")
PY
