// The workload behind `clrspy diff`'s tests: one route whose cost per request is known, and a
// second "build" of it with known regressions, chosen at start by MISTAKES_REGRESS (a comma
// list; unset or empty: the base build):
//   cpu    Regress.Work does 20% more iterations (its CPU per request grows 20%)
//   alloc  one more long[2048] per request (16 KB + its header)
//   throw  one InvalidOperationException thrown and caught per request
// Everything else (Regress.Steady, the base allocation) is the same in both.
using System.Runtime.CompilerServices;

namespace Mistakes;

public static class Regress
{
    static readonly string[] Asked =
        (Environment.GetEnvironmentVariable("MISTAKES_REGRESS") ?? "").Split(',',
            StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);

    static readonly bool Cpu = Asked.Contains("cpu");
    static readonly bool Alloc = Asked.Contains("alloc");
    static readonly bool Throw = Asked.Contains("throw");

    /// Iterations of Work per request in the base build (Work is 5/9 of the CPU of the two).
    const int WorkIterations = 250_000;
    const int SteadyIterations = 200_000;

    /// One request: Work, Steady, the base allocation, and the regressions asked for.
    public static long Handle()
    {
        var sum = Work(Cpu ? WorkIterations * 6 / 5 : WorkIterations);
        sum += Steady(SteadyIterations);
        sum += Allocate();
        if (Alloc) sum += AllocateMore();
        if (Throw) sum += ThrowAndCatch();
        return sum;
    }

    /// xorshift rounds: the method whose cost the cpu regression raises.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Work(int iterations)
    {
        ulong x = 88172645463325252UL;
        for (var i = 0; i < iterations; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return (long)(x & 0xFFFF);
    }

    /// The same rounds, a fixed number: the cost that does not change.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Steady(int iterations)
    {
        ulong x = 2463534242UL;
        for (var i = 0; i < iterations; i++)
        {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        return (long)(x & 0xFFFF);
    }

    /// The base build's allocation: a char[4096] (8 KB) per request.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Allocate()
    {
        var buffer = new char[4096];
        buffer[17] = 'x';
        return buffer[17];
    }

    /// The alloc regression: a long[2048] (16 KB) per request.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long AllocateMore()
    {
        var buffer = new long[2048];
        buffer[5] = 3;
        return buffer[5];
    }

    /// The throw regression: one exception thrown and caught.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ThrowAndCatch()
    {
        try
        {
            throw new InvalidOperationException("regressed");
        }
        catch (InvalidOperationException)
        {
            return 1;
        }
    }
}
