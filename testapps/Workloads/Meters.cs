// Meters: a Meter of its own with exactly known values, for `clrspy counters`' live tests.
// It waits 2 s for a session to attach, then for --seconds: every 10 ms adds 1 to the counter
// `workloads.items` (tag shard=0|1, alternating) and records 1..1000 once each in the
// histogram `workloads.latency` (so p50 ≈ 500, p95 ≈ 950, p99 ≈ 990 in every interval), and
// every 500 ms forces a GC. Then it waits 3 s (two intervals' reports go out) and prints
// `meters total=N`, N being how many times the counter was added to.
using System.Diagnostics.Metrics;

namespace Workloads;

public static class Meters
{
    public static int Run(Options o)
    {
        using var meter = new Meter("Workloads.Meters", "1.0");
        var items = meter.CreateCounter<long>("workloads.items", "{item}", "items processed");
        var latency = meter.CreateHistogram<double>("workloads.latency", "ms", "known values 1..1000");
        Program.Out("meters ready");
        Thread.Sleep(2000);
        long total = 0;
        long deadline = o.DeadlineTimestamp();
        long nextGc = System.Diagnostics.Stopwatch.GetTimestamp();
        long gcEvery = System.Diagnostics.Stopwatch.Frequency / 2;
        while (System.Diagnostics.Stopwatch.GetTimestamp() < deadline)
        {
            items.Add(1, new KeyValuePair<string, object?>("shard", (total % 2).ToString()));
            total++;
            for (int v = 1; v <= 1000; v++)
            {
                latency.Record(v);
            }
            if (System.Diagnostics.Stopwatch.GetTimestamp() >= nextGc)
            {
                GC.Collect();
                nextGc += gcEvery;
            }
            Thread.Sleep(10);
        }
        Thread.Sleep(3000);
        Program.Out($"meters total={total}");
        return 0;
    }
}
