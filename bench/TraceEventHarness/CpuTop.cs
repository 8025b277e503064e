// cpu-top: TraceEvent's route to "top methods" (what PerfView does): convert the .nettrace to an
// .etlx with TraceLog, then walk every sample event's call stack through TraceLog's code
// addresses and method names, counting exclusive (leaf) and inclusive samples per method.
// Prints one JSON object with the counts and the time of each phase.
using System.Diagnostics;
using System.Text.Json;
using Microsoft.Diagnostics.Tracing.Etlx;

namespace TraceEventHarness;

internal static class CpuTop
{
    public static int Run(string path, int top)
    {
        var sw = Stopwatch.StartNew();
        string etlx = Path.Combine(Path.GetTempPath(), $"harness-{Environment.ProcessId}.etlx");
        TraceLog.CreateFromEventPipeDataFile(path, etlx);
        double convertMs = sw.Elapsed.TotalMilliseconds;
        sw.Restart();
        var excl = new Dictionary<string, long>();
        var incl = new Dictionary<string, long>();
        long total = 0;
        using (var log = new TraceLog(etlx))
        {
            var seen = new HashSet<string>();
            foreach (var ev in log.Events)
            {
                if (ev.ProviderName != "Microsoft-DotNETCore-SampleProfiler")
                {
                    continue;
                }
                total++;
                string? leaf = null;
                seen.Clear();
                for (var f = ev.CallStack(); f != null; f = f.Caller)
                {
                    string name = f.CodeAddress.FullMethodName;
                    if (string.IsNullOrEmpty(name))
                    {
                        name = (f.CodeAddress.ModuleName ?? "?") + "!?";
                    }
                    leaf ??= name;
                    if (seen.Add(name))
                    {
                        incl[name] = incl.GetValueOrDefault(name) + 1;
                    }
                }
                leaf ??= "[no stack]";
                excl[leaf] = excl.GetValueOrDefault(leaf) + 1;
            }
        }
        double stacksMs = sw.Elapsed.TotalMilliseconds;
        File.Delete(etlx);
        static object Rows(Dictionary<string, long> d, int n) =>
            d.OrderByDescending(kv => kv.Value).ThenBy(kv => kv.Key, StringComparer.Ordinal).Take(n)
             .Select(kv => new { method = kv.Key, samples = kv.Value }).ToList();
        Console.WriteLine(JsonSerializer.Serialize(new
        {
            trace = path,
            samples = total,
            etlx_ms = convertMs,
            stacks_ms = stacksMs,
            top_exclusive = Rows(excl, top),
            top_inclusive = Rows(incl, top),
        }));
        return 0;
    }
}
