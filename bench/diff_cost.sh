#!/bin/bash
# The cost of `clrspy diff A B` beside one `clrspy report` of each trace, in one run: wall time
# and peak RSS of each (GNU time), then the ratios diff / (report A + report B) in time and
# diff / the larger report in memory. Without arguments, two recordings of the Workloads
# `bigtrace` scenario (make them as bench/big_trace.py says, ~450 MB each).
# Usage: bench/diff_cost.sh [A.nettrace B.nettrace]
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:-bench/out/traces/big.nettrace}
b=${2:-bench/out/traces/big2.nettrace}
bin=target/release/clrspy
[ -x "$bin" ] || { echo "build it first: cargo build --release -p clrspy" >&2; exit 2; }
measure() { # prints "seconds max_rss_kb"
    /usr/bin/time -f "%e %M" -o /tmp/diff_cost.$$ "$@" > /dev/null 2>&1
    cat /tmp/diff_cost.$$
}
read -r ta ma < <(measure "$bin" report "$a")
read -r tb mb < <(measure "$bin" report "$b")
read -r td md < <(measure "$bin" diff "$a" "$b")
rm -f /tmp/diff_cost.$$
sa=$(stat -c %s "$a"); sb=$(stat -c %s "$b")
printf '| command | input | wall s | peak RSS MB |\n|---|---|---|---|\n'
printf '| report A | %d MB | %s | %d |\n' $((sa / 1048576)) "$ta" $((ma / 1024))
printf '| report B | %d MB | %s | %d |\n' $((sb / 1048576)) "$tb" $((mb / 1024))
printf '| diff A B | both | %s | %d |\n' "$td" $((md / 1024))
python3 -c "
ta,tb,td,ma,mb,md=$ta,$tb,$td,$ma,$mb,$md
print(f'diff / (report A + report B): time {td/(ta+tb):.2f}x, memory (vs the larger report) {md/max(ma,mb):.2f}x')"
