// cpu-top: TraceEvent's route to "top methods", the way PerfView gets there:
//   1. TraceLog.CreateFromEventPipeDataFile converts the .nettrace to an .etlx (symbols for
//      managed code come from the method load/rundown events during the conversion);
//   2. the .etlx is opened and TraceEvent's own TraceEventStackSource is built over the
//      Thread/Sample events of TraceLog.Events (each event one sample, its stack through
//      TraceLog's call stacks and code addresses, with PerfView's Thread/Process/BROKEN frames);
//   3. PerfView's CallTree aggregates it and CallTree.ByID gives, per frame name, the exclusive
//      and inclusive sample counts ("By Name" view, no grouping or folding).
// Every sample counts, on all threads: TraceEvent cannot tell CPU from waiting.
//
// Prints one JSON object (see bench/README.md, "cpu-top"). If the conversion throws (a cut
// trace), it is retried with TraceLogOptions.ContinueOnError (PerfView's /ContinueOnError): the
// trace is taken to end at the damage, and "conversion_error" says what happened.
using System.Diagnostics;
using System.Text.Encodings.Web;
using System.Text.Json;
using Diagnostics.Tracing.StackSources;
using Microsoft.Diagnostics.Tracing.Etlx;
using Microsoft.Diagnostics.Tracing.Stacks;

namespace TraceEventHarness;

internal static class CpuTop
{
    private const string SampleProfiler = "Microsoft-DotNETCore-SampleProfiler";

    /// <summary>`Module!Namespace.Type.Method(args)` → `Namespace.Type.Method`.</summary>
    internal static string Normalize(string frame)
    {
        int bang = frame.IndexOf('!');
        string m = bang >= 0 ? frame[(bang + 1)..] : frame;
        int paren = m.IndexOf('(');
        return paren >= 0 ? m[..paren] : m;
    }

    /// <summary>Per frame name (CallTree.ByID): exclusive and inclusive sample counts.</summary>
    private static void Collect(CallTree tree, TraceEventStackSource source, TraceLog log,
        List<(string frame, string kind, double excl, double incl)> rows)
    {
        foreach (var node in tree.ByID)
        {
            if (node.InclusiveCount == 0 && node.ExclusiveCount == 0)
            {
                continue;
            }
            var ca = source.GetFrameCodeAddress(node.ID);
            string kind = ca == CodeAddressIndex.Invalid ? "pseudo"
                : log.CodeAddresses.MethodIndex(ca) == MethodIndex.Invalid ? "unresolved" : "method";
            rows.Add((node.Name, kind, node.ExclusiveCount, node.InclusiveCount));
        }
    }

    public static int Run(string path, int top)
    {
        // Options Program.cs does not parse (kept here so that Program.cs needs no change):
        //   --fold PATTERNS   also aggregate with PerfView's fold patterns (FilterParams.FoldRegExs,
        //                     ';'-separated): a matching frame's cost goes to its caller
        //   --addresses       also list the leaf addresses TraceLog could not name
        var argv = Environment.GetCommandLineArgs();
        int fi = Array.IndexOf(argv, "--fold");
        string? fold = fi >= 0 && fi + 1 < argv.Length ? argv[fi + 1] : null;
        bool addresses = argv.Contains("--addresses");
        string etlx = Path.Combine(Path.GetTempPath(), $"harness-{Environment.ProcessId}.etlx");
        string? conversionError = null;
        var sw = Stopwatch.StartNew();
        try
        {
            TraceLog.CreateFromEventPipeDataFile(path, etlx);
        }
        catch (Exception e)
        {
            conversionError = $"{e.GetType().FullName}: {e.Message}";
            Console.Error.WriteLine($"cpu-top: conversion failed ({conversionError}); retrying with ContinueOnError");
            File.Delete(etlx);
            sw.Restart();
            TraceLog.CreateFromEventPipeDataFile(path, etlx, new TraceLogOptions { ContinueOnError = true });
        }
        double convertMs = sw.Elapsed.TotalMilliseconds;
        double etlxMb = new FileInfo(etlx).Length / 1048576.0;

        sw.Restart();
        long samples = 0;
        double intervalMs;
        var rows = new List<(string frame, string kind, double excl, double incl)>();
        var foldedRows = new List<(string frame, string kind, double excl, double incl)>();
        var unresolved = new Dictionary<ulong, long>();
        double openMs, stacksMs;
        using (var log = new TraceLog(etlx))
        {
            openMs = sw.Elapsed.TotalMilliseconds;
            intervalMs = log.SampleProfileInterval.TotalMilliseconds;
            // Thread/Sample is the sample profiler's only event (id 0).
            var sampleEvents = log.Events.Filter(e => e.ProviderName == SampleProfiler && (int)e.ID == 0);
            var source = new TraceEventStackSource(sampleEvents);
            var tree = new CallTree(ScalingPolicyKind.ScaleToData) { StackSource = source };
            samples = (long)tree.Root.InclusiveCount;
            Collect(tree, source, log, rows);
            stacksMs = sw.Elapsed.TotalMilliseconds;
            if (fold != null)
            {
                // What PerfView's "Fold Pats" box does: a FilterStackSource over the same source.
                var filtered = new FilterStackSource(new FilterParams { FoldRegExs = fold }, source, ScalingPolicyKind.ScaleToData);
                var foldedTree = new CallTree(ScalingPolicyKind.ScaleToData) { StackSource = filtered };
                Collect(foldedTree, source, log, foldedRows);
            }
            if (addresses)
            {
                foreach (var ev in sampleEvents)
                {
                    var cs = ev.CallStackIndex();
                    if (cs == CallStackIndex.Invalid)
                    {
                        continue;
                    }
                    var ca = log.CallStacks.CodeAddressIndex(cs);
                    if (log.CodeAddresses.MethodIndex(ca) != MethodIndex.Invalid)
                    {
                        continue;
                    }
                    ulong a = log.CodeAddresses.Address(ca);
                    unresolved[a] = unresolved.GetValueOrDefault(a) + 1;
                }
            }
        }
        File.Delete(etlx);
        long peakMb = Process.GetCurrentProcess().PeakWorkingSet64 / 1048576;

        static object Methods(List<(string frame, string kind, double excl, double incl)> rows)
        {
            rows.Sort((a, b) => b.excl != a.excl ? b.excl.CompareTo(a.excl)
                : b.incl != a.incl ? b.incl.CompareTo(a.incl) : string.CompareOrdinal(a.frame, b.frame));
            return rows.Select(r => new
            {
                frame = r.frame,
                method = r.kind == "pseudo" ? r.frame : Normalize(r.frame),
                kind = r.kind,
                exclusive = (long)r.excl,
                inclusive = (long)r.incl,
            }).ToList();
        }
        var methods = Methods(rows);
        // The older key format (bench/cpu_vs_traceevent.py, big_trace.py): the method name
        // without its module, `module!?` for unresolved code.
        static string Legacy(string frame, string kind) =>
            kind == "unresolved" ? frame : frame[(frame.IndexOf('!') + 1)..];
        object Top(Func<(string frame, string kind, double excl, double incl), double> by) =>
            rows.Where(r => r.kind != "pseudo" && by(r) > 0)
                .OrderByDescending(by).ThenBy(r => r.frame, StringComparer.Ordinal).Take(top)
                .Select(r => new { method = Legacy(r.frame, r.kind), samples = (long)by(r) }).ToList();
        var options = new JsonSerializerOptions
        {
            Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
            DefaultIgnoreCondition = System.Text.Json.Serialization.JsonIgnoreCondition.WhenWritingNull,
        };
        Console.WriteLine(JsonSerializer.Serialize(new
        {
            trace = path,
            route = "TraceLog.CreateFromEventPipeDataFile -> TraceEventStackSource(Thread/Sample events) -> CallTree.ByID",
            samples,
            sample_interval_ms = intervalMs,
            etlx_ms = convertMs,
            open_ms = openMs,
            stacks_ms = stacksMs,
            etlx_mb = etlxMb,
            peak_working_set_mb = peakMb,
            conversion_error = conversionError,
            methods,
            top_exclusive = Top(r => r.excl),
            top_inclusive = Top(r => r.incl),
            folded = fold == null ? null : new { fold_pats = fold, methods = Methods(foldedRows) },
            unresolved_leaf_addresses = !addresses ? null : unresolved.OrderByDescending(kv => kv.Value).ThenBy(kv => kv.Key)
                .Select(kv => new { address = $"0x{kv.Key:x}", samples = kv.Value }).ToList(),
        }, options));
        return 0;
    }
}
