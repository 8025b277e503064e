#!/usr/bin/env bash
# `clrspy report requests` on a long recording: testapps/WebApp under `ab -k` load (N requests,
# default 1,000,000, on GET /) while `clrspy record --profile aspnet -p PID` records; then the
# report's time and peak RSS (/usr/bin/time -v) with --requests-jsonl, and the rows it wrote.
#
#   bench/requests.sh [N] [CONCURRENCY]      (release build of clrspy; writes under bench/out/)
#   SKIP_RECORD=1 bench/requests.sh           (the report again on the last recording)
#
# The recording, the trace and the rows stay in bench/out/requests/ for a second look.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
C=${2:-16}
OUT=bench/out/requests
mkdir -p "$OUT"
# CLRSPY=path: another build (the recorder and the report); default the release build.
CLRSPY=${CLRSPY:-target/release/clrspy}
[ -x "$CLRSPY" ] || cargo build --release -p clrspy
REPORT=${REPORT:-$CLRSPY}
if [ "${SKIP_RECORD:-}" != 1 ]; then
dotnet build -c Release --nologo -v q -o target/testapps/WebApp testapps/WebApp >/dev/null

dotnet target/testapps/WebApp/WebApp.dll >"$OUT/web.out" &
WEB=$!
trap 'kill $WEB 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '^ready' "$OUT/web.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' "$OUT/web.out")
PID=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$OUT/web.out")
ab -q -k -n 2000 -c 4 "http://127.0.0.1:$PORT/" >/dev/null

rm -f "$OUT/web.nettrace"
"$CLRSPY" record -p "$PID" --profile aspnet --buffer-size 1GB -o "$OUT/web.nettrace" 2>"$OUT/record.log" &
REC=$!
for _ in $(seq 100); do grep -q '^Recording' "$OUT/record.log" 2>/dev/null && break; sleep 0.1; done
START=$(date +%s.%N)
ab -q -k -n "$N" -c "$C" "http://127.0.0.1:$PORT/" >"$OUT/ab.txt"
END=$(date +%s.%N)
sleep 1
kill -INT "$REC"
wait "$REC" || true
cat "$OUT/record.log"
grep -E '^(Complete|Failed|Requests per second)' "$OUT/ab.txt"
echo "load: $(echo "$END - $START" | bc) s; trace: $(du -h "$OUT/web.nettrace" | cut -f1)"
kill $WEB 2>/dev/null || true
fi

/usr/bin/time -v "$REPORT" report "$OUT/web.nettrace" requests --json \
  --requests-jsonl "$OUT/rows.jsonl" >"$OUT/report.json" 2>"$OUT/time.txt" || { cat "$OUT/time.txt"; exit 1; }
grep -E 'Elapsed|Maximum resident' "$OUT/time.txt"
echo "rows: $(wc -l <"$OUT/rows.jsonl")"
python3 - "$OUT/report.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print({k: r[k] for k in ("started", "finished", "in_flight", "finished_unstarted", "with_status", "with_route")})
for x in r["routes"]:
    print(x["method"], x["route"], x["count"], x["statuses"], "p50", x["p50_ms"], "p99", x["p99_ms"], "max", x["max_ms"])
EOF
