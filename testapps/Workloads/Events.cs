using System.Buffers.Binary;
using System.Diagnostics;
using System.Diagnostics.Tracing;
using System.Runtime.CompilerServices;

namespace Workloads;

/// The custom EventSource "Clrspy-Workloads".
///
/// Every event is written through a typed path: WriteEventCore with EventData descriptors, or a
/// typed WriteEvent overload that exists in EventSource. (On .NET 10.0.12, events written through
/// WriteEvent(int, params object[]) were seen not to reach EventPipe although IsEnabled() was true.)
[EventSource(Name = "Clrspy-Workloads")]
public sealed class WorkloadEventSource : EventSource
{
    public static readonly WorkloadEventSource Log = new();

    public static class Keywords
    {
        public const EventKeywords Tick = (EventKeywords)0x1;
        public const EventKeywords Payload = (EventKeywords)0x2;
        public const EventKeywords Mark = (EventKeywords)0x4;
        public const EventKeywords Triple = (EventKeywords)0x8;
        public const EventKeywords Mixed = (EventKeywords)0x10;
    }

    private WorkloadEventSource() { }

    [Event(1, Level = EventLevel.Informational, Keywords = Keywords.Tick)]
    public unsafe void Tick(int iteration, long value, string text)
    {
        if (!IsEnabled(EventLevel.Informational, Keywords.Tick)) return;
        text ??= "";
        fixed (char* chars = text)
        {
            EventData* d = stackalloc EventData[3];
            d[0] = new EventData { DataPointer = (IntPtr)(&iteration), Size = sizeof(int) };
            d[1] = new EventData { DataPointer = (IntPtr)(&value), Size = sizeof(long) };
            d[2] = new EventData { DataPointer = (IntPtr)chars, Size = (text.Length + 1) * sizeof(char) };
            WriteEventCore(1, 3, d);
        }
    }

    [Event(2, Level = EventLevel.Verbose, Keywords = Keywords.Payload)]
    public unsafe void Payload(double d, bool b, Guid g, byte[] data)
    {
        if (!IsEnabled(EventLevel.Verbose, Keywords.Payload)) return;
        data ??= Array.Empty<byte>();
        int flag = b ? 1 : 0; // EventSource encodes bool as a 4-byte integer
        int length = data.Length;
        fixed (byte* bytes = data)
        {
            EventData* e = stackalloc EventData[5];
            e[0] = new EventData { DataPointer = (IntPtr)(&d), Size = sizeof(double) };
            e[1] = new EventData { DataPointer = (IntPtr)(&flag), Size = sizeof(int) };
            e[2] = new EventData { DataPointer = (IntPtr)(&g), Size = sizeof(Guid) };
            // byte[] is written as its length (int32) followed by the bytes.
            e[3] = new EventData { DataPointer = (IntPtr)(&length), Size = sizeof(int) };
            e[4] = new EventData { DataPointer = (IntPtr)bytes, Size = length };
            WriteEventCore(2, 5, e);
        }
    }

    /// The same values as Payload without the byte array, so that every field is described in the
    /// trace's metadata (for Payload, .NET 10 writes metadata with no fields at all, see README).
    [Event(5, Level = EventLevel.Informational, Keywords = Keywords.Mixed)]
    public unsafe void Mixed(double d, bool b, Guid g, int n)
    {
        if (!IsEnabled(EventLevel.Informational, Keywords.Mixed)) return;
        int flag = b ? 1 : 0;
        EventData* e = stackalloc EventData[4];
        e[0] = new EventData { DataPointer = (IntPtr)(&d), Size = sizeof(double) };
        e[1] = new EventData { DataPointer = (IntPtr)(&flag), Size = sizeof(int) };
        e[2] = new EventData { DataPointer = (IntPtr)(&g), Size = sizeof(Guid) };
        e[3] = new EventData { DataPointer = (IntPtr)(&n), Size = sizeof(int) };
        WriteEventCore(5, 4, e);
    }

    [Event(3, Level = EventLevel.Informational, Keywords = Keywords.Mark)]
    public void Mark(string text)
    {
        if (IsEnabled(EventLevel.Informational, Keywords.Mark)) WriteEvent(3, text);
    }

    [Event(4, Level = EventLevel.Verbose, Keywords = Keywords.Triple)]
    public void Triple(long a, long b, long c)
    {
        if (IsEnabled(EventLevel.Verbose, Keywords.Triple)) WriteEvent(4, a, b, c);
    }
}

/// Per-thread tallies of the events that were actually written (their level and keyword enabled).
public sealed class Tally
{
    public long Tick, Payload, Mark, Triple, Mixed;

    public long Total => Tick + Payload + Mark + Triple + Mixed;

    public void Add(Tally o)
    {
        Tick += o.Tick;
        Payload += o.Payload;
        Mark += o.Mark;
        Triple += o.Triple;
        Mixed += o.Mixed;
    }

    public override string ToString() => $"written={Total} tick={Tick} payload={Payload} mark={Mark} triple={Triple} mixed={Mixed}";
}

/// The writing loop shared by the eventsource and bigtrace scenarios. Iteration i of thread t writes:
///   Tick(i, i * 1000 + t, "tick <i % 100>")
///   Payload(i * 0.5, i is even, 00000000-0000-0000-0000-<t + 1 as 12 hex digits>, 4 bytes: i little-endian)
///   Mixed(i * 0.5, i is even, the same Guid, i)  when i % 10 == 0
///   Triple(t, i, t * i)                    when i % 100 == 0
///   Mark("thread <t> iteration <i>")       when i % 1000 == 0
public sealed class EventLoop
{
    private static readonly string[] Texts = Enumerable.Range(0, 100).Select(k => $"tick {k}").ToArray();

    private readonly int _thread;
    private readonly Guid _guid;
    private readonly byte[] _data = new byte[4];
    public readonly Tally Tally = new();

    public EventLoop(int thread)
    {
        _thread = thread;
        _guid = new Guid($"00000000-0000-0000-0000-{thread + 1:x12}");
    }

    /// Writes iterations until `count` iterations are done (when given) or the deadline passes.
    public void Run(long endTimestamp, int? count)
    {
        var log = WorkloadEventSource.Log;
        for (int i = 0; ; i++)
        {
            if (count is int c ? i >= c : (i & 63) == 0 && Stopwatch.GetTimestamp() >= endTimestamp) break;
            One(log, i);
        }
    }

    public void One(WorkloadEventSource log, int i)
    {
        if (log.IsEnabled(EventLevel.Informational, WorkloadEventSource.Keywords.Tick)) Tally.Tick++;
        log.Tick(i, (long)i * 1000 + _thread, Texts[i % 100]);
        BinaryPrimitives.WriteInt32LittleEndian(_data, i);
        if (log.IsEnabled(EventLevel.Verbose, WorkloadEventSource.Keywords.Payload)) Tally.Payload++;
        log.Payload(i * 0.5, (i & 1) == 0, _guid, _data);
        if (i % 10 == 0)
        {
            if (log.IsEnabled(EventLevel.Informational, WorkloadEventSource.Keywords.Mixed)) Tally.Mixed++;
            log.Mixed(i * 0.5, (i & 1) == 0, _guid, i);
        }
        if (i % 100 == 0)
        {
            if (log.IsEnabled(EventLevel.Verbose, WorkloadEventSource.Keywords.Triple)) Tally.Triple++;
            log.Triple(_thread, i, (long)_thread * i);
        }
        if (i % 1000 == 0)
        {
            if (log.IsEnabled(EventLevel.Informational, WorkloadEventSource.Keywords.Mark)) Tally.Mark++;
            log.Mark($"thread {_thread} iteration {i}");
        }
    }
}

public static class EventWriter
{
    public static int Run(Options o)
    {
        int n = o.Threads ?? 4;
        long end = o.DeadlineTimestamp();
        var loops = new EventLoop[n];
        var threads = new Thread[n];
        for (int t = 0; t < n; t++)
        {
            var loop = loops[t] = new EventLoop(t);
            threads[t] = new Thread(() => Write(loop, end, o.Count)) { Name = $"writer-{t}" };
        }
        foreach (var t in threads) t.Start();
        foreach (var t in threads) t.Join();
        var total = new Tally();
        foreach (var l in loops) total.Add(l.Tally);
        Program.Out($"{total} threads={n}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Write(EventLoop loop, long end, int? count)
    {
        loop.Run(end, count);
        GC.KeepAlive(loop); // not a tail call: Write stays on the stack
    }
}

/// Many events with deep, varied stacks: thread t recurses to a depth between 5 and 40 through
/// Alpha -> Beta -> Gamma -> Alpha ... and then writes events through one of three leaf methods.
public static class BigTrace
{
    public static int Run(Options o)
    {
        int n = o.Threads ?? 8;
        long end = o.DeadlineTimestamp();
        var loops = new EventLoop[n];
        var threads = new Thread[n];
        for (int t = 0; t < n; t++)
        {
            int depth = DepthOf(t, n);
            var loop = loops[t] = new EventLoop(t);
            threads[t] = new Thread(() => Alpha(depth, loop, end)) { Name = $"big-{t}" };
        }
        foreach (var t in threads) t.Start();
        foreach (var t in threads) t.Join();
        var total = new Tally();
        foreach (var l in loops) total.Add(l.Tally);
        Program.Out($"{total} threads={n}");
        return 0;
    }

    /// Recursion depth of thread t of n: spread evenly over 5..40.
    public static int DepthOf(int t, int n) => n <= 1 ? 5 : 5 + t * 35 / (n - 1);

    // The "+ 1" after each call keeps the calls out of tail position, so the JIT cannot turn
    // them into tail calls and every level stays on the stack.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Alpha(int depth, EventLoop loop, long end)
    {
        if (depth <= 0) return Emit(loop, end);
        long r = Beta(depth - 1, loop, end);
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Beta(int depth, EventLoop loop, long end)
    {
        if (depth <= 0) return Emit(loop, end);
        long r = Gamma(depth - 1, loop, end);
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Gamma(int depth, EventLoop loop, long end)
    {
        if (depth <= 0) return Emit(loop, end);
        long r = Alpha(depth - 1, loop, end);
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Emit(EventLoop loop, long end)
    {
        var log = WorkloadEventSource.Log;
        int i = 0;
        while (true)
        {
            if ((i & 63) == 0 && Stopwatch.GetTimestamp() >= end) break;
            switch (i % 3)
            {
                case 0: LeafOne(loop, log, i); break;
                case 1: LeafTwo(loop, log, i); break;
                default: LeafThree(loop, log, i); break;
            }
            i++;
        }
        return i;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void LeafOne(EventLoop loop, WorkloadEventSource log, int i)
    {
        loop.One(log, i);
        GC.KeepAlive(log); // not a tail call: the leaf stays on the stack
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void LeafTwo(EventLoop loop, WorkloadEventSource log, int i)
    {
        loop.One(log, i);
        GC.KeepAlive(log); // not a tail call: the leaf stays on the stack
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void LeafThree(EventLoop loop, WorkloadEventSource log, int i)
    {
        loop.One(log, i);
        GC.KeepAlive(log); // not a tail call: the leaf stays on the stack
    }
}
