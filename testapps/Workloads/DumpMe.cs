// dumpme and bigheap: processes to take core dumps of, for `clrspy dump analyze` and its bench
// (see testapps/README.md).
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Workloads;

/// One leaked object of `dumpme`: a class with a small array of its own.
public sealed class LeakedItem
{
    public int Id;
    public byte[] Payload = new byte[16];
}

public static class DumpMe
{
    public static readonly object LockA = new();
    public static readonly object LockB = new();
    public static readonly List<LeakedItem> Leaked = new();
    /// The two threads of the cycle and the scenario's own: once it passes, each of the two
    /// holds its first lock.
    private static readonly Barrier BothHoldFirst = new(3);
    private static readonly ManualResetEventSlim Thrown = new();
    /// The exception the `thrower` thread caught (kept reachable).
    public static Exception? Caught;

    /// Everything a dump should show at once: a two-lock deadlock with `--threads` (default
    /// 300) more threads queued on its first lock, a thread that threw and caught an exception
    /// with an inner one, and `--count` (default 5000) leaked objects. Prints
    /// `dumpme waiters=<n> leaked=<count>` when all of it is in place, then waits until killed.
    public static int Run(Options o)
    {
        int waiters = o.Threads ?? 300;
        int count = o.Count ?? 5000;
        for (int i = 0; i < count; i++)
        {
            Leaked.Add(new LeakedItem { Id = i });
        }
        var thrower = new Thread(ThrowAndCatch) { Name = "thrower", IsBackground = true };
        thrower.Start();
        var a = new Thread(TakeAThenB) { Name = "lock-a-then-b", IsBackground = true };
        var b = new Thread(TakeBThenA) { Name = "lock-b-then-a", IsBackground = true };
        a.Start();
        b.Start();
        BothHoldFirst.SignalAndWait();
        var queued = new Thread[waiters];
        for (int i = 0; i < waiters; i++)
        {
            queued[i] = new Thread(EnterA) { Name = $"waiter-{i}", IsBackground = true };
            queued[i].Start();
        }
        Thrown.Wait();
        // Every thread blocked: the two of the cycle and each waiter in Monitor.Enter.
        var until = Stopwatch.GetTimestamp() + 30 * Stopwatch.Frequency;
        bool Blocked(Thread t) => (t.ThreadState & System.Threading.ThreadState.WaitSleepJoin) != 0;
        while (!(Blocked(a) && Blocked(b) && queued.All(Blocked)) && Stopwatch.GetTimestamp() < until)
        {
            Thread.Sleep(20);
        }
        // A spinning contender is not yet queued: give the last ones time to sleep.
        Thread.Sleep(300);
        Program.Out($"dumpme waiters={queued.Count(Blocked)} leaked={Leaked.Count}");
        Thread.Sleep(Timeout.Infinite);
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

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void EnterA()
    {
        lock (LockA) { }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void ThrowAndCatch()
    {
        try
        {
            Fail();
        }
        catch (InvalidOperationException e)
        {
            // Blocks inside the handler: once a catch ends, the runtime forgets the thread's
            // exception (dotnet-dump's `pe`: "There is no current managed exception").
            Caught = e;
            Thrown.Set();
            Thread.Sleep(Timeout.Infinite);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Fail()
    {
        throw new InvalidOperationException(
            "dumpme: the original failure", new FormatException("dumpme: the inner cause"));
    }
}

public static class BigHeap
{
    /// Live byte arrays, 64 KB each (under the large object heap's threshold).
    public static readonly List<byte[]> Arrays = new();
    /// Live small objects.
    public static readonly List<LeakedItem> Items = new();

    /// Holds about `--count` MB (default 2048) of managed heap: for each MB, 14 arrays of 64 KB
    /// and 2048 `LeakedItem`s (each 32 bytes plus its 40-byte array). Prints
    /// `bigheap arrays=<n> items=<n>` when allocated, then waits until killed.
    public static int Run(Options o)
    {
        int mb = o.Count ?? 2048;
        for (int m = 0; m < mb; m++)
        {
            for (int i = 0; i < 14; i++)
            {
                var bytes = new byte[64 * 1024];
                bytes[i] = (byte)m;
                Arrays.Add(bytes);
            }
            for (int i = 0; i < 2048; i++)
            {
                Items.Add(new LeakedItem { Id = m * 2048 + i });
            }
        }
        Program.Out($"bigheap arrays={Arrays.Count} items={Items.Count}");
        Thread.Sleep(Timeout.Infinite);
        return 0;
    }
}
