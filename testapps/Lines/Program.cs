// clrspy's line-number workload (issue 51): a hot loop, an allocation and a throw, each on a
// line the tests find by the marker comment at its end.
//
//   dotnet Lines.dll [SECONDS]      (default 5) runs the three until the time is up
using System;
using System.Runtime.CompilerServices;

namespace Lines;

public static class Program
{
    public static int Main(string[] args)
    {
        var seconds = args.Length > 0 && int.TryParse(args[0], out var s) ? s : 5;
        var until = DateTime.UtcNow.AddSeconds(seconds);
        long total = 0;
        while (DateTime.UtcNow < until)
        {
            total += HotLoop(2_000_000);
            total += Allocate(64).Length;
            total += CatchOne();
        }
        Console.WriteLine($"total={total}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long HotLoop(int n)
    {
        long sum = 0;
        for (var i = 0; i < n; i++)
        {
            sum += (i ^ (sum >> 3)) % 7; // line:hot
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static byte[][] Allocate(int n)
    {
        var arrays = new byte[n][];
        for (var i = 0; i < n; i++)
        {
            arrays[i] = new byte[1024 + i]; // line:alloc
        }
        return arrays;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int CatchOne()
    {
        try
        {
            Throw(3);
            return 0;
        }
        catch (InvalidOperationException)
        {
            return 1;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Throw(int n)
    {
        throw new InvalidOperationException($"thrown {n}"); // line:throw
    }
}
