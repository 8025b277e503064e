// starve: sync-over-async on the thread pool, for `clrspy report hangs` (see testapps/README.md).
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Workloads;

public static class Starve
{
    private static int _finished;

    /// After `--delay` seconds, queues `--threads` (default 4 × cores) pool work items every
    /// 100 ms for `--seconds`, each blocking its worker on `Task.Delay(500).Wait()`: the pool
    /// runs out of workers and must inject more. Prints `starving items=<queued>` when it
    /// stops queueing, then `finished=<n>` once the queued items ran (at most 60 s more).
    public static int Run(Options o)
    {
        Thread.Sleep(TimeSpan.FromSeconds(o.Delay));
        int perTick = o.Threads ?? 4 * Environment.ProcessorCount;
        long deadline = o.DeadlineTimestamp();
        var tasks = new List<Task>();
        while (Stopwatch.GetTimestamp() < deadline)
        {
            for (int i = 0; i < perTick; i++)
            {
                tasks.Add(Task.Run(BlockOnDelay));
            }
            Thread.Sleep(100);
        }
        Program.Out($"starving items={tasks.Count}");
        Task.WaitAll(tasks.ToArray(), TimeSpan.FromSeconds(60));
        Program.Out($"finished={Volatile.Read(ref _finished)}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void BlockOnDelay()
    {
        Task.Delay(500).Wait();
        Interlocked.Increment(ref _finished);
    }
}
