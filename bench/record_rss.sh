#!/usr/bin/env bash
# The recorder's own memory: peak RSS (/usr/bin/time %M) of `clrspy record -p PID --duration 20s`
# on testapps/WebApp under `ab -c 8 -t 25` load (loopback), with the given extra record args.
#
#   bench/record_rss.sh [RECORD ARGS...]          e.g. bench/record_rss.sh --profile gc-verbose
#
# Needs cargo, dotnet, ab; builds clrspy (release) and the WebApp when missing. CLRSPY=another
# build to compare.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
clrspy=${CLRSPY:-$root/target/release/clrspy}
app=$root/target/testapps/WebApp/WebApp.dll
[ -n "${CLRSPY:-}" ] || (cd "$root" && cargo build -q --release --locked -p clrspy)
[ -f "$app" ] || dotnet build "$root/testapps/WebApp" -c Release --nologo -v q -o "$(dirname "$app")" >&2
d=$(mktemp -d)
dotnet "$app" > "$d/w.out" & wpid=$!
cleanup() { kill "$wpid" 2>/dev/null || true; rm -rf "$d"; }
trap cleanup EXIT
for _ in $(seq 300); do grep -q 'ready pid=' "$d/w.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*port=\([0-9]*\).*/\1/p' "$d/w.out")
pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$d/w.out")
ab -q -c 8 -t 25 -n 100000000 "http://127.0.0.1:$port/" > /dev/null 2>&1 & abpid=$!
sleep 1
/usr/bin/time -f %M -o "$d/rss" "$clrspy" record -p "$pid" --duration 20s -o "$d/t.nettrace" "$@" > /dev/null 2>&1
wait "$abpid" || true
echo "peak RSS $(( $(cat "$d/rss") / 1024 )) MB ($(cat "$d/rss") KB), trace $(stat -c %s "$d/t.nettrace") bytes"
