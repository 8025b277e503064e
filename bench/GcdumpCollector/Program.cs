// The reference collector: `dotnet dotnet-gcdump.dll PID OUT.gcdump` snapshots PID's heap the
// way `dotnet-gcdump collect` does (its own EventPipeDotNetHeapDumper and writer, compiled from
// sources fetched at bench time) and prints the collection's wall time in ms on stdout.
using System;
using System.Diagnostics;
using System.IO;
using System.Threading;
using Graphs;
using Microsoft.Diagnostics.Tools.GCDump;

public static class Program
{
    public static int Main(string[] args)
    {
        if (args.Length != 2 || !int.TryParse(args[0], out int pid))
        {
            Console.Error.WriteLine("usage: dotnet-gcdump PID OUT.gcdump");
            return 2;
        }
        var sw = Stopwatch.StartNew();
        var info = new DotNetHeapInfo();
        var graph = new MemoryGraph(50_000);
        TextWriter log = Environment.GetEnvironmentVariable("GCDUMP_VERBOSE") == "1" ? Console.Error : TextWriter.Null;
        if (!EventPipeDotNetHeapDumper.DumpFromEventPipe(CancellationToken.None, pid, null, graph, log, 600, info))
        {
            Console.Error.WriteLine("reference collector: the heap dump did not complete");
            return 1;
        }
        graph.AllowReading();
        GCHeapDump.WriteMemoryGraph(graph, args[1], "dotnet-gcdump");
        Console.WriteLine(sw.ElapsedMilliseconds);
        return 0;
    }
}
