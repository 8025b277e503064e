#!/usr/bin/env python3
"""A paced HTTP/1.1 loader for `clrspy agent` (keep-alive connections, asyncio), used by
bench/agent_load.sh.

Phase 1: RATE requests/s of `/processes` for SECONDS (open loop: request i is due at
start + i/RATE; a worker takes the next due request, waits for its time, sends it; latency is
counted from the due time, so a stalled agent shows in the percentiles). Phase 2: MIXED
requests (`/health`, `/processes`, `/processes/{pid}`, `/metrics`, a bad key 401, traversal-like
parameters 400, unknown pids and routes 404), each checked for its expected status, with the
agent's RSS read after every 1,000. Prints a table; exits 1 on any error or unexpected status.
"""

import argparse
import asyncio
import itertools
import sys
import time


def rss(pid):
    """VmRSS, VmHWM, RssAnon (kB) and Threads of pid."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "Threads"):
                out[k] = int(v.split()[0])
    return out


def fmt_rss(r):
    return (f"VmRSS {r['VmRSS'] / 1024:.1f} MB, VmHWM {r['VmHWM'] / 1024:.1f} MB, "
            f"RssAnon {r['RssAnon'] / 1024:.1f} MB, {r['Threads']} threads")


class Conn:
    """One keep-alive connection, reopened when the agent closes it."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.r = self.w = None

    async def get(self, path, key):
        for attempt in (0, 1):
            if self.w is None:
                self.r, self.w = await asyncio.open_connection(self.host, self.port)
            head = f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            if key is not None:
                head += f"Authorization: Bearer {key}\r\n"
            self.w.write((head + "\r\n").encode())
            try:
                await self.w.drain()
                return await self.read()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
        raise ConnectionError("unreachable")

    async def read(self):
        status_line = await self.r.readuntil(b"\r\n")
        status = int(status_line.split()[1])
        length, chunked, close = 0, False, False
        while True:
            line = await self.r.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            k, _, v = line.decode("latin-1").partition(":")
            k, v = k.strip().lower(), v.strip().lower()
            if k == "content-length":
                length = int(v)
            elif k == "transfer-encoding" and "chunked" in v:
                chunked = True
            elif k == "connection" and v == "close":
                close = True
        body = b""
        if chunked:
            while True:
                size = int((await self.r.readuntil(b"\r\n")).strip(), 16)
                body += await self.r.readexactly(size + 2)
                if size == 0:
                    break
        elif length:
            body = await self.r.readexactly(length)
        if close:
            self.close()
        return status, body

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


def pct(sorted_ms, p):
    if not sorted_ms:
        return float("nan")
    i = min(len(sorted_ms) - 1, int(round(p / 100 * (len(sorted_ms) - 1))))
    return sorted_ms[i]


async def paced(host, port, key, rate, seconds, workers):
    total = int(rate * seconds)
    counter = itertools.count()
    lat, errors, statuses = [], [], {}
    start = time.monotonic() + 0.2

    async def worker():
        c = Conn(host, port)
        while True:
            i = next(counter)
            if i >= total:
                break
            due = start + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                status, _ = await c.get("/processes", key)
                statuses[status] = statuses.get(status, 0) + 1
                if status != 200:
                    errors.append(f"/processes: {status}")
            except Exception as e:  # noqa: BLE001 - every failure is counted
                errors.append(f"/processes: {e!r}")
                c.close()
            lat.append((time.monotonic() - due) * 1000)
        c.close()

    await asyncio.gather(*(worker() for _ in range(workers)))
    took = time.monotonic() - start
    lat.sort()
    return total, took, lat, errors, statuses


def mixed_plan(pids):
    """(path, key-or-None-or-'bad', expected status), cycled."""
    plan = [
        ("/health", None, 200),
        ("/processes", "good", 200),
        ("/metrics", "good", 200),
        ("/processes", "bad", 401),
        ("/processes", None, 401),
        ("/processes/..%2F..%2Fetc%2Fpasswd", "good", 400),
        ("/processes?pid=../1", "good", 400),
        ("/debug/pprof/profile?name=../../etc/passwd", "good", 400),
        ("/processes/4194304", "good", 404),
        ("/no-such-route", "good", 404),
    ]
    for p in pids:
        plan.append((f"/processes/{p}", "good", 200))
    return plan


async def mixed(host, port, key, count, pids, agent_pid, workers):
    plan = mixed_plan(pids)
    counter = itertools.count()
    errors, per_k = [], []
    lat = []
    done = [0]
    keys = {"good": key, "bad": "not-a-key", None: None}

    async def worker():
        c = Conn(host, port)
        while True:
            i = next(counter)
            if i >= count:
                break
            path, which, want = plan[i % len(plan)]
            t = time.monotonic()
            try:
                status, body = await c.get(path, keys[which])
                # A busy process listing (429) is the agent keeping its limit, not an error,
                # but the bench counts it: the limits are sized for this load.
                if status != want:
                    errors.append(f"{path}: {status} (wanted {want}) {body[:120]!r}")
            except Exception as e:  # noqa: BLE001
                errors.append(f"{path}: {e!r}")
                c.close()
            lat.append((time.monotonic() - t) * 1000)
            done[0] += 1
            if done[0] % 1000 == 0:
                per_k.append((done[0], rss(agent_pid)))
        c.close()

    await asyncio.gather(*(worker() for _ in range(workers)))
    lat.sort()
    return lat, errors, per_k


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", required=True, help="http://127.0.0.1:PORT")
    ap.add_argument("--key", required=True)
    ap.add_argument("--agent-pid", type=int, required=True)
    ap.add_argument("--pids", default="", help="the .NET pids, comma-separated")
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--mixed", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--mixed-workers", type=int, default=4)
    a = ap.parse_args()
    hostport = a.base.split("://", 1)[1].rstrip("/")
    host, port = hostport.rsplit(":", 1)
    port = int(port)
    pids = [int(p) for p in a.pids.split(",") if p]

    before = rss(a.agent_pid)
    print(f"agent before:          {fmt_rss(before)}")
    failed = False
    if a.seconds > 0:
        total, took, lat, errors, statuses = asyncio.run(
            paced(host, port, a.key, a.rate, a.seconds, a.workers))
        after = rss(a.agent_pid)
        print(f"/processes paced:      {total} requests in {took:.1f} s = {total / took:.0f} req/s "
              f"(asked {a.rate:.0f}/s, {a.workers} connections); statuses {statuses}")
        print(f"  latency from due time: p50 {pct(lat, 50):.2f} ms, p90 {pct(lat, 90):.2f} ms, "
              f"p99 {pct(lat, 99):.2f} ms, max {lat[-1]:.2f} ms; errors {len(errors)}")
        print(f"agent after paced:     {fmt_rss(after)}")
        for e in errors[:5]:
            print(f"  error: {e}")
        failed |= bool(errors)
    if a.mixed > 0:
        lat, errors, per_k = asyncio.run(
            mixed(host, port, a.key, a.mixed, pids, a.agent_pid, a.mixed_workers))
        print(f"mixed:                 {a.mixed} requests ({a.mixed_workers} connections), "
              f"p50 {pct(lat, 50):.2f} ms, p99 {pct(lat, 99):.2f} ms, max {lat[-1]:.2f} ms; "
              f"unexpected {len(errors)}")
        print("  after   VmRSS MB  VmHWM MB  RssAnon MB  threads")
        for n, r in per_k:
            print(f"  {n:6d}  {r['VmRSS'] / 1024:8.1f}  {r['VmHWM'] / 1024:8.1f}  "
                  f"{r['RssAnon'] / 1024:10.1f}  {r['Threads']:7d}")
        for e in errors[:5]:
            print(f"  unexpected: {e}")
        failed |= bool(errors)
        if per_k:
            first, last = per_k[0][1], per_k[-1][1]
            print(f"  VmRSS after 1,000: {first['VmRSS'] / 1024:.1f} MB, after {per_k[-1][0]}: "
                  f"{last['VmRSS'] / 1024:.1f} MB (growth {(last['VmRSS'] - first['VmRSS']) / 1024:+.1f} MB)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
