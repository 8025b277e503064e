#!/usr/bin/env bash
# Loads clrspy's exports in the real consumers of each format and checks what they show.
#
#   bench/views/check.sh
#
# Records the cpu and alloc workloads from their start, converts them, then:
#   speedscope  -> speedscope's own app (npm `speedscope`) in headless Chromium (puppeteer-core):
#                  the profile loads with no console error, its title and profiles are read back
#   pprof       -> decoded by the npm `pprof-format` package: sample types and top function
#   chromium    -> Perfetto/chrome://tracing JSON checked in headless Chromium (see check-chromium.mjs)
#   html, svg   -> opened in headless Chromium: no console errors, flame graph present, screenshot
# Needs: cargo, dotnet, node/npm, chromium (Debian: apt-get install chromium).
# Screenshots and outputs go to bench/out/views/. Prints PASS/FAIL per check; exit 1 on a FAIL.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/bench/out/views
node_dir=$root/bench/out/node
clrspy=$root/target/release/clrspy
wl=$root/target/testapps/Workloads/Workloads.dll
mkdir -p "$out" "$node_dir"
fail=0
check() { if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi; }

(cd "$root" && cargo build --release --locked -p clrspy -q) || exit 1
[ -f "$wl" ] || dotnet build -c Release -v q --nologo -o "$(dirname "$wl")" "$root/testapps/Workloads" || exit 1
if [ ! -d "$node_dir/node_modules/puppeteer-core" ] || [ ! -d "$node_dir/node_modules/speedscope" ] || [ ! -d "$node_dir/node_modules/pprof-format" ] || [ ! -d "$node_dir/node_modules/@paulirish/trace_engine" ]; then
    (cd "$node_dir" && npm install --no-audit --no-fund speedscope pprof-format puppeteer-core @paulirish/trace_engine >/dev/null) || exit 1
fi
cp "$root"/bench/views/*.mjs "$node_dir/"

"$clrspy" record -o "$out/cpu.nettrace" -- dotnet "$wl" cpu --seconds 3 >/dev/null 2>&1
"$clrspy" record --profile alloc -o "$out/alloc.nettrace" -- dotnet "$wl" alloc --seconds 2 >/dev/null 2>&1

for f in speedscope pprof flamegraph; do
    "$clrspy" convert "$out/cpu.nettrace" --to $f -o "$out/cpu.$f" 2>/dev/null
done
"$clrspy" convert "$out/alloc.nettrace" --to pprof --metric alloc -o "$out/alloc.pprof" 2>/dev/null
"$clrspy" convert "$out/alloc.nettrace" --to speedscope --metric alloc -o "$out/alloc.speedscope" 2>/dev/null

cd "$node_dir"
r=$(node check-speedscope.mjs "$out/cpu.speedscope" "$out/speedscope.png" 2>&1)
echo "  speedscope: $r"
echo "$r" | grep -q '"errors":\[\]' && echo "$r" | grep -q 'all threads (cpu)' && echo "$r" | grep -q '"top_leaf":"Workloads.Cpu.Burn"'
check "speedscope loads the cpu profile in speedscope; heaviest frame Workloads.Cpu.Burn" $?
r=$(node check-speedscope.mjs "$out/alloc.speedscope" 2>&1)
echo "  speedscope alloc: $r"
echo "$r" | grep -q '"errors":\[\]' && echo "$r" | grep -q 'all threads (alloc)' && echo "$r" | grep -q '"top_leaf":"\[type\] Workloads.AllocatedThing"'
check "speedscope loads the alloc profile; heaviest type Workloads.AllocatedThing" $?

r=$(node check-pprof.mjs "$out/cpu.pprof" 2>&1); echo "  pprof cpu: $r"
echo "$r" | grep -q 'types samples/count,cpu/nanoseconds' && echo "$r" | grep -q 'top \[\["Workloads.Cpu.Burn"'; check "pprof-format decodes the cpu profile, top function Workloads.Cpu.Burn" $?
r=$(node check-pprof.mjs "$out/alloc.pprof" 2>&1); echo "  pprof alloc: $r"
echo "$r" | grep -q 'types alloc_objects/count,alloc_space/bytes' && echo "$r" | grep -q 'top \[\["\[type\] Workloads.AllocatedThing"'; check "pprof-format decodes the alloc profile, top type Workloads.AllocatedThing" $?

r=$(node check-page.mjs "$out/cpu.flamegraph" "$out/flamegraph.png" 2>&1); echo "  svg: $r"
echo "$r" | grep -q '"errors":\[\]' && echo "$r" | grep -q '"has_burn":true' && ! echo "$r" | grep -q '"flame_boxes":0'
check "flame graph SVG renders in Chromium, Workloads.Cpu.Burn drawn, no console error" $?

"$clrspy" convert "$out/cpu.nettrace" --to chromium -o "$out/cpu.chromium.json" 2>/dev/null
r=$(node check-chromium.mjs "$out/cpu.chromium.json" 2>&1); echo "  chromium: $r"
echo "$r" | grep -q '"ok":true' && echo "$r" | grep -q '"has_burn":true' && echo "$r" | grep -q '"name":"burner'
check "Chrome DevTools' trace engine reads the Chromium JSON: named threads, Burn slices" $?

"$clrspy" convert "$out/cpu.nettrace" --to html -o "$out/cpu.html" 2>/dev/null
r=$(node check-page.mjs "$out/cpu.html" "$out/report.png" 2>&1); echo "  html: $r"
echo "$r" | grep -q '"errors":\[\]' && echo "$r" | grep -q '"external_requests":\[\]' && echo "$r" | grep -q '"has_burn":true' && ! echo "$r" | grep -q '"flame_boxes":0'
check "HTML report opens offline in Chromium: no console error, no network, flame graph drawn (screenshots in bench/out/views)" $?
exit $fail
