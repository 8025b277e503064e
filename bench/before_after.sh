#!/usr/bin/env bash
# Two clrspy builds side by side on one trace, in one run: the reader (`info`), the reports and
# every conversion, each run alternately with both builds (best of RUNS), with wall time and peak
# RSS from GNU time, and the ratio after/before. For checking that a refactoring kept the speed.
#
#   bench/before_after.sh BEFORE_CLRSPY [TRACE]
#
# BEFORE_CLRSPY is a release binary of the older commit (e.g. from `git worktree add ../before
# <commit> && cargo build --release -p clrspy` there); the "after" binary is this checkout's
# target/release/clrspy (built here). TRACE defaults to bench/out/traces/big.nettrace (see
# bench/reader.sh for how it is recorded). RUNS (default 3) sets the number of runs per build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?usage: bench/before_after.sh BEFORE_CLRSPY [TRACE]}
trace=${2:-$root/bench/out/traces/big.nettrace}
runs=${RUNS:-3}
after=$root/target/release/clrspy
(cd "$root" && cargo build -q --release --locked -p clrspy)
[ -f "$trace" ] || { echo "no trace at $trace (bench/reader.sh records one)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat "$trace" > /dev/null

cases=(
    "info|info TRACE"
    "report cpu|report TRACE cpu"
    "report summary|report TRACE"
    "report gc|report TRACE gc --json"
    "report threads|report TRACE threads"
    "convert speedscope|convert TRACE --to speedscope -o OUT"
    "convert chromium|convert TRACE --to chromium -o OUT"
    "convert folded|convert TRACE --to folded -o OUT"
    "convert flamegraph|convert TRACE --to flamegraph -o OUT"
    "convert pprof|convert TRACE --to pprof -o OUT"
    "convert html|convert TRACE --to html -o OUT"
)

printf '| %-20s | %14s | %14s | %8s | %8s |\n' "command" "before s / MB" "after s / MB" "time ×" "RSS ×"
printf '|%s|%s|%s|%s|%s|\n' "----------------------" "----------------" "----------------" "----------" "----------"
for c in "${cases[@]}"; do
    name=${c%%|*}
    args=${c#*|}
    args=${args//TRACE/$trace}
    for build in before after; do echo "inf 0" > "$out/$build.best"; done
    for ((i = 0; i < runs; i++)); do
        for build in before after; do
            bin=$before
            [ "$build" = after ] && bin=$after
            a=${args//OUT/$out/$build.out}
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %M' -o "$out/$build.t" "$bin" $a > /dev/null 2> "$out/$build.err" || {
                echo "$build: clrspy $a failed:" >&2; cat "$out/$build.err" >&2; exit 1; }
            read -r t m < "$out/$build.t"
            read -r bt bm < "$out/$build.best"
            python3 -c "import sys; t,m,bt,bm=map(float,sys.argv[1:]); print(min(t,bt), max(m,bm))" "$t" "$m" "$bt" "$bm" > "$out/$build.best"
        done
    done
    read -r bt bm < "$out/before.best"
    read -r at am < "$out/after.best"
    python3 - "$name" "$bt" "$bm" "$at" "$am" <<'PY'
import sys
n, bt, bm, at, am = sys.argv[1], *map(float, sys.argv[2:])
print(f"| {n:<20} | {bt:6.2f} / {bm/1024:5.1f} | {at:6.2f} / {am/1024:5.1f} | {at/max(bt,1e-9):8.2f} | {am/max(bm,1):8.2f} |")
PY
done
echo
echo "trace: $trace ($(( $(stat -c %s "$trace") / 1048576 )) MB); best of $runs runs each, alternating; RSS is the largest seen"
