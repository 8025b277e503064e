#!/bin/bash
# The CPU cost of `clrspy metrics`' sampling: samples a process (default: a `sleep` started
# here) every second for N seconds (default 60) and prints clrspy's own CPU time, which the
# command measures with getrusage and says on stderr at the end.
# Usage: bench/metrics_cost.sh [SECONDS] [PID]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
bin=target/release/clrspy
[ -x "$bin" ] || bin=target/debug/clrspy
if [ -n "${2:-}" ]; then pid=$2; else sleep $((secs + 30)) & pid=$!; fi
"$bin" metrics -p "$pid" --interval 1s --duration "${secs}s" -o /dev/null
[ -n "${2:-}" ] || kill "$pid"
