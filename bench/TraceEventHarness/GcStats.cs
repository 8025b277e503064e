// gc-stats: TraceEvent's GC analysis (the model behind PerfView's GCStats view): every GC of
// every process with its number, generation, reason, type, pause, heap size after and bytes
// promoted, and per process whether Server GC was used and with how many heaps. Prints one JSON
// object.
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
        var processes = new List<object>();
        foreach (var proc in source.Processes())
        {
            var rt = proc.LoadedDotNetRuntime();
            if (rt == null)
            {
                continue;
            }
            var stats = rt.GC.Stats();
            processes.Add(new
            {
                process_id = proc.ProcessID,
                server_gc = stats.IsServerGCUsed,
                heaps = stats.HeapCount,
                gc_count = stats.Count,
            });
            foreach (TraceGC gc in rt.GC.GCs)
            {
                // NaN (no HeapStats) is not JSON: null.
                double? heapAfter = double.IsNaN(gc.HeapSizeAfterMB) ? null : gc.HeapSizeAfterMB;
                double? promoted = double.IsNaN(gc.PromotedMB) ? null : gc.PromotedMB;
                gcs.Add(new
                {
                    number = gc.Number,
                    generation = gc.Generation,
                    reason = gc.Reason.ToString(),
                    type = gc.Type.ToString(),
                    pause_ms = gc.PauseDurationMSec,
                    start_ms = gc.StartRelativeMSec,
                    heap_after_mb = gc.HeapStats == null ? null : heapAfter,
                    promoted_mb = gc.HeapStats == null ? null : promoted,
                    heap_count = gc.HeapCount,
                });
            }
        }
        Console.WriteLine(JsonSerializer.Serialize(new { trace = path, processes, gcs }));
        return 0;
    }
}
