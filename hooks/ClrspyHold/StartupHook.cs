// clrspy's hold hook: loaded by the runtime at startup (DOTNET_STARTUP_HOOKS). At a first-chance
// exception whose type matches one of clrspy's patterns, the throwing thread tells clrspy over
// a Unix socket and waits for its answer, which comes once the dump is written: the dump shows
// the thread inside the throw. Everything comes from the environment clrspy sets:
//   CLRSPY_HOLD_SOCKET  the socket path
//   CLRSPY_HOLD_TYPES   patterns, ';'-separated: a glob over the full type name ('*', '?'), or a
//                       bare type name (no '.', no wildcard) matching the name without namespace
//   CLRSPY_HOLD_MAX     holds at most (default 1)
// Without them the hook does nothing. Errors talking to clrspy are swallowed: the program runs on.
using System;
using System.Net.Sockets;
using System.Threading;

internal class StartupHook
{
    private static string[] s_patterns = Array.Empty<string>();
    private static string s_socket = "";
    private static int s_max = 1;
    private static int s_taken;
    [ThreadStatic] private static bool t_inHook;

    public static void Initialize()
    {
        string? socket = Environment.GetEnvironmentVariable("CLRSPY_HOLD_SOCKET");
        string? types = Environment.GetEnvironmentVariable("CLRSPY_HOLD_TYPES");
        if (string.IsNullOrEmpty(socket) || string.IsNullOrEmpty(types)) return;
        s_socket = socket;
        s_patterns = types.Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
        if (int.TryParse(Environment.GetEnvironmentVariable("CLRSPY_HOLD_MAX"), out int max) && max >= 0) s_max = max;
        AppDomain.CurrentDomain.FirstChanceException += OnFirstChance;
    }

    private static void OnFirstChance(object? sender, System.Runtime.ExceptionServices.FirstChanceExceptionEventArgs e)
    {
        if (t_inHook || Volatile.Read(ref s_taken) >= s_max) return;
        t_inHook = true;
        try
        {
            string name = e.Exception.GetType().FullName ?? "";
            if (!Matches(name)) return;
            if (Interlocked.Increment(ref s_taken) > s_max) return;
            // "SKIP": clrspy's limits refused this one for now (a cooldown): it does not count.
            if (!Hold(name)) Interlocked.Decrement(ref s_taken);
        }
        catch
        {
            // Never let the hook change what the program does.
        }
        finally
        {
            t_inHook = false;
        }
    }

    private static bool Matches(string name)
    {
        foreach (string p in s_patterns)
        {
            if (p.IndexOfAny(new[] { '.', '*', '?' }) < 0)
            {
                int dot = name.LastIndexOf('.');
                if (name == p || name.Substring(dot + 1) == p) return true;
            }
            else if (Glob(p, name)) return true;
        }
        return false;
    }

    private static bool Glob(string p, string s)
    {
        int pi = 0, si = 0, starP = -1, starS = 0;
        while (si < s.Length)
        {
            if (pi < p.Length && (p[pi] == '?' || p[pi] == s[si])) { pi++; si++; }
            else if (pi < p.Length && p[pi] == '*') { starP = pi++; starS = si; }
            else if (starP >= 0) { pi = starP + 1; si = ++starS; }
            else return false;
        }
        while (pi < p.Length && p[pi] == '*') pi++;
        return pi == p.Length;
    }

    /// Tells clrspy "HOLD <pid> <tid> <type> <monotonic ns>" and waits (10 minutes at most) for
    /// its one-line answer; false when it answered SKIP (no dump, and later ones may be taken).
    private static bool Hold(string name)
    {
        long ns = (long)(System.Diagnostics.Stopwatch.GetTimestamp() * (1e9 / System.Diagnostics.Stopwatch.Frequency));
        using var s = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        s.Connect(new UnixDomainSocketEndPoint(s_socket));
        s.ReceiveTimeout = 600_000;
        string line = $"HOLD {Environment.ProcessId} {Environment.CurrentManagedThreadId} {name} {ns}\n";
        s.Send(System.Text.Encoding.UTF8.GetBytes(line));
        var buf = new byte[64];
        int n = s.Receive(buf);
        return !(n >= 4 && System.Text.Encoding.ASCII.GetString(buf, 0, 4) == "SKIP");
    }
}
