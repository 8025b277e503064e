// gc-stats: TraceEvent's GC analysis (the model behind PerfView's GCStats view): every GC of
// every process with its number, generation, reason, type and pause. Prints one JSON object.
using System.Text.Json;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Analysis;
using Microsoft.Diagnostics.Tracing.Analysis.GC;

namespace TraceEventHarness;

internal static class GcStats
{
    public static int Run(string path)
    {
        using var source = new EventPipeEventSource(path);
        source.NeedLoadedDotNetRuntimes();
        source.Process();
        var gcs = new List<object>();
        foreach (var proc in source.Processes())
        {
            var rt = proc.LoadedDotNetRuntime();
            if (rt == null)
            {
                continue;
            }
            foreach (TraceGC gc in rt.GC.GCs)
            {
                gcs.Add(new
                {
                    number = gc.Number,
                    generation = gc.Generation,
                    reason = gc.Reason.ToString(),
                    type = gc.Type.ToString(),
                    pause_ms = gc.PauseDurationMSec,
                    start_ms = gc.StartRelativeMSec,
                });
            }
        }
        Console.WriteLine(JsonSerializer.Serialize(new { trace = path, gcs }));
        return 0;
    }
}
