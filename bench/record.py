#!/usr/bin/env python3
"""clrspy's live-process side against Microsoft's dotnet-trace, in one run.

    python3 bench/record.py [--seconds 30] [--runs 2] [--no-build] [--clrspy-arg=--no-thread-cpu]

1. `ps`: with four idle .NET workloads alive, `clrspy ps` and `dotnet-trace ps` five times each;
   median wall time.
2. Recording: a fresh `cpu` workload per run, recorded for --seconds with the same providers by
   `clrspy record` and `dotnet-trace collect`, one tool at a time, alternating, --runs times each.
   For the recorder process: wall time, CPU (user+sys, wait4) as % of one core, peak RSS (GNU
   /usr/bin/time's %M; without it wait4's ru_maxrss, which also counts the forking Python's pages
   and is only an upper bound), trace size and bytes/s, events and events/s (`clrspy info
   --json`), events the runtime dropped (sequence-number gaps, from clrspy info and from
   TraceEvent), and the target's own CPU while recorded (from /proc/PID/stat).
3. Reading each other's files: `clrspy info` on dotnet-trace's traces (complete: no error, not
   truncated, every byte read) and TraceEvent (bench/TraceEventHarness `counts`) on clrspy's
   (same total and same count per provider/event id/version as clrspy info).

Prints a markdown table (metric | clrspy | dotnet-trace | ratio clrspy / dotnet-trace) and writes
bench/out/record.json; traces and tool logs go to bench/out/record/.
Needs cargo and the .NET SDK 10; dotnet-trace is installed into bench/out/tools when missing, the
TraceEvent harness is built into bench/out/harness when missing. Standard library only.
"""
import argparse
import fcntl
import json
import os
import re
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "bench/out/record")
JSON_OUT = os.path.join(ROOT, "bench/out/record.json")
CLRSPY = os.path.join(ROOT, "target/release/clrspy")
TOOLS = os.path.join(ROOT, "bench/out/tools")
DT = os.path.join(TOOLS, "dotnet-trace")
WL_DIR = os.path.join(ROOT, "target/testapps/Workloads")  # the live tests' build (tests/common)
WL = os.path.join(WL_DIR, "Workloads.dll")
HARNESS = os.path.join(ROOT, "bench/out/harness/TraceEventHarness.dll")
GNU_TIME = "/usr/bin/time"
PROVIDERS = "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4"
# Providers a trace holds besides the enabled ones: EventPipe's own ProcessInfo event, the
# runtime's rundown at the end, and clrspy's thread CPU readings.
EXPECTED_EXTRA = {"Microsoft-DotNETCore-EventPipe", "Microsoft-Windows-DotNETRuntimeRundown"}
CLRSPY_OWN = "clrspy"
# TraceEvent re-dispatches the runtime's GC dynamic events (id 39) under its own id 65524.
TE_ALIASES = {("Microsoft-Windows-DotNETRuntime", 65524): 39}
ENV = dict(os.environ, DOTNET_CLI_TELEMETRY_OPTOUT="1", DOTNET_NOLOGO="1")


class Failure(Exception):
    """A step that makes the benchmark meaningless: reported on stderr, exit status 1."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_step(what, cmd, **kw):
    log(f"== {what}: {' '.join(cmd)}")
    try:
        p = subprocess.run(cmd, env=ENV, **kw)
    except FileNotFoundError as e:
        raise Failure(f"{what}: {e.filename} not found (is it installed and on PATH?)")
    if p.returncode != 0:
        raise Failure(f"{what} failed with exit status {p.returncode}")
    return p


# ---------------------------------------------------------------------------------------- setup

def setup(no_build):
    os.makedirs(OUT, exist_ok=True)
    if shutil.which("dotnet") is None:
        raise Failure("`dotnet` is not on PATH: install the .NET SDK 10 (https://dot.net)")
    if not no_build or not os.path.exists(CLRSPY):
        if shutil.which("cargo") is None:
            raise Failure("`cargo` is not on PATH: install Rust (https://rustup.rs)")
        run_step("build clrspy", ["cargo", "build", "--release", "--locked", "-p", "clrspy"], cwd=ROOT)
    if not os.path.exists(CLRSPY):
        raise Failure(f"{CLRSPY} missing after the build")
    if not no_build or not os.path.exists(WL):
        # Same output directory and lock file as crates/clrspy/tests/common (cargo test may be
        # building it at the same time).
        os.makedirs(os.path.dirname(WL_DIR), exist_ok=True)
        with open(os.path.join(ROOT, "target/testapps/.build.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            run_step("build the workloads", ["dotnet", "build", "-c", "Release", "--nologo", "-v", "q",
                                             "-o", WL_DIR, os.path.join(ROOT, "testapps/Workloads")])
    if not os.path.exists(WL):
        raise Failure(f"{WL} missing after the build")
    if not os.path.exists(DT):
        run_step("install dotnet-trace", ["dotnet", "tool", "install", "--tool-path", TOOLS, "dotnet-trace"])
    if not os.path.exists(DT):
        raise Failure(f"{DT} missing after `dotnet tool install`")
    if not os.path.exists(HARNESS):
        run_step("build the TraceEvent harness",
                 ["dotnet", "build", os.path.join(ROOT, "bench/TraceEventHarness"), "-c", "Release",
                  "--nologo", "-v", "q", "-o", os.path.dirname(HARNESS)])
    if not os.path.exists(HARNESS):
        raise Failure(f"{HARNESS} missing after the build")
    versions = {}
    for name, cmd in [("clrspy", [CLRSPY, "--version"]), ("dotnet-trace", [DT, "--version"]),
                      ("dotnet", ["dotnet", "--version"])]:
        p = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
        versions[name] = (p.stdout.strip().splitlines() or ["?"])[0]
    return versions


# ------------------------------------------------------------------------------------ workloads

class Workload:
    """`dotnet Workloads.dll SCENARIO ...`, started and waited for (`ready pid=N`)."""

    def __init__(self, scenario, *args, timeout=30):
        cmd = ["dotnet", WL, scenario, *args]
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=ENV)
        sel = selectors.DefaultSelector()
        sel.register(self.p.stdout, selectors.EVENT_READ)
        ok = sel.select(timeout)
        sel.close()
        line = self.p.stdout.readline().decode(errors="replace") if ok else ""
        if not line.startswith("ready pid="):
            self.kill()
            err = self.p.stderr.read().decode(errors="replace").strip()[-500:]
            raise Failure(f"workload `{scenario}` did not start (first line {line!r}, exit "
                          f"{self.p.returncode}, stderr {err!r})")
        self.pid = int(line.split("=", 1)[1])

    def alive(self):
        return self.p.poll() is None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def machine_busy_s():
    """CPU seconds all processes on this machine have used (all cores, /proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """User+system CPU seconds of a live process so far, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# ----------------------------------------------------------------------------------- measuring

def measured(cmd, stdout_path=None, log_path=None, timeout=None, rss=True):
    """Runs cmd; returns dict(wall_s, cpu_s, peak_rss_mb, rss_exact, exit, timed_out).

    CPU comes from wait4 (µs resolution; with GNU time in between it includes time's own
    ~1 ms). Peak RSS from GNU time's %M: its child is forked from the small `time` process,
    whereas a child forked from this Python starts with Python's pages counted in ru_maxrss.
    rss=False runs cmd directly (no `time`: nothing added to the wall time)."""
    tf = None
    full = cmd
    if rss and os.access(GNU_TIME, os.X_OK):
        tf = tempfile.NamedTemporaryFile(prefix="time.", dir=OUT, delete=False)
        tf.close()
        full = [GNU_TIME, "-f", "%M", "-o", tf.name, *cmd]
    so = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    if log_path and log_path == stdout_path:
        se = subprocess.STDOUT
    else:
        se = open(log_path, "wb") if log_path else subprocess.DEVNULL
    timed_out = []
    try:
        t0 = time.monotonic()
        p = subprocess.Popen(full, stdout=so, stderr=se, stdin=subprocess.DEVNULL, env=ENV,
                             start_new_session=True)

        def kill():
            timed_out.append(True)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        except BaseException:  # Ctrl+C: the recorder runs in its own session, stop it too
            kill()
            os.wait4(p.pid, 0)
            if tf:
                os.unlink(tf.name)
            raise
        finally:
            if timer:
                timer.cancel()
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for f in (so, se):
            if f not in (subprocess.DEVNULL, subprocess.STDOUT):
                f.close()
    res = {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
           "peak_rss_mb": ru.ru_maxrss / 1024.0, "rss_exact": False, "exit": p.returncode,
           "timed_out": bool(timed_out)}
    if tf:
        try:
            with open(tf.name) as f:
                lines = [l for l in f.read().splitlines() if l.strip()]
            res["peak_rss_mb"] = int(lines[-1]) / 1024.0
            res["rss_exact"] = True
        except (OSError, IndexError, ValueError):
            pass
        os.unlink(tf.name)
    return res


def bench_ps(nprocs, reps):
    procs = []
    try:
        for _ in range(nprocs):
            procs.append(Workload("idle", "--seconds", "120"))
        time.sleep(0.5)
        res = {"workloads": nprocs, "repetitions": reps}
        for name, cmd in [("clrspy", [CLRSPY, "ps"]), ("dotnet-trace", [DT, "ps"])]:
            walls, exits = [], []
            listing = os.path.join(OUT, f"ps_{name}.txt")
            for _ in range(reps):
                m = measured(cmd, stdout_path=listing, log_path=listing + ".err", timeout=60, rss=False)
                walls.append(m["wall_s"])
                exits.append(m["exit"])
            with open(listing, errors="replace") as f:
                text = f.read()
            seen = [w.pid for w in procs if re.search(rf"\b{w.pid}\b", text)]
            res[name] = {"walls_s": walls, "median_s": statistics.median(walls), "exits": exits,
                         "workloads_listed": len(seen)}
            if any(exits) or len(seen) != nprocs:
                log(f"warning: `{name} ps` exit statuses {exits}, listed {len(seen)} of the "
                    f"{nprocs} workloads (see {listing})")
        return res
    finally:
        for w in procs:
            w.kill()


def clrspy_info(path):
    p = subprocess.run([CLRSPY, "info", path, "--json"], capture_output=True, text=True)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": f"clrspy info exit {p.returncode}: {p.stderr.strip()[-300:]}"}


def te_counts(path):
    p = subprocess.run(["dotnet", HARNESS, "counts", path], capture_output=True, text=True, env=ENV)
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"error": f"harness exit {p.returncode}: {p.stderr.strip()[-300:]}"}


def per_event(entries, aliases=None):
    counts = defaultdict(int)
    for e in entries or []:
        eid = (aliases or {}).get((e["provider"], e["event_id"]), e["event_id"])
        counts[(e["provider"], eid, e["version"])] += e["count"]
    return counts


def reported_loss(log_path):
    """The recorder's own lines mentioning lost/dropped events (last one)."""
    try:
        with open(log_path, errors="replace") as f:
            text = f.read().replace("\r", "\n")
    except OSError:
        return None
    hits = [l.strip() for l in text.splitlines()
            if any(k in l.lower() for k in ("lost", "dropped", "drop "))]
    return hits[-1] if hits else None


def dt_duration(seconds):
    d, rem = divmod(int(seconds), 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"{d:02d}:{h:02d}:{m:02d}:{s:02d}"


def record_once(tool, idx, seconds, clrspy_args, settle):
    out = os.path.join(OUT, f"{tool}-{idx}.nettrace")
    logp = os.path.join(OUT, f"{tool}-{idx}.log")
    if os.path.exists(out):
        os.remove(out)
    w = Workload("cpu", "--seconds", str(seconds + settle + 15))
    try:
        # Let the target's startup JIT and tiering settle: a session opened within ~0.1 s of
        # `ready` makes the target tier up ~30 fewer methods (fewer BackgroundJit and rundown
        # events) than one opened later, which would favour the quicker-starting tool.
        time.sleep(settle)
        if tool == "clrspy":
            cmd = [CLRSPY, "record", "-p", str(w.pid), "--providers", PROVIDERS,
                   "--duration", f"{seconds}s", "-o", out, *clrspy_args]
        else:
            cmd = [DT, "collect", "-p", str(w.pid), "--providers", PROVIDERS,
                   "--duration", dt_duration(seconds), "-o", out]
        log(f"-- {tool} run {idx}: recording pid {w.pid} for {seconds} s")
        target0, busy0 = proc_cpu_s(w.pid), machine_busy_s()
        m = measured(cmd, stdout_path=logp, log_path=logp, timeout=seconds + 90)
        target1, busy1 = proc_cpu_s(w.pid), machine_busy_s()
        target_alive = w.alive()
    finally:
        w.kill()
    m["cmd"] = cmd
    m["log"] = os.path.relpath(logp, ROOT)
    m["trace"] = os.path.relpath(out, ROOT)
    m["cpu_pct_of_core"] = 100 * m["cpu_s"] / m["wall_s"]
    m["target_alive_at_end"] = target_alive
    m["target_cpu_pct_of_core"] = (100 * (target1 - target0) / m["wall_s"]
                                   if target0 is not None and target1 is not None else None)
    if m["target_cpu_pct_of_core"] is not None:
        m["other_cpu_pct_of_core"] = (100 * (busy1 - busy0) / m["wall_s"] - m["target_cpu_pct_of_core"]
                                      - m["cpu_pct_of_core"])
    m["reported_loss"] = reported_loss(logp)
    size = os.path.getsize(out) if os.path.exists(out) else 0
    m["bytes"] = size
    m["bytes_per_s"] = size / seconds
    if m["exit"] != 0 or not size:
        log(f"warning: {tool} exited with {m['exit']}, trace {size} bytes (see {logp})")
    if not size:
        return m
    info = clrspy_info(out)
    te = te_counts(out)
    providers = {p["provider"]: p["count"] for p in info.get("per_provider") or []}
    events = info.get("events")
    own = providers.get(CLRSPY_OWN, 0)
    ours = per_event(info.get("per_event"))
    theirs = per_event(te.get("per_event"), TE_ALIASES)
    diff = {f"{k[0]}/{k[1]}/v{k[2]}": [ours.get(k, 0), theirs.get(k, 0)]
            for k in sorted(set(ours) | set(theirs)) if ours.get(k, 0) != theirs.get(k, 0)}
    m.update({
        "events": events,
        "events_per_s": (events or 0) / seconds,
        "runtime_events": (events or 0) - own,  # without clrspy's own thread CPU readings
        "runtime_events_per_s": ((events or 0) - own) / seconds,
        "per_provider": providers,
        "samples_per_s": sum(e["count"] for e in info.get("per_event") or []
                             if e["provider"] == "Microsoft-DotNETCore-SampleProfiler") / seconds,
        "duration_s": (info.get("duration_ns") or 0) / 1e9,
        "dropped_events": info.get("dropped_events"),
        "clrspy_info": {k: info.get(k) for k in ("format", "format_version", "truncated", "ended_cleanly",
                                                  "bytes_read", "bytes_total", "error", "events")},
        "clrspy_info_complete": (info.get("error") is None and info.get("truncated") is False
                                 and info.get("bytes_read") == info.get("bytes_total") == size),
        "traceevent": {k: te.get(k) for k in ("events", "lost_events", "format_version", "error")},
        "traceevent_per_event_diff": diff,
        "traceevent_agrees": (te.get("error") is None and te.get("events") == events and not diff),
    })
    return m


# ------------------------------------------------------------------------------------- reporting

def fmt_runs(runs, key, fmt, best=None):
    vals = [r.get(key) for r in runs]
    if not vals or any(v is None for v in vals):
        return "-"
    both = " / ".join(fmt.format(v) for v in vals)
    if best is None or len(vals) == 1:
        return both
    return f"{fmt.format(best(vals))} ({both})"


def agg(runs, key, best):
    vals = [r.get(key) for r in runs]
    if not vals or any(not isinstance(v, (int, float)) for v in vals):
        return None
    return best(vals) if best else statistics.mean(vals)


def ratio(a, b):
    return f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "-"


def table(res, seconds):
    c, d = res["runs"]["clrspy"], res["runs"]["dotnet-trace"]
    ps = res.get("ps") or {}
    exact = all(r.get("rss_exact") for r in c + d)
    rows = []
    if ps:
        pc, pd = ps["clrspy"], ps["dotnet-trace"]
        rows.append((f"`ps` wall time, {ps['workloads']} idle workloads alive (median of {ps['repetitions']})",
                     f"{pc['median_s'] * 1000:.0f} ms", f"{pd['median_s'] * 1000:.0f} ms",
                     ratio(pc["median_s"], pd["median_s"])))
        rows.append(("`ps`: workloads listed", f"{pc['workloads_listed']}/{ps['workloads']}",
                     f"{pd['workloads_listed']}/{ps['workloads']}", ""))
    mean = statistics.mean
    for key, label, f, best in [
        ("wall_s", "recorder wall time", "{:.2f} s", min),
        ("cpu_s", "recorder CPU (user+sys)", "{:.3f} s", min),
        ("cpu_pct_of_core", "recorder CPU, % of one core", "{:.2f}%", min),
        ("peak_rss_mb", "recorder peak RSS" + ("" if exact else " (upper bound)"), "{:.1f} MB", min),
        ("target_cpu_pct_of_core", "target CPU while recorded, % of one core", "{:.1f}%", None),
        ("other_cpu_pct_of_core", "other processes' CPU meanwhile, % of one core", "{:.1f}%", None),
        ("bytes", "trace size", "{:,}", None),
        ("bytes_per_s", f"trace bytes/s (size / {seconds} s)", "{:,.0f}", None),
        ("events", "events (clrspy info)", "{:,}", None),
        ("events_per_s", "events/s", "{:,.0f}", None),
        ("runtime_events_per_s", "events/s without clrspy's thread CPU readings", "{:,.0f}", None),
        ("samples_per_s", "of which Thread/Sample events/s (the target's sampler)", "{:,.0f}", None),
        ("dropped_events", "events dropped (sequence gaps, clrspy info)", "{}", None),
    ]:
        a, b = agg(c, key, best), agg(d, key, best)
        rows.append((label + (", best (both runs)" if best else ""), fmt_runs(c, key, f, best),
                     fmt_runs(d, key, f, best), ratio(a, b)))
    lost = lambda runs: " / ".join(str((r.get("traceevent") or {}).get("lost_events")) for r in runs)
    rows.append(("events lost (TraceEvent)", lost(c), lost(d), ""))
    rep = lambda runs: " / ".join(r.get("reported_loss") or "none" for r in runs)
    rows.append(("loss the recorder itself reported", rep(c), rep(d), ""))
    comp = lambda runs: " / ".join("yes" if r.get("clrspy_info_complete") else "NO" for r in runs)
    rows.append(("`clrspy info` reads the file completely", comp(c), comp(d), ""))
    agree = lambda runs: " / ".join(
        ("yes" if r.get("traceevent_agrees") else
         f"NO ({(r.get('traceevent') or {}).get('events')} events, "
         f"{len(r.get('traceevent_per_event_diff') or {})} kinds differ)") for r in runs)
    rows.append(("TraceEvent: same events as clrspy info, per kind", agree(c), agree(d), ""))
    lines = [f"| metric ({seconds} s, cpu workload, same providers) | clrspy | dotnet-trace | ratio clrspy / dotnet-trace |",
             "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c_} | {r} |" for a, b, c_, r in rows]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=30, help="recording length (default 30)")
    ap.add_argument("--runs", type=int, default=2, help="recordings per tool (default 2)")
    ap.add_argument("--ps-procs", type=int, default=4)
    ap.add_argument("--ps-reps", type=int, default=5)
    ap.add_argument("--no-build", action="store_true", help="use the existing builds when present")
    ap.add_argument("--skip-ps", action="store_true")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds between the workload's `ready` and the recording (default 2)")
    ap.add_argument("--clrspy-arg", action="append", default=[],
                    help="extra argument for clrspy record (repeatable), e.g. --clrspy-arg=--no-thread-cpu")
    a = ap.parse_args()
    t_start = time.monotonic()
    res = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(),
           "seconds": a.seconds, "settle_s": a.settle, "providers": PROVIDERS,
           "clrspy_args": a.clrspy_arg, "runs": {"clrspy": [], "dotnet-trace": []}}
    try:
        res["versions"] = setup(a.no_build)
        log(f"versions: {res['versions']}")
        b0 = machine_busy_s()
        time.sleep(1)
        res["busy_cores_before"] = machine_busy_s() - b0
        if res["busy_cores_before"] > 0.2:
            log(f"note: {res['busy_cores_before']:.2f} cores busy before measuring; other work on "
                f"this machine will show in the figures")
        if not a.skip_ps:
            log(f"== ps: {a.ps_procs} idle workloads, {a.ps_reps} runs each")
            res["ps"] = bench_ps(a.ps_procs, a.ps_reps)
        log(f"== recording: {a.runs} x {a.seconds} s per tool, alternating")
        for i in range(1, a.runs + 1):
            for tool in ("clrspy", "dotnet-trace"):
                res["runs"][tool].append(record_once(tool, i, a.seconds, a.clrspy_arg, a.settle))
    except Failure as e:
        log(f"error: {e}")
        res["error"] = str(e)
        with open(JSON_OUT, "w") as f:
            json.dump(res, f, indent=2)
        return 1
    except KeyboardInterrupt:
        log("interrupted")
        return 130
    res["total_s"] = time.monotonic() - t_start
    # Do both traces hold the same providers (the check that dotnet-trace added no profile)?
    provs = {t: sorted({p for r in runs for p in (r.get("per_provider") or {})} - {CLRSPY_OWN})
             for t, runs in res["runs"].items()}
    res["same_providers"] = provs["clrspy"] == provs["dotnet-trace"]
    res["providers_seen"] = provs
    with open(JSON_OUT, "w") as f:
        json.dump(res, f, indent=2)
    print(table(res, a.seconds))
    print(f"\nclrspy {res['versions'].get('clrspy')}, dotnet-trace {res['versions'].get('dotnet-trace')}, "
          f"{res['cpus']} CPUs, {res['busy_cores_before']:.2f} cores busy before measuring, "
          f"{res['total_s']:.0f} s in all; raw figures in {os.path.relpath(JSON_OUT, ROOT)}")
    if not res["same_providers"]:
        print(f"warning: the traces hold different providers: {provs}")
    bad = [f"{t} run {i + 1}" for t, runs in res["runs"].items() for i, r in enumerate(runs)
           if r.get("exit") != 0 or not r.get("bytes") or not r.get("target_alive_at_end")]
    if bad:
        print(f"warning: failed or cut-short recordings: {', '.join(bad)} (see bench/out/record/*.log)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
