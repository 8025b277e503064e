using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;
using System.Text;

namespace Workloads;

// ------------------------------------------------------------------ cpu

public static class Cpu
{
    public static double Result;

    public static int Run(Options o)
    {
        double seconds = o.Seconds;
        int n = o.Threads ?? 1;
        var burners = new Thread[n];
        for (int t = 0; t < n; t++)
        {
            // One thread is "burner" (the contract of the one-thread scenario); more are
            // "burner-0", "burner-1", ...
            burners[t] = new Thread(() => { double r = Burn(seconds); lock (burners) Result += r; })
            {
                Name = n == 1 ? "burner" : $"burner-{t}",
            };
        }
        foreach (var b in burners) b.Start();
        foreach (var b in burners) b.Join();
        Program.Out(FormattableString.Invariant($"burned seconds={seconds} result={Result:F3}"));
        return 0;
    }

    /// A tight floating-point loop for `seconds`; nothing else runs on the "burner" thread.
    /// The clock is read once per 100,000 iterations (a fraction of a percent of the time).
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Burn(double seconds)
    {
        long end = Stopwatch.GetTimestamp() + (long)(seconds * Stopwatch.Frequency);
        double x = 1.0, acc = 0.0;
        do
        {
            for (int i = 0; i < 100_000; i++)
            {
                x = x * 1.000000001 + 1e-9;
                acc += x / (1.0 + acc * 1e-12);
            }
        } while (Stopwatch.GetTimestamp() < end);
        return acc;
    }
}

// ------------------------------------------------------------------ alloc

/// 64 bytes on a 64-bit runtime: 16 bytes of object header and method table + 6 fields of 8 bytes.
public sealed class AllocatedThing
{
    public long Id;
    public long Value;
    public double X;
    public double Y;
    public double Z;
    public object? Tag;
}

/// Element type of the large arrays: the large object is the array `Workloads.BigThing[]`.
public sealed class BigThing
{
    public int Index;
}

public static class Alloc
{
    /// 16,384 references: 131,096 bytes on 64-bit, above the 85,000 byte large object threshold.
    public const int BigLength = 16_384;
    public const int WindowSize = 1024;

    private static readonly AllocatedThing[] Window = new AllocatedThing[WindowSize];
    private static readonly BigThing[]?[] BigWindow = new BigThing[4][];

    public static int Run(Options o)
    {
        long end = o.DeadlineTimestamp();
        long bigEvery = Stopwatch.Frequency / 100; // one large array per 10 ms
        long nextBig = Stopwatch.GetTimestamp();
        long small = 0, big = 0;
        long now;
        while ((now = Stopwatch.GetTimestamp()) < end)
        {
            for (int i = 0; i < 1000; i++)
            {
                Window[small & (WindowSize - 1)] = MakeThing(small);
                small++;
            }
            if (now >= nextBig)
            {
                BigWindow[big & 3] = MakeBig(big);
                big++;
                nextBig += bigEvery;
            }
        }
        Program.Out($"allocated small={small} big={big}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static AllocatedThing MakeThing(long i) => new AllocatedThing { Id = i, Value = i * 3, X = i, Y = 0.5, Z = -1 };

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static BigThing[] MakeBig(long i)
    {
        var array = new BigThing[BigLength];
        array[0] = new BigThing { Index = (int)i };
        return array;
    }
}

// ------------------------------------------------------------------ exceptions

public sealed class WorkloadException : Exception
{
    public WorkloadException(string message) : base(message) { }
}

public static class Thrower
{
    public static int Scenario(Options o)
    {
        int count = o.Count ?? 1000;
        int caught = Run(count);
        Program.Out($"thrown={caught}");
        return caught == count ? 0 : 1;
    }

    /// Throws and catches exactly `count` WorkloadExceptions; returns how many were caught.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Run(int count)
    {
        int caught = 0;
        for (int i = 0; i < count; i++)
        {
            try
            {
                Throw(i);
            }
            catch (WorkloadException)
            {
                caught++;
            }
        }
        return caught;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Throw(int i)
    {
        throw new WorkloadException("workload failure " + (i % 10).ToString(System.Globalization.CultureInfo.InvariantCulture));
    }
}

// ------------------------------------------------------------------ contention

public static class Contention
{
    public static readonly object Gate = new();
    public static long Acquired;

    public static int Run(Options o)
    {
        int n = o.Threads ?? 4;
        long end = o.DeadlineTimestamp();
        var threads = new Thread[n];
        for (int i = 0; i < n; i++)
        {
            threads[i] = new Thread(() => Fight(end)) { Name = $"fighter-{i}" };
        }
        foreach (var t in threads) t.Start();
        foreach (var t in threads) t.Join();
        Program.Out($"acquired={Acquired} threads={n}");
        return 0;
    }

    /// Takes `Gate` again and again until the deadline, holding it for ~1 ms each time (busy).
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Fight(long endTimestamp)
    {
        long hold = Stopwatch.Frequency / 1000;
        while (Stopwatch.GetTimestamp() < endTimestamp)
        {
            lock (Gate)
            {
                Acquired++;
                long until = Stopwatch.GetTimestamp() + hold;
                while (Stopwatch.GetTimestamp() < until) { }
            }
        }
    }
}

// ------------------------------------------------------------------ gc

public static class Gc
{
    public static int Run(Options o)
    {
        int count = o.Count ?? 10;
        for (int i = 0; i < count; i++)
        {
            Induce();
            Thread.Sleep(50);
        }
        Program.Out($"induced={count}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Induce()
    {
        GC.Collect(2, GCCollectionMode.Forced, blocking: true);
        GC.KeepAlive(Gate); // keeps the call out of tail position: Induce stays on the stack
    }

    private static readonly object Gate = new();
}

// ------------------------------------------------------------------ http

public static class Http
{
    public static int Run(Options o)
    {
        int count = o.Count ?? 50;
        var (listener, port) = StartListener();
        var server = Task.Run(() => Serve(listener));
        int ok = Fetch(port, count).GetAwaiter().GetResult();
        listener.Stop();
        try { server.Wait(TimeSpan.FromSeconds(5)); } catch (AggregateException) { }
        Program.Out($"requests={ok} port={port}");
        return ok == count ? 0 : 1;
    }

    private static (HttpListener, int) StartListener()
    {
        for (int attempt = 0; ; attempt++)
        {
            // HttpListener needs a fixed prefix: borrow a free port from the OS first.
            var probe = new TcpListener(IPAddress.Loopback, 0);
            probe.Start();
            int port = ((IPEndPoint)probe.LocalEndpoint).Port;
            probe.Stop();
            var listener = new HttpListener();
            listener.Prefixes.Add($"http://127.0.0.1:{port}/");
            try
            {
                listener.Start();
                return (listener, port);
            }
            catch (HttpListenerException) when (attempt < 10)
            {
                listener.Close();
            }
        }
    }

    /// Answers every request with the text "ok <path>" until the listener stops.
    public static async Task Serve(HttpListener listener)
    {
        while (listener.IsListening)
        {
            HttpListenerContext ctx;
            try
            {
                ctx = await listener.GetContextAsync().ConfigureAwait(false);
            }
            catch (Exception) when (!listener.IsListening)
            {
                return;
            }
            byte[] body = Encoding.UTF8.GetBytes("ok " + ctx.Request.Url!.AbsolutePath);
            ctx.Response.StatusCode = 200;
            ctx.Response.ContentType = "text/plain";
            ctx.Response.ContentLength64 = body.Length;
            await ctx.Response.OutputStream.WriteAsync(body).ConfigureAwait(false);
            ctx.Response.Close();
        }
    }

    /// GETs http://127.0.0.1:PORT/item/<i> for i in 0..count-1, one after the other.
    public static async Task<int> Fetch(int port, int count)
    {
        using var client = new HttpClient(new SocketsHttpHandler { UseProxy = false });
        int ok = 0;
        for (int i = 0; i < count; i++)
        {
            string text = await client.GetStringAsync($"http://127.0.0.1:{port}/item/{i}").ConfigureAwait(false);
            if (text == $"ok /item/{i}") ok++;
        }
        return ok;
    }
}

// ------------------------------------------------------------------ loader

public static class Loader
{
    public const string MissingName = "Workloads.Missing, Version=1.0.0.0";

    public static int Run(Options o)
    {
        try
        {
            Assembly.Load(MissingName);
            Program.Out("missing=loaded");
            return 1;
        }
        catch (FileNotFoundException)
        {
            Program.Out("missing=FileNotFoundException");
        }

        // A real assembly from disk: this program's own dll, loaded again into a second,
        // collectible load context, used, and unloaded.
        var context = new AssemblyLoadContext("workloads-copy", isCollectible: true);
        string path = typeof(Program).Assembly.Location;
        Assembly copy = context.LoadFromAssemblyPath(path);
        var thing = copy.GetType("Workloads.AllocatedThing")!;
        object? instance = Activator.CreateInstance(thing);
        Program.Out($"loaded={copy.GetName().Name} context={AssemblyLoadContext.GetLoadContext(copy)!.Name} path={path} same_type={instance?.GetType() == typeof(AllocatedThing)}");
        instance = null;
        context.Unload();
        return 0;
    }
}

// ------------------------------------------------------------------ leak

/// 40 bytes on a 64-bit runtime (16 bytes header + 3 fields of 8 bytes).
public sealed class LeakedThing
{
    public long Id;
    public long Born;
    public string? Note;
}

public static class Leak
{
    public static readonly List<LeakedThing> Items = new();

    public static int Run(Options o)
    {
        int perRound = o.Count ?? 10_000;
        int rounds = Math.Max(1, (int)Math.Round(o.Seconds * 10));
        for (int r = 0; r < rounds; r++)
        {
            Grow(perRound);
            Thread.Sleep(100);
        }
        Program.Out($"leaked={Items.Count} rounds={rounds}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Grow(int n)
    {
        long now = Stopwatch.GetTimestamp();
        for (int i = 0; i < n; i++)
        {
            Items.Add(new LeakedThing { Id = Items.Count, Born = now });
        }
    }
}

// ------------------------------------------------------------------ heap

/// 32 bytes on a 64-bit runtime (16 bytes header + 2 fields of 8 bytes).
public sealed class HeapOrder
{
    public long Id;
    public string? Note;
}

public static class HeapHolder
{
    public static readonly List<HeapOrder> Orders = new();

    public static int Run(Options o)
    {
        Grow(o.Count ?? 12_345);
        // Commands on stdin: `grow N` adds N orders; end of input or `quit` ends.
        GrowOnCommand(Grow, () => Orders.Count);
        return 0;
    }

    /// Says `held=N`, then reads commands on stdin until its end or `quit`: `grow N` calls
    /// `grow(N)` and says `held=N` again.
    public static void GrowOnCommand(Action<int> grow, Func<long> held)
    {
        Program.Out($"held={held()}");
        string? line;
        while ((line = Console.In.ReadLine()) != null)
        {
            string[] parts = line.Trim().Split(' ', StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length == 2 && parts[0] == "grow" && int.TryParse(parts[1], System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out int n) && n >= 0)
            {
                grow(n);
                Program.Out($"held={held()}");
            }
            else if (parts.Length == 1 && parts[0] == "quit")
            {
                break;
            }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Grow(int n)
    {
        for (int i = 0; i < n; i++)
        {
            Orders.Add(new HeapOrder { Id = Orders.Count });
        }
    }
}

// ------------------------------------------------------------------ heap10m

/// 32 bytes on a 64-bit runtime (16 bytes header + 2 references).
public sealed class HeapTreeNode
{
    public HeapTreeNode? Left;
    public HeapTreeNode? Right;
}

public static class HeapTree
{
    public static HeapTreeNode? Root;
    public static long Count;

    public static int Run(Options o)
    {
        Grow(o.Count ?? 10_000_000);
        // Commands on stdin, as in `heap`: `grow N` adds N nodes; end of input or `quit` ends.
        HeapHolder.GrowOnCommand(Grow, () => Count);
        return 0;
    }

    /// Adds `n` nodes to the complete binary tree under `Root`: node k (0-based, breadth first)
    /// hangs below the node found by following the bits of k + 1 after its leading one.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Grow(int n)
    {
        for (int i = 0; i < n; i++)
        {
            var node = new HeapTreeNode();
            long k = Count + 1;
            if (Root is null)
            {
                Root = node;
            }
            else
            {
                int bit = 62 - (int)long.LeadingZeroCount(k);
                HeapTreeNode parent = Root;
                for (; bit > 0; bit--)
                {
                    parent = ((k >> bit) & 1) == 0 ? parent.Left! : parent.Right!;
                }
                if ((k & 1) == 0) parent.Left = node; else parent.Right = node;
            }
            Count++;
        }
    }
}

// ------------------------------------------------------------------ hang

public static class Deadlock
{
    public static readonly object LockA = new();
    public static readonly object LockB = new();
    private static readonly Barrier BothHoldFirst = new(2);

    public static int Run(Options o)
    {
        var a = new Thread(TakeAThenB) { Name = "deadlock-a", IsBackground = true };
        var b = new Thread(TakeBThenA) { Name = "deadlock-b", IsBackground = true };
        a.Start();
        b.Start();
        Thread.Sleep(200);
        Program.Out($"deadlocked={(a.IsAlive && b.IsAlive ? "yes" : "no")}");
        if (o.Seconds == 0)
        {
            Thread.Sleep(Timeout.Infinite);
        }
        a.Join(TimeSpan.FromSeconds(o.Seconds));
        if (a.IsAlive || b.IsAlive)
        {
            Program.Out("still hung");
            return 3;
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void TakeAThenB()
    {
        lock (LockA)
        {
            BothHoldFirst.SignalAndWait();
            lock (LockB) { }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void TakeBThenA()
    {
        lock (LockB)
        {
            BothHoldFirst.SignalAndWait();
            lock (LockA) { }
        }
    }
}

// ------------------------------------------------------------------ spawn-later

public static class SpawnLater
{
    /// Waits `--seconds`, then starts `dotnet <this dll> startup` (its environment inherited) and
    /// waits up to 60 s for it.
    public static int Run(Options o)
    {
        Thread.Sleep(TimeSpan.FromSeconds(o.Seconds));
        var psi = new ProcessStartInfo("dotnet") { UseShellExecute = false };
        psi.ArgumentList.Add(typeof(SpawnLater).Assembly.Location);
        psi.ArgumentList.Add("startup");
        using var child = Process.Start(psi);
        if (child == null)
        {
            Program.Out("child failed");
            return 1;
        }
        Program.Out($"child pid={child.Id}");
        if (!child.WaitForExit(TimeSpan.FromSeconds(60)))
        {
            Program.Out("child timeout");
            return 1;
        }
        Program.Out($"child exit={child.ExitCode}");
        return child.ExitCode == 0 ? 0 : 1;
    }
}

// ------------------------------------------------------------------ symptoms (stop triggers)

public static class Symptoms
{
    /// Allocates for `--seconds` (so the trace has something before the symptom), then throws
    /// and catches one System.Net.Sockets.SocketException, then allocates 10 s more.
    public static int ThrowLater(Options o)
    {
        Churn(o.Seconds);
        try
        {
            Throw();
        }
        catch (System.Net.Sockets.SocketException)
        {
            Program.Out("thrown System.Net.Sockets.SocketException");
        }
        Churn(10);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Throw() =>
        throw new System.Net.Sockets.SocketException(10061); // connection refused

    /// Keeps about 3 million small objects alive and forces a blocking gen2 GC every 200 ms for
    /// `--seconds`: each one marks the whole graph, a long pause.
    public static int Pauses(Options o)
    {
        var keep = new List<AllocatedThing[]>();
        for (int i = 0; i < 3000; i++)
        {
            var a = new AllocatedThing[1000];
            for (int k = 0; k < a.Length; k++) a[k] = new AllocatedThing { Id = k, Tag = a };
            keep.Add(a);
        }
        long end = o.DeadlineTimestamp();
        int n = 0;
        while (Stopwatch.GetTimestamp() < end)
        {
            Gc.Induce();
            n++;
            Thread.Sleep(200);
        }
        GC.KeepAlive(keep);
        Program.Out($"induced={n}");
        return 0;
    }

    private static void Churn(double seconds)
    {
        long end = Stopwatch.GetTimestamp() + (long)(seconds * Stopwatch.Frequency);
        var window = new AllocatedThing[1024];
        long i = 0;
        while (Stopwatch.GetTimestamp() < end)
        {
            window[i & 1023] = new AllocatedThing { Id = i };
            i++;
            if ((i & 0xFFFF) == 0) Thread.Sleep(1);
        }
    }
}

// ------------------------------------------------------------------ cast

public static class Caster
{
    public static int Run(Options o)
    {
        int count = o.Count ?? 5;
        int casts = 0, arguments = 0;
        Thread.Sleep(TimeSpan.FromSeconds(o.Delay));
        for (int i = 0; i < count; i++)
        {
            try
            {
                BadCast(i);
            }
            catch (InvalidCastException)
            {
                casts++;
            }
            try
            {
                throw new ArgumentException("not a cast " + i.ToString(System.Globalization.CultureInfo.InvariantCulture));
            }
            catch (ArgumentException)
            {
                arguments++;
            }
            Thread.Sleep(o.IntervalMs ?? 100);
        }
        Program.Out($"cast count={casts} argument={arguments}");
        Thread.Sleep(TimeSpan.FromSeconds(o.Seconds));
        return casts == count && arguments == count ? 0 : 1;
    }

    /// Casts a boxed int to string: throws InvalidCastException.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int BadCast(int i)
    {
        object boxed = i;
        return ((string)boxed).Length;
    }
}

// ------------------------------------------------------------------ crash

/// The unhandled exception of the `crash` scenario.
public sealed class CrashException(string message) : Exception(message);

public static class Crasher
{
    public static int Run(Options o)
    {
        Thread.Sleep(TimeSpan.FromSeconds(o.Seconds));
        Fail(o.Count ?? 42);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Fail(int code)
    {
        throw new CrashException("workload crash " + code.ToString(System.Globalization.CultureInfo.InvariantCulture));
    }
}
