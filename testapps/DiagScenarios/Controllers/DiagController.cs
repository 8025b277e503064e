using System.Diagnostics;
using Microsoft.AspNetCore.Mvc;

namespace DiagScenarios.Controllers;

/// The symptoms, one action each (routes under /api/diag).
[ApiController]
[Route("api/diag")]
public class DiagController : ControllerBase
{
    /// A leak: keeps a new Customer with `kb` KB of data in Processor.Cache (a static field of
    /// another class) for good. Returns how many customers the cache holds.
    [HttpGet("leak/{kb:int}")]
    public ActionResult<string> Leak(int kb)
    {
        var held = Processor.Keep(Math.Clamp(kb, 0, 1024));
        return $"customers={held}";
    }

    /// High CPU: spins `ms` milliseconds in this action, reading the Stopwatch.
    [HttpGet("highcpu/{ms:int}")]
    public ActionResult<string> HighCpu(int ms)
    {
        var limit = Math.Clamp(ms, 0, 60_000);
        var watch = Stopwatch.StartNew();
        long spins = 0;
        while (watch.ElapsedMilliseconds < limit)
        {
            spins++;
        }
        return $"spins={spins}";
    }

    /// Fixed CPU work, for measuring what a profiler costs: `rounds` passes of an integer hash
    /// over 4 KB (no allocation, no clock: a request costs the same CPU whatever happens to
    /// the thread meanwhile, where HighCpu spins for a wall-clock time). Returns the hash.
    [HttpGet("work/{rounds:int}")]
    public ActionResult<string> Work(int rounds)
    {
        Span<byte> data = stackalloc byte[4096];
        for (var i = 0; i < data.Length; i++)
        {
            data[i] = (byte)i;
        }
        ulong hash = 14695981039346656037;
        for (var r = 0; r < Math.Clamp(rounds, 0, 100_000); r++)
        {
            foreach (var b in data)
            {
                hash = (hash ^ b) * 1099511628211;
            }
        }
        return $"hash={hash}";
    }

    /// A deadlock: the first call starts two threads that take Locks.First and Locks.Second in
    /// opposite order and block each other for good. Every call (the first too) then starts
    /// `waiters` threads that block on Locks.First, and blocks its own request there: it never
    /// answers.
    [HttpGet("deadlock")]
    public ActionResult<string> Deadlock([FromQuery] int waiters = 0)
    {
        Locks.FormDeadlock();
        for (var i = 0; i < Math.Clamp(waiters, 0, 1000); i++)
        {
            new Thread(Locks.WaitForFirst) { IsBackground = true }.Start();
        }
        Locks.WaitForFirst();
        return "unreachable";
    }

    /// Sync-over-async: blocks the request's pool thread on the Result of a task that
    /// completes after `ms` milliseconds (default 500).
    [HttpGet("taskresult")]
    public ActionResult<string> TaskResult([FromQuery] int ms = 500)
    {
        var answer = Slow.AnswerAfterAsync(Math.Clamp(ms, 0, 60_000)).Result;
        return $"answer={answer}";
    }

    /// An async action that throws DiagScenarios.ScenarioException after an await; the MVC
    /// exception filter ServerErrorFilter answers 500.
    [HttpGet("throw")]
    public async Task<ActionResult<string>> Throw()
    {
        await Task.Yield();
        throw new ScenarioException("thrown by /api/diag/throw, by design");
    }
}
