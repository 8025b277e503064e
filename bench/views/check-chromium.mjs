// Reads a Chromium trace event JSON with Chrome DevTools' own trace engine (npm
// @paulirish/trace_engine: the Performance panel's parser, packaged for node) and reports what
// it found: threads with names, slices per thread, the heaviest slice names.
import { analyzeTrace } from '@paulirish/trace_engine/analyze-trace.mjs';
const file = process.argv[2];
try {
  const { parsedTrace } = await analyzeTrace(file);
  const r = parsedTrace.Renderer ?? parsedTrace.data?.Renderer;
  const meta = parsedTrace.Meta ?? parsedTrace.data?.Meta;
  const threads = [];
  const names = new Map();
  if (r && r.processes) {
    for (const [pid, proc] of r.processes) {
      for (const [tid, th] of proc.threads) {
        const n = th.entries ? th.entries.length : 0;
        threads.push({ pid, tid, name: th.name, entries: n });
        for (const e of th.entries || []) names.set(e.name, (names.get(e.name) || 0) + (e.dur || 0));
      }
    }
  }
  const top = [...names.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5).map(x => x[0]);
  const ok = threads.some(t => t.entries > 0);
  const has_burn = names.has('Workloads.Cpu.Burn');
  console.log(JSON.stringify({ ok, has_burn, threads: threads.slice(0, 6), top, trace_bounds_us: meta?.traceBounds?.range }));
} catch (e) {
  console.log(JSON.stringify({ ok: false, error: String(e).slice(0, 300) }));
}
