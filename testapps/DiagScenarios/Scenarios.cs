using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Mvc;
using Microsoft.AspNetCore.Mvc.Filters;

namespace DiagScenarios;

/// One leaked record.
public sealed class Customer(long id, byte[] data)
{
    public long Id { get; } = id;
    public byte[] Data { get; } = data;
}

/// The leak's owner: a static cache that only grows.
public static class Processor
{
    /// Every customer ever kept.
    public static readonly List<Customer> Cache = new();

    /// Adds one customer of `kb` KB; returns how many are kept.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Keep(int kb)
    {
        lock (Cache)
        {
            Cache.Add(new Customer(Cache.Count, new byte[kb * 1024]));
            return Cache.Count;
        }
    }
}

/// The deadlock's two locks and the threads that take them.
public static class Locks
{
    public static readonly object First = new();
    public static readonly object Second = new();
    private static readonly object Start = new();
    private static bool formed;

    /// Starts the two deadlocking threads once and returns when both hold their first lock
    /// and wait for the other's.
    public static void FormDeadlock()
    {
        lock (Start)
        {
            if (formed) return;
            var holding = new CountdownEvent(2);
            new Thread(() => TakeFirstThenSecond(holding)) { IsBackground = true }.Start();
            new Thread(() => TakeSecondThenFirst(holding)) { IsBackground = true }.Start();
            holding.Wait();
            // Both hold one lock now and go for the other at once.
            Thread.Sleep(200);
            formed = true;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void TakeFirstThenSecond(CountdownEvent holding)
    {
        lock (First)
        {
            holding.Signal();
            holding.Wait();
            lock (Second) { }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void TakeSecondThenFirst(CountdownEvent holding)
    {
        lock (Second)
        {
            holding.Signal();
            holding.Wait();
            lock (First) { }
        }
    }

    /// Blocks for good on Locks.First (held by a deadlocked thread).
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void WaitForFirst()
    {
        lock (First) { }
    }
}

/// The sync-over-async scenario's asynchronous work.
public static class Slow
{
    /// Answers 42 after `ms` milliseconds.
    public static async Task<int> AnswerAfterAsync(int ms)
    {
        await Task.Delay(ms);
        return 42;
    }
}

/// What /api/diag/throw throws.
public sealed class ScenarioException(string message) : Exception(message);

/// Turns an exception an action threw into a 500 with its message (MVC handles it: no
/// exception reaches the server).
public sealed class ServerErrorFilter : IExceptionFilter
{
    public void OnException(ExceptionContext context)
    {
        context.Result = new ObjectResult(new { error = context.Exception.Message }) { StatusCode = 500 };
        context.ExceptionHandled = true;
    }
}
