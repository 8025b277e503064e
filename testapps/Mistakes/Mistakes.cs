// The work behind each route of Program.cs: one class per mistake, its two methods the mistake
// and its fixed twin. Every method a route calls is NoInlining so that it is a frame of its own
// on the stacks; their names are a contract with the tests (testapps/README.md, "Mistakes").
using System.Buffers;
using System.Diagnostics;
using System.Linq.Expressions;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Text.RegularExpressions;

namespace Mistakes;

/// Compiling an expression tree on every call (Reflection.Emit each time) against once.
public static class Expressions
{
    private static readonly Func<int, int> Compiled = Build().Compile();

    /// x => x * 3 + 1, built node by node.
    private static Expression<Func<int, int>> Build()
    {
        var x = Expression.Parameter(typeof(int), "x");
        var body = Expression.Add(Expression.Multiply(x, Expression.Constant(3)), Expression.Constant(1));
        return Expression.Lambda<Func<int, int>>(body, x);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int CompilePerCall(int x) => Build().Compile()(x);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Cached(int x) => Compiled(x);
}

/// Constructing a compiled Regex per call (the instance constructor has no cache) against once.
public static class Regexes
{
    private const string Pattern = @"^(\w+)@(\w+)\.com$";
    private const string Input = "someone@example.com";
    private static readonly Regex Email = new(Pattern, RegexOptions.Compiled);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool ConstructPerCall() => new Regex(Pattern, RegexOptions.Compiled).IsMatch(Input);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static bool Cached() => Email.IsMatch(Input);
}

/// Blocking a pool thread on a task's Result against awaiting it.
public static class SyncOverAsync
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> FetchAsync(int ms)
    {
        await Task.Delay(ms);
        return ms;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Blocking(int ms) => FetchAsync(Math.Clamp(ms, 0, 10_000)).Result;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> Awaiting(int ms) => await FetchAsync(Math.Clamp(ms, 0, 10_000));
}

/// Exceptions as control flow (int.Parse in try/catch) against int.TryParse.
public static class ControlFlow
{
    private const int Default = -1;

    private static string Invalid(int i) => "not a number " + i;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ParseWithExceptions(int n)
    {
        long sum = 0;
        for (var i = 0; i < Math.Clamp(n, 0, 10_000); i++)
        {
            int value;
            try
            {
                value = int.Parse(Invalid(i));
            }
            catch (FormatException)
            {
                value = Default;
            }
            sum += value;
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ParseWithTryParse(int n)
    {
        long sum = 0;
        for (var i = 0; i < Math.Clamp(n, 0, 10_000); i++)
        {
            sum += int.TryParse(Invalid(i), out var value) ? value : Default;
        }
        return sum;
    }
}

/// An induced GC (GC.Collect(): a blocking gen2) on every request against none.
public static class Gc
{
    /// A little garbage: 32 arrays of 256 bytes, and their checksum.
    private static long AllocateSome()
    {
        long sum = 0;
        for (var i = 0; i < 32; i++)
        {
            var a = new byte[256];
            a[i] = (byte)i;
            sum += a[i];
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long CollectPerCall()
    {
        var sum = AllocateSome();
        GC.Collect();
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long NoCollect() => AllocateSome();
}

/// A new large-object-heap array per request (gen2 GCs follow) against a pooled one.
public static class LargeObjects
{
    private static long Fill(byte[] buffer, int length)
    {
        long sum = 0;
        for (var i = 0; i < length; i += 1024)
        {
            buffer[i] = (byte)(i >> 10);
            sum += buffer[i];
        }
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long AllocatePerCall(int kb)
    {
        var length = Math.Clamp(kb, 1, 65_536) * 1024;
        var buffer = new byte[length];
        return Fill(buffer, length);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Pooled(int kb)
    {
        var length = Math.Clamp(kb, 1, 65_536) * 1024;
        var buffer = ArrayPool<byte>.Shared.Rent(length);
        try
        {
            return Fill(buffer, length);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}

/// CPU work inside one lock every request shares (a convoy) against the same work unlocked.
public static class Locks
{
    private static readonly object Gate = new();

    /// Spins for `ms` ms of wall time; returns how many rounds.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Spin(int ms)
    {
        var sw = Stopwatch.StartNew();
        long rounds = 0;
        var limit = Math.Clamp(ms, 0, 10_000);
        while (sw.ElapsedMilliseconds < limit) rounds++;
        return rounds;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Convoy(int ms)
    {
        lock (Gate)
        {
            return Spin(ms);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long NoLock(int ms) => Spin(ms);
}

/// A new HttpClient per request (a new connection each time) against one shared client. Both
/// GET this app's own /ping.
public static class Http
{
    private static readonly HttpClient Shared = new();

    private static string PingUri(HttpContext ctx, bool close = false) =>
        $"http://127.0.0.1:{ctx.Connection.LocalPort}/ping{(close ? "/close" : "")}";

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<string> ClientPerCall(HttpContext ctx)
    {
        using var client = new HttpClient();
        return await client.GetStringAsync(PingUri(ctx));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<string> SharedClient(HttpContext ctx, bool close) => await Shared.GetStringAsync(PingUri(ctx, close));
}

/// What a request owns and disposes as it ends, as a scoped DbContext is.
public sealed class RequestResource : IDisposable
{
    private bool disposed;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public int Read()
    {
        ObjectDisposedException.ThrowIf(disposed, this);
        return 42;
    }

    public void Dispose() => disposed = true;
}

/// Work started from a request with Task.Run and never awaited: it runs after the request
/// disposed what it uses, throws ObjectDisposedException into its task, and nobody sees it.
public static class FireAndForget
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string Forget()
    {
        using var resource = new RequestResource();
        _ = Task.Run(async () =>
        {
            await Task.Delay(1);
            resource.Read();
        });
        return "started";
    }

    /// The fixed twin: the same work, awaited before the request ends.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<string> Awaited()
    {
        using var resource = new RequestResource();
        await Task.Run(async () =>
        {
            await Task.Delay(1);
            resource.Read();
        });
        return "done!!";
    }
}

/// A new thread per request for a small piece of work against the thread pool.
public static class Threads
{
    /// The work: a sum over 100,000 ints.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Sum()
    {
        long sum = 0;
        for (var i = 0; i < 100_000; i++) sum += i ^ (i >> 3);
        return sum;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long ThreadPerCall()
    {
        long result = 0;
        var thread = new Thread(() => result = Sum()) { IsBackground = true };
        thread.Start();
        thread.Join();
        return result;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<long> PoolWork() => await Task.Run(Sum);
}

/// A synchronous socket read on a pool thread against ReadAsync. The peer is the app's own
/// loopback "slow server": it reads 4 bytes (a little-endian int, ms), waits ms, writes one byte
/// (42) and closes. The server itself is asynchronous, so it holds no thread while it waits.
public static class Io
{
    public const byte Answer = 42;
    private static TcpListener? listener;

    public static int SlowPort => ((IPEndPoint)listener!.LocalEndpoint).Port;

    public static void StartSlowServer()
    {
        listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start(1024);
        _ = AcceptLoop(listener);
    }

    private static async Task AcceptLoop(TcpListener server)
    {
        while (true)
        {
            TcpClient client;
            try
            {
                client = await server.AcceptTcpClientAsync();
            }
            catch (ObjectDisposedException)
            {
                return;
            }
            _ = ServeSlowly(client);
        }
    }

    private static async Task ServeSlowly(TcpClient client)
    {
        using (client)
        {
            try
            {
                var stream = client.GetStream();
                var request = new byte[4];
                await stream.ReadExactlyAsync(request);
                await Task.Delay(Math.Clamp(BitConverter.ToInt32(request), 0, 10_000));
                await stream.WriteAsync(new[] { Answer });
            }
            catch (Exception e) when (e is IOException or SocketException or EndOfStreamException)
            {
                // The client went away: nothing to answer.
            }
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int BlockingRead(int ms)
    {
        using var client = new TcpClient { NoDelay = true };
        client.Connect(IPAddress.Loopback, SlowPort);
        var stream = client.GetStream();
        stream.Write(BitConverter.GetBytes(ms));
        var answer = new byte[1];
        return stream.Read(answer, 0, 1) == 1 ? answer[0] : -1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> AsyncRead(int ms)
    {
        using var client = new TcpClient { NoDelay = true };
        await client.ConnectAsync(IPAddress.Loopback, SlowPort);
        var stream = client.GetStream();
        await stream.WriteAsync(BitConverter.GetBytes(ms));
        var answer = new byte[1];
        return await stream.ReadAsync(answer) == 1 ? answer[0] : -1;
    }
}

/// Plain CPU work, the reference for the others.
public static class Cpu
{
    /// A tight floating-point loop for `ms` ms of wall time, reading the clock every 10,000
    /// iterations.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Burn(int ms)
    {
        var sw = Stopwatch.StartNew();
        var limit = Math.Clamp(ms, 0, 60_000);
        var x = 1.0;
        while (sw.ElapsedMilliseconds < limit)
        {
            for (var i = 0; i < 10_000; i++) x = x * 1.000001 + 0.5 / (x + 1.0);
        }
        return Math.Round(x, 3);
    }
}
