using System.Linq.Expressions;
using System.Runtime.CompilerServices;

namespace Microsoft.Samples.RazorShop.Scoring;

/// A reading of a row: a sensor name and values.
public sealed record Reading(string Sensor, int Slot, double Value);

/// Ranks readings by sensor through LINQ over nested generic collections (long generic names
/// in the stacks), and builds its selector as a compiled expression each call (the framework's
/// LambdaCompiler), as naive dynamic code does.
public sealed class Ranker<TKey, TValue> where TKey : notnull
{
    private readonly Func<TValue, TKey> key;

    public Ranker(Func<TValue, TKey> key) => this.key = key;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public Dictionary<TKey, List<KeyValuePair<int, double>>> Rank(
        IReadOnlyList<TValue> values, Func<TValue, double> weight)
    {
        var selector = CompileSelector();
        return values
            .GroupBy(key)
            .ToDictionary(
                g => g.Key,
                g => g.Select((v, i) => new KeyValuePair<int, double>(i, selector(weight(v))))
                    .OrderByDescending(p => p.Value)
                    .ThenBy(p => p.Key)
                    .ToList());
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static Func<double, double> CompileSelector()
    {
        var x = Expression.Parameter(typeof(double), "x");
        var body = Expression.Add(Expression.Multiply(x, x), Expression.Constant(1.0));
        return Expression.Lambda<Func<double, double>>(body, x).Compile();
    }
}

/// The rows the page shows.
public static class Rows
{
    public static List<Reading> For(int row)
    {
        var list = new List<Reading>(64);
        for (var i = 0; i < 64; i++)
        {
            list.Add(new Reading($"s{(row + i) % 7}", i, (row * 31 + i * 17) % 101));
        }
        return list;
    }
}
