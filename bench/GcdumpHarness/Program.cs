// Loads a .gcdump with dotnet-gcdump's own reader classes (sources fetched into ref/ at bench
// time) and prints what it sees as JSON: node count, objects, bytes, per-type [count, bytes].
// `rewrite IN OUT` reads IN and writes it again with the reference writer.
using System;
using System.Collections.Generic;
using System.Linq;
using Graphs;

public static class Program
{
    public static int Main(string[] args)
    {
        if (args.Length == 3 && args[0] == "rewrite")
        {
            // Read with the reference reader, write again with the reference writer.
            var d = new GCHeapDump(args[1]);
            GCHeapDump.WriteMemoryGraph(d.MemoryGraph, args[2], "dotnet-gcdump-reference");
            return 0;
        }
        var dump = new GCHeapDump(args[0]);
        MemoryGraph g = dump.MemoryGraph;
        var node = g.AllocNodeStorage();
        var type = g.AllocTypeNodeStorage();
        var perType = new Dictionary<string, (long count, long bytes)>();
        long objects = 0, bytes = 0;
        for (NodeIndex i = 0; i < g.NodeIndexLimit; i++)
        {
            g.GetNode(i, node);
            int size = node.Size;
            if (size == 0) continue;
            string name = node.GetType(type).Name;
            objects++;
            bytes += size;
            perType.TryGetValue(name, out var t);
            perType[name] = (t.count + 1, t.bytes + size);
        }
        Console.WriteLine("{");
        Console.WriteLine($"  \"nodes\": {(int)g.NodeIndexLimit}, \"objects\": {objects}, \"bytes\": {bytes}, \"creation_tool\": \"{dump.CreationTool}\",");
        Console.WriteLine("  \"types\": {");
        Console.WriteLine(string.Join(",\n", perType.OrderByDescending(p => p.Value.bytes).Select(p => $"    \"{p.Key.Replace("\"", "\\\"")}\": [{p.Value.count}, {p.Value.bytes}]")));
        Console.WriteLine("  }\n}");
        return 0;
    }
}
