#!/bin/bash
# What the kernel sampler costs a thread at each context switch: bench/pingpong.c (two threads
# handing a byte back and forth through pipes, pinned to one CPU: two switches per round trip)
# runs alone, then sampled by the kernel sampler without and with waits, in interleaved phases;
# prints the median round trips per second of each phase, and its share of the bare rate.
#
#   bash bench/switch_cost.sh [SECONDS_PER_PHASE] [ROUNDS]
#
# Needs gcc, taskset, 2 CPUs (the program on CPU 1, the sampler on CPU 0), and root for the
# per-CPU events (else each thread gets its own, as for any user). SAMPLE_PID=path compares
# another build's `sample_pid` example. Standard tools only; bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
ROUNDS=${2:-2}
OUT=bench/out/switch
mkdir -p "$OUT"
gcc -O2 -fno-omit-frame-pointer -pthread -o "$OUT/pingpong" bench/pingpong.c
if [ -z "${SAMPLE_PID:-}" ]; then
  cargo build --release -q -p clrspy-sampler --example sample_pid
  SAMPLE_PID=target/release/examples/sample_pid
fi
PHASES=(bare samples samples+waits)
TOTAL=$(( (SECS + 1) * ${#PHASES[@]} * ROUNDS + 4 ))
taskset -c 1 "$OUT/pingpong" "$TOTAL" > "$OUT/rates.txt" &
PP=$!
trap 'kill $PP 2>/dev/null || true' EXIT
sleep 2
: > "$OUT/phases.txt"
for r in $(seq "$ROUNDS"); do
  for p in "${PHASES[@]}"; do
    start=$(wc -l < "$OUT/rates.txt")
    case $p in
      bare) sleep "$SECS" ;;
      samples) taskset -c 0 "$SAMPLE_PID" "$PP" "$SECS" nowaits > "$OUT/$p.$r.txt" ;;
      samples+waits) taskset -c 0 "$SAMPLE_PID" "$PP" "$SECS" waits > "$OUT/$p.$r.txt" ;;
    esac
    echo "$p $start $(wc -l < "$OUT/rates.txt")" >> "$OUT/phases.txt"
  done
done
kill $PP 2>/dev/null || true
python3 - "$OUT" <<'PY'
import statistics, sys
out = sys.argv[1]
rates = [float(x) for x in open(f"{out}/rates.txt").read().split()]
per = {}
for line in open(f"{out}/phases.txt"):
    name, a, b = line.split()
    # Drop each phase's first second: the sampler was opening.
    per.setdefault(name, []).extend(rates[int(a) + 1:int(b)])
bare = statistics.median(per["bare"])
print("| phase | round trips/s (median) | of bare |")
print("|---|---|---|")
for name, v in per.items():
    m = statistics.median(v) if v else 0
    print(f"| {name} | {m:.0f} | {100 * m / bare:.0f}% |")
PY
