#!/usr/bin/env bash
# clrspy's pprof and speedscope exports, read back by the programs that consume them.
#
#   bench/check-views.sh
#
# Builds clrspy (debug) and the C# workloads if missing, records the cpu workload
# (default profile) and the alloc workload (--profile gc-verbose) from their start, converts both
# to pprof (cpu and alloc metrics) and speedscope, then:
#   pprof       -> decoded by npm `pprof-format` (a profile.proto codec): gzip, string table,
#                  sample/period types, duration and start time, every id resolves, thread labels,
#                  leaf-first location order, top function by self value
#   pprof       -> imported by the speedscope app itself (its own pprof importer)
#   speedscope  -> imported by the speedscope app (npm `speedscope`, v1.25: the package ships only
#                  the browser bundle, so the app runs in headless Chromium, driven by
#                  puppeteer-core, served on 127.0.0.1): the importer it chose, page errors, the
#                  profile list it offers, and the top row of its Sandwich view (sorted by self)
#   go tool pprof -> only when Go is installed (reported as SKIP otherwise)
#   heap views  -> a snapshot of the heap workload (`clrspy gcdump -p`): its folded root paths
#                  (the static's list inclusive = its retained bytes in `heap --json`, the total =
#                  the bytes reachable), and its HTML page in headless Chromium (--dump-dom): the
#                  types table has the workload's 12,345 orders, a click on Count sorts them
#                  first, no console error
# Needs cargo, dotnet, node/npm, /usr/bin/chromium (Debian: apt-get install -y chromium).
# npm packages go to bench/out/node, traces and outputs to bench/out/views (both git-ignored).
# Prints PASS/FAIL per check; exit 1 on any FAIL.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bench/out/views
node_dir=$root/bench/out/node
clrspy=$root/target/debug/clrspy
wl=$root/target/testapps/Workloads/Workloads.dll
chromium=${CHROMIUM:-/usr/bin/chromium}
mkdir -p "$out" "$node_dir"
fails=0
result() { # NAME STATUS(0=pass)
    if [ "$2" = 0 ]; then echo "PASS $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
# Runs a node check that prints PASS/FAIL lines itself; counts its FAILs.
node_check() {
    local r
    r=$(cd "$node_dir" && node "$@" 2>&1)
    echo "$r"
    if ! echo "$r" | grep -q '^PASS'; then fails=$((fails + 1)); fi
    fails=$((fails + $(echo "$r" | grep -c '^FAIL')))
}

(cd "$root" && cargo build -q -p clrspy) || { echo "FAIL cargo build -p clrspy"; exit 1; }
if [ ! -f "$wl" ]; then
    dotnet build -c Release -v q --nologo "$root/testapps/Workloads" -o "$(dirname "$wl")" ||
        { echo "FAIL dotnet build testapps/Workloads"; exit 1; }
fi
for p in pprof-format speedscope puppeteer-core; do
    if [ ! -d "$node_dir/node_modules/$p" ]; then
        (cd "$node_dir" && npm install --no-audit --no-fund pprof-format speedscope puppeteer-core >/dev/null) ||
            { echo "FAIL npm install pprof-format speedscope puppeteer-core"; exit 1; }
        break
    fi
done
echo "consumers: pprof-format $(node -p "require('$node_dir/node_modules/pprof-format/package.json').version")," \
    "speedscope $(node -p "require('$node_dir/node_modules/speedscope/package.json').version")," \
    "$("$chromium" --version 2>/dev/null || echo 'no chromium')"

# --- recordings and conversions ---------------------------------------------------------------
rm -f "$out/cpu.nettrace" "$out/alloc.nettrace"
"$clrspy" record -o "$out/cpu.nettrace" -- dotnet "$wl" cpu --seconds 3 >/dev/null 2>&1
result "record the cpu workload from its start" $?
"$clrspy" record --profile gc-verbose -o "$out/alloc.nettrace" -- dotnet "$wl" alloc --seconds 2 >/dev/null 2>&1
result "record the alloc workload (--profile gc-verbose)" $?
# (The status is kept before the name's `$(basename ...)` runs: that resets `$?`.)
conv() { "$clrspy" convert "$1" "${@:2}" 2>/dev/null; local rc=$?; result "clrspy convert $(basename "$1") ${*:2}" $rc; }
conv "$out/cpu.nettrace" --to pprof -o "$out/cpu.pb.gz"
conv "$out/alloc.nettrace" --to pprof --metric alloc -o "$out/alloc.pb.gz"
conv "$out/cpu.nettrace" --to speedscope -o "$out/cpu.speedscope.json"
conv "$out/alloc.nettrace" --to speedscope --metric alloc -o "$out/alloc.speedscope.json"

# --- pprof-format ---------------------------------------------------------------------------------
cat >"$node_dir/check-views-pprof.mjs" <<'EOF'
// node check-views-pprof.mjs FILE METRIC TOP CALLER: decodes FILE with pprof-format and checks it.
import { Profile } from 'pprof-format';
import fs from 'fs';
import zlib from 'zlib';
const [file, metric, wantTop, wantCaller] = process.argv.slice(2);
const say = (ok, what, detail) =>
  console.log(`${ok ? 'PASS' : 'FAIL'} pprof-format, ${metric}: ${what}${detail === undefined ? '' : ` (${detail})`}`);
const gz = fs.readFileSync(file);
say(gz[0] === 0x1f && gz[1] === 0x8b, 'file is gzip');
const p = Profile.decode(zlib.gunzipSync(gz));
const st = p.stringTable.strings;
const s = i => st[Number(i)];
say(st[0] === '', 'string_table[0] is ""', `${st.length} strings`);
const vt = t => (t ? `${s(t.type)}/${s(t.unit)}` : 'none');
const want = { cpu: 'samples/count,cpu/nanoseconds', wait: 'samples/count,wait/nanoseconds',
               alloc: 'alloc_objects/count,alloc_space/bytes' }[metric];
const types = p.sampleType.map(vt).join(',');
say(types === want, `sample types ${want}`, types);
if (metric === 'alloc') {
  say(vt(p.periodType) === 'space/bytes', 'period type space/bytes', vt(p.periodType));
} else {
  say(vt(p.periodType) === `${metric}/nanoseconds` && Number(p.period) > 0,
      `period type ${metric}/nanoseconds, period = sampling interval`, `${vt(p.periodType)} ${p.period}`);
}
const dur = Number(p.durationNanos);
say(dur > 1e9 && dur < 60e9, 'duration_nanos', `${(dur / 1e9).toFixed(2)} s`);
const start = Number(p.timeNanos) / 1e6;
const mtime = fs.statSync(file).mtimeMs;
say(start > mtime - 3600e3 && start <= mtime, 'time_nanos is the recording start (within the hour before the file)',
    new Date(start).toISOString());
const fn = new Map(p.function.map(f => [Number(f.id), f]));
const loc = new Map(p.location.map(l => [Number(l.id), l]));
const funcNames = new Set(p.function.map(f => s(f.name)));
say(funcNames.size === p.function.length && p.location.length === p.function.length,
    'one function and one location per distinct frame', `${p.function.length} functions, ${p.location.length} locations`);
let bad = 0;
for (const l of p.location) if (l.line.length !== 1 || !fn.has(Number(l.line[0].functionId))) bad++;
for (const sm of p.sample) for (const id of sm.locationId) if (!loc.has(Number(id))) bad++;
say(bad === 0, 'every location id and function id resolves', `${bad} dangling`);
say(p.sample.every(sm => sm.value.length === 2), 'every sample has two values', `${p.sample.length} samples`);
const name = id => s(fn.get(Number(loc.get(Number(id)).line[0].functionId)).name);
if (metric !== 'alloc') {
  const labelled = p.sample.filter(sm => sm.label.some(l => s(l.key) === 'thread' && s(l.str) !== ''));
  say(labelled.length === p.sample.length, 'every sample has a "thread" label',
      [...new Set(labelled.map(sm => s(sm.label[0].str)))].slice(0, 3).join(', '));
}
const self = new Map();
for (const sm of p.sample) {
  if (sm.locationId.length === 0) continue;
  const leaf = name(sm.locationId[0]);
  self.set(leaf, (self.get(leaf) || 0) + Number(sm.value[1]));
}
const top = [...self.entries()].sort((a, b) => b[1] - a[1]);
const total = top.reduce((n, [, v]) => n + v, 0);
say(top[0]?.[0] === wantTop, `top function by self value is ${wantTop}`,
    top.slice(0, 3).map(([f, v]) => `${f} ${(100 * v / total).toFixed(1)}%`).join('; '));
// Leaf first: the heaviest sample starts at the top function, its caller comes next.
const heavy = [...p.sample].sort((a, b) => Number(b.value[1]) - Number(a.value[1]))[0];
const chain = heavy.locationId.map(name);
say(chain[0] === wantTop && chain[1] === wantCaller, 'location ids are leaf first',
    chain.slice(0, 3).join(' <- ') + ` ... <- ${chain[chain.length - 1]}`);
EOF
node_check check-views-pprof.mjs "$out/cpu.pb.gz" cpu Workloads.Cpu.Burn 'Workloads.Cpu+<>c__DisplayClass1_0.<Run>b__0'
node_check check-views-pprof.mjs "$out/alloc.pb.gz" alloc '[type] Workloads.AllocatedThing' Workloads.Alloc.MakeThing

# --- the speedscope app ---------------------------------------------------------------------
cat >"$node_dir/check-views-speedscope.mjs" <<'EOF'
// node check-views-speedscope.mjs FILE IMPORTER TOP [PROFILE] [PNG]: opens FILE in the speedscope
// app (node_modules/speedscope/dist/release, served on loopback) in headless Chromium, and reads
// back what speedscope shows: which importer it used, page errors, the profiles it offers and the
// first row of its Sandwich view (speedscope's own self-time table, heaviest first).
import puppeteer from 'puppeteer-core';
import path from 'path';
import http from 'http';
import fs from 'fs';
const [fileArg, wantImporter, wantTop, wantProfile, png] = process.argv.slice(2);
const file = path.resolve(fileArg);
const base = path.basename(file);
const tag = `speedscope app, ${base}`;
const say = (ok, what, detail) =>
  console.log(`${ok ? 'PASS' : 'FAIL'} ${tag}: ${what}${detail === undefined ? '' : ` (${detail})`}`);
const app = path.resolve('node_modules/speedscope/dist/release');
const mime = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm' };
const server = http.createServer((req, res) => {
  const u = decodeURIComponent(req.url.split('?')[0]);
  const f = u === `/${base}` ? file : path.join(app, u === '/' ? 'index.html' : path.normalize(u));
  fs.readFile(f, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': mime[path.extname(f)] || 'application/octet-stream' });
    res.end(data);
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}`;
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const logs = [], errors = [];
  page.on('console', m => { logs.push(m.text()); if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  await page.goto(`${url}/#profileURL=${encodeURIComponent(`${url}/${base}`)}&view=sandwich`);
  // The Sandwich view's rows: Total, Self, Symbol Name; the two weights end in "(n%)".
  const rowsOf = () => [...document.querySelectorAll('tr')]
    .map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()))
    .filter(c => c.length === 3 && /%\)$/.test(c[1]));
  await page.waitForFunction(`(${rowsOf})().length > 0`, { timeout: 30000 }).catch(() => {});
  const rows = await page.evaluate(`(${rowsOf})()`);
  const importer = logs.find(l => l.startsWith('Importing as')) || 'no importer';
  say(importer === `Importing as ${wantImporter}`, `imported by speedscope's ${wantImporter} importer`, importer);
  say(errors.length === 0 && rows.length > 0, 'loads with no page error', errors.slice(0, 2).join(' | ') || `${rows.length} rows`);
  const pct = c => { const m = /\(([<>]?)([\d.]+)%\)$/.exec(c); return m ? Number(m[2]) : 0; };
  const first = rows[0] || ['', '', ''];
  const sorted = rows.every(r => pct(r[1]) <= pct(first[1]));
  say(first[2] === wantTop && sorted, `Sandwich view (by self) shows ${wantTop} first`,
      rows.slice(0, 3).map(r => `${r[2]} self ${r[1]}`).join('; '));
  if (png) await page.screenshot({ path: png });
  // The profile list: click the title in the toolbar, read the table that opens.
  const names = await page.evaluate(async () => {
    const counter = [...document.querySelectorAll('span')].find(e => /^\(\d+\/\d+\)$/.test(e.innerText.trim()));
    // The toolbar's middle: the line after the view buttons (no "(i/n)" counter for one profile).
    const lines = document.body.innerText.split('\n');
    const title = (lines[lines.findIndex(l => l.includes('Sandwich')) + 1] || '').trim();
    if (!counter) return { title, profiles: [] };
    counter.parentElement.click();
    await new Promise(r => setTimeout(r, 500));
    const profiles = [...document.querySelectorAll('tr')]
      .map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()))
      .filter(c => c.length === 3 && /^\d+$/.test(c[0]))
      .map(c => `${c[1]}: ${c[2]}`);
    return { title, profiles };
  });
  if (wantProfile) {
    say(names.title.startsWith(wantProfile), `opens on the profile "${wantProfile}"`,
        `${names.title}; offers ${names.profiles.join(', ') || 'one profile'}`);
  } else {
    console.log(`  ${tag}: title "${names.title}"`);
  }
} finally {
  await browser.close();
  server.close();
}
EOF
if [ -x "$chromium" ]; then
    node_check check-views-speedscope.mjs "$out/cpu.speedscope.json" 'speedscope json file' Workloads.Cpu.Burn 'all threads (cpu)' "$out/check-views-speedscope-cpu.png"
    node_check check-views-speedscope.mjs "$out/alloc.speedscope.json" 'speedscope json file' '[type] Workloads.AllocatedThing' 'all threads (alloc)'
    node_check check-views-speedscope.mjs "$out/cpu.pb.gz" 'protobuf encoded pprof file' Workloads.Cpu.Burn '' "$out/check-views-pprof-cpu.png"
    node_check check-views-speedscope.mjs "$out/alloc.pb.gz" 'protobuf encoded pprof file' '[type] Workloads.AllocatedThing'
else
    result "speedscope app checks: $chromium not found (Debian: apt-get update && apt-get install -y chromium)" 1
fi

# --- heap views ---------------------------------------------------------------------------------
rm -f "$out/heap.gcdump" "$out/heap.out" "$out/heap.stdin"
mkfifo "$out/heap.stdin"
exec 7<>"$out/heap.stdin" # the workload's stdin, open until it is stopped
dotnet "$wl" heap <&7 >"$out/heap.out" 2>&1 &
heap_wl=$!
for _ in $(seq 100); do grep -q '^held=' "$out/heap.out" && break; sleep 0.2; done
heap_pid=$(sed -n 's/^ready pid=//p' "$out/heap.out")
"$clrspy" gcdump -p "$heap_pid" -o "$out/heap.gcdump" >/dev/null 2>&1
result "clrspy gcdump -p (the heap workload)" $?
kill "$heap_wl" 2>/dev/null; wait "$heap_wl" 2>/dev/null
exec 7>&-; rm -f "$out/heap.stdin"
conv "$out/heap.gcdump" --to folded -o "$out/heap.folded.txt"
conv "$out/heap.gcdump" --to html -o "$out/heap.html"
list='System.Collections.Generic.List<Workloads.HeapOrder>'
retained=$("$clrspy" heap --json --top 100000 "$out/heap.gcdump" | node -e "
  const v = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  const t = v.types.find(t => t.type === process.argv[1]); console.log(t ? t.retained_bytes : -1);" "$list")
inclusive=$(awk -v l="$list" '{ w = $NF; p = $0; sub(/ [0-9]+$/, "", p); split(p, f, ";"); if (f[3] == l) s += w }
    END { print s + 0 }' "$out/heap.folded.txt")
[ "$inclusive" -gt 0 ] && [ "$inclusive" = "$retained" ]
result "folded root paths: the static's $list totals its retained bytes ($inclusive = $retained)" $?
"$clrspy" convert "$out/heap.gcdump" --to pprof -o "$out/heap.pb.gz" >/dev/null 2>"$out/heap.err"
[ $? = 2 ] && grep -q 'does not convert to pprof' "$out/heap.err" && [ ! -e "$out/heap.pb.gz" ]
result "a .gcdump to a trace-only format is a clear error" $?
if [ -x "$chromium" ]; then
    # The page with a probe: a click on the types table's Count heading, then the first row.
    cp "$out/heap.html" "$out/heap-probe.html"
    echo "<script>addEventListener('load',function(){var t=document.getElementById('types-table');t.rows[0].cells[2].click();document.body.setAttribute('data-probe',t.rows[1].cells[3].textContent+'|'+t.rows[1].cells[2].dataset.v);});</script>" >>"$out/heap-probe.html"
    timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --enable-logging=stderr --v=0 \
        --dump-dom "file://$out/heap-probe.html" >"$out/heap.dom" 2>"$out/heap.chromium.log"
    grep -q 'data-probe="Workloads.HeapOrder|12345"' "$out/heap.dom"
    rc=$?
    result "heap page in Chromium: a click on Count sorts the 12,345 orders first ($(grep -o 'data-probe="[^"]*"' "$out/heap.dom"))" $rc
    grep -q 'id="icicle"' "$out/heap.dom" && grep -q 'id="roots-table"' "$out/heap.dom"
    result "heap page in Chromium: roots table and icicle present" $?
    [ -s "$out/heap.dom" ] && ! grep -q 'CONSOLE' "$out/heap.chromium.log"
    rc=$?
    result "heap page in Chromium: no console error ($(grep -c CONSOLE "$out/heap.chromium.log") messages)" $rc
fi

# --- go tool pprof ----------------------------------------------------------------------------
if command -v go >/dev/null 2>&1; then
    r=$(go tool pprof -top -nodecount=3 "$out/cpu.pb.gz" 2>&1); echo "$r" | sed 's/^/  /'
    echo "$r" | grep -q 'Workloads.Cpu.Burn'; result "go tool pprof -top reads cpu.pb.gz, Workloads.Cpu.Burn listed" $?
else
    echo "SKIP go tool pprof: Go is not installed on this machine"
fi

echo "$fails check(s) failed"
[ "$fails" = 0 ]
