// Opens a core dump with ClrMD and prints, as JSON, what its heap holds: every object the heap
// walk finds (live or not yet collected; free space left out), and the objects reachable from
// ClrMD's roots (a mark from Heap.EnumerateRoots through each object's references), each with
// count, bytes and per-type [count, bytes].
using System;
using System.Collections.Generic;
using System.Linq;
using Microsoft.Diagnostics.Runtime;

public static class Program
{
    public static int Main(string[] args)
    {
        if (args.Length != 1)
        {
            Console.Error.WriteLine("usage: ClrmdHarness CORE");
            return 2;
        }
        using DataTarget target = DataTarget.LoadDump(args[0]);
        if (target.ClrVersions.Length == 0)
        {
            Console.Error.WriteLine("no CLR in the dump");
            return 1;
        }
        ClrInfo clr = target.ClrVersions[0];
        // The DAC of the runtime that wrote the dump sits beside its libcoreclr.so; name it
        // (ClrMD's own search ends in a symbol server, which it does not use on Linux). ClrMD
        // reads no runtime version from these dumps (it expects 0.0), so the version check is
        // skipped: this DAC is the one from the very directory the dump's runtime was loaded from.
        string dac = System.IO.Path.Combine(System.IO.Path.GetDirectoryName(clr.ModuleInfo.FileName) ?? "", "libmscordaccore.so");
        using ClrRuntime runtime = System.IO.File.Exists(dac) ? clr.CreateRuntime(dac, ignoreMismatch: true) : clr.CreateRuntime();
        ClrHeap heap = runtime.Heap;

        var all = new Tally();
        foreach (ClrObject o in heap.EnumerateObjects())
        {
            if (!o.IsValid || o.IsFree) continue;
            all.Add(o);
        }

        var live = new Tally();
        var seen = new HashSet<ulong>();
        var stack = new Stack<ulong>();
        foreach (ClrRoot root in heap.EnumerateRoots())
        {
            ulong a = root.Object.Address;
            if (a != 0 && seen.Add(a)) stack.Push(a);
        }
        while (stack.Count > 0)
        {
            ClrObject o = heap.GetObject(stack.Pop());
            if (!o.IsValid) continue;
            live.Add(o);
            foreach (ClrObject r in o.EnumerateReferences(carefully: true, considerDependantHandles: true))
            {
                if (r.Address != 0 && seen.Add(r.Address)) stack.Push(r.Address);
            }
        }
        Console.WriteLine("{");
        Console.WriteLine($"  \"heap_walk\": {all.Json()},");
        Console.WriteLine($"  \"reachable\": {live.Json()}");
        Console.WriteLine("}");
        return 0;
    }

    private sealed class Tally
    {
        public long Objects, Bytes;
        public readonly Dictionary<string, (long count, long bytes)> Types = new();

        public void Add(ClrObject o)
        {
            long size = (long)o.Size;
            string name = o.Type?.Name ?? "?";
            Objects++;
            Bytes += size;
            Types.TryGetValue(name, out var t);
            Types[name] = (t.count + 1, t.bytes + size);
        }

        public string Json() =>
            $"{{\"objects\": {Objects}, \"bytes\": {Bytes}, \"types\": {{"
            + string.Join(", ", Types.OrderByDescending(p => p.Value.bytes)
                .Select(p => $"\"{p.Key.Replace("\\", "\\\\").Replace("\"", "\\\"")}\": [{p.Value.count}, {p.Value.bytes}]"))
            + "}}";
    }
}
