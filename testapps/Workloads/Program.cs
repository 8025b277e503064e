// Workloads: a console program with scenarios of known behaviour, traced by clrspy's live tests.
// The names of namespaces, types, methods, threads and printed lines are part of the contract
// described in testapps/README.md; change them only together with that file and the tests.
using System.Diagnostics;
using System.Globalization;

namespace Workloads;

public sealed class Options
{
    public double Seconds = 5;
    public int? Count;
    public int? Threads;
    public double Delay;
    public int? IntervalMs;

    public long DeadlineTimestamp() => Stopwatch.GetTimestamp() + (long)(Seconds * Stopwatch.Frequency);

    public static Options Parse(ReadOnlySpan<string> args)
    {
        var o = new Options();
        for (int i = 0; i < args.Length; i++)
        {
            string name = args[i];
            if (i + 1 >= args.Length) throw new ArgumentException($"option {name} needs a value");
            string value = args[++i];
            switch (name)
            {
                case "--seconds":
                    if (!double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out o.Seconds) || o.Seconds < 0)
                        throw new ArgumentException($"--seconds: not a non-negative number: {value}");
                    break;
                case "--count":
                    o.Count = PositiveInt(name, value);
                    break;
                case "--threads":
                    o.Threads = PositiveInt(name, value);
                    break;
                case "--delay":
                    if (!double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out o.Delay) || o.Delay < 0 || o.Delay > 60)
                        throw new ArgumentException($"--delay: not a number of seconds from 0 to 60: {value}");
                    break;
                case "--interval-ms":
                    o.IntervalMs = PositiveInt(name, value);
                    if (o.IntervalMs > 60_000) throw new ArgumentException($"--interval-ms: at most 60000: {value}");
                    break;
                default:
                    throw new ArgumentException($"unknown option {name}");
            }
        }
        return o;
    }

    private static int PositiveInt(string name, string value)
    {
        if (!int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out int v) || v < 0)
            throw new ArgumentException($"{name}: not a non-negative integer: {value}");
        return v;
    }
}

public static class Program
{
    private static readonly Dictionary<string, Func<Options, int>> Scenarios = new()
    {
        ["cpu"] = Cpu.Run,
        ["alloc"] = Alloc.Run,
        ["exceptions"] = Thrower.Scenario,
        ["contention"] = Contention.Run,
        ["gc"] = Gc.Run,
        ["http"] = Http.Run,
        ["loader"] = Loader.Run,
        ["leak"] = Leak.Run,
        ["heap"] = HeapHolder.Run,
        ["heap10m"] = HeapTree.Run,
        ["hang"] = Deadlock.Run,
        ["hang-busy"] = BusyHang.Run,
        ["eventsource"] = EventWriter.Run,
        ["bigtrace"] = BigTrace.Run,
        ["idle"] = o => { Thread.Sleep(TimeSpan.FromSeconds(o.Seconds)); return 0; },
        ["startup"] = _ => 0,
        ["spawn-later"] = SpawnLater.Run,
        ["throw-later"] = Symptoms.ThrowLater,
        ["pauses"] = Symptoms.Pauses,
        ["cast"] = Caster.Run,
        ["crash"] = Crasher.Run,
        ["meters"] = Meters.Run,
        ["http-client"] = HttpClientCalls.Run,
        ["loadfail"] = LoadFail.Run,
        ["starve"] = Starve.Run,
        ["dumpme"] = DumpMe.Run,
        ["bigheap"] = BigHeap.Run,
    };

    /// Writes one line to stdout and flushes, so a harness reading the pipe sees it at once.
    public static void Out(string line)
    {
        Console.Out.WriteLine(line);
        Console.Out.Flush();
    }

    public static int Main(string[] args)
    {
        CultureInfo.DefaultThreadCurrentCulture = CultureInfo.InvariantCulture;
        if (args.Length == 0 || !Scenarios.TryGetValue(args[0], out var scenario))
        {
            Console.Error.WriteLine("usage: Workloads SCENARIO [--seconds N] [--count N] [--threads N]");
            Console.Error.WriteLine("scenarios: " + string.Join(", ", Scenarios.Keys));
            return 2;
        }
        Options options;
        try
        {
            options = Options.Parse(args.AsSpan(1));
        }
        catch (ArgumentException e)
        {
            Console.Error.WriteLine(e.Message);
            return 2;
        }
        Out($"ready pid={Environment.ProcessId}");
        int rc = scenario(options);
        if (rc == 0) Out("done");
        return rc;
    }
}
