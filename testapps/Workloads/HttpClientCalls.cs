// http-client: an HttpClient calling a tiny HTTP/1.1 server this program starts on loopback,
// with a known number of each outcome — the contract `clrspy report http` is tested against
// (crates/clrspy/tests/live/live_http.rs): 200s, 500s, slow 200s, refused connections, a timeout,
// a TLS failure, a name that does not resolve, one that does (localhost), and requests that
// wait in the connection pool's queue. In all: 17 × 200, 3 × 500 and 5 without a response.
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace Workloads;

public static class HttpClientCalls
{
    public const int Ok = 10;
    public const int ServerErrors = 3;
    public const int Slow = 2;
    public const int SlowMs = 300;
    public const int Refused = 2;
    public const int Queued = 4;
    public const int QueuedMs = 100;

    public static int Run(Options o)
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        _ = Task.Run(() => Accept(listener));
        int closed = ClosedPort();
        string at = $"http://127.0.0.1:{port}";
        int failures = 0;
        using (var client = new HttpClient())
        {
            // --count N: N × /ok instead of 10 (a long recording for the report's memory bound).
            for (int i = 0; i < (o.Count ?? Ok); i++) Expect(client, $"{at}/ok/{i % 100}", 200, ref failures);
            for (int i = 0; i < ServerErrors; i++) Expect(client, $"{at}/fail", 500, ref failures);
            for (int i = 0; i < Slow; i++) Expect(client, $"{at}/slow?ms={SlowMs}", 200, ref failures);
            for (int i = 0; i < Refused; i++) Expect(client, $"http://127.0.0.1:{closed}/refused", -1, ref failures);
            Expect(client, $"https://127.0.0.1:{port}/tls", -1, ref failures);
            Expect(client, $"http://localhost:{port}/ok/dns", 200, ref failures);
            Expect(client, "http://nothing.invalid/dns-failure", -1, ref failures);
        }
        using (var timing = new HttpClient { Timeout = TimeSpan.FromMilliseconds(250) })
        {
            Expect(timing, $"{at}/slow?ms=2000", -1, ref failures);
        }
        // One connection for four concurrent requests: three wait in the pool's queue.
        using (var pooled = new HttpClient(new SocketsHttpHandler { MaxConnectionsPerServer = 1 }))
        {
            var calls = Enumerable.Range(0, Queued)
                .Select(_ => pooled.GetAsync($"{at}/slow?ms={QueuedMs}"))
                .ToArray();
            foreach (var c in calls)
            {
                try
                {
                    using var r = c.GetAwaiter().GetResult();
                    if ((int)r.StatusCode != 200) failures++;
                }
                catch (HttpRequestException) { failures++; }
            }
        }
        listener.Stop();
        Program.Out($"port={port} closed={closed} failures={failures}");
        return failures == 0 ? 0 : 1;
    }

    /// A loopback port nothing listens on (borrowed from the OS, then closed): connects are refused.
    private static int ClosedPort()
    {
        var probe = new TcpListener(IPAddress.Loopback, 0);
        probe.Start();
        int port = ((IPEndPoint)probe.LocalEndpoint).Port;
        probe.Stop();
        return port;
    }

    /// GETs `url` and counts a failure unless the status is `status` (-1: no response expected).
    private static void Expect(HttpClient client, string url, int status, ref int failures)
    {
        int got;
        try
        {
            using var r = client.GetAsync(url).GetAwaiter().GetResult();
            got = (int)r.StatusCode;
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
        {
            got = -1;
        }
        if (got != status)
        {
            Console.Error.WriteLine($"{url}: {got}, expected {status}");
            failures++;
        }
    }

    private static async Task Accept(TcpListener listener)
    {
        while (true)
        {
            TcpClient c;
            try { c = await listener.AcceptTcpClientAsync().ConfigureAwait(false); }
            catch (Exception) { return; }
            _ = Task.Run(() => Serve(c));
        }
    }

    /// Answers GETs on one connection until the client closes it: /fail with 500, /slow?ms=N
    /// with 200 after N ms, anything else with 200; a TLS hello (0x16) is hung up on.
    private static async Task Serve(TcpClient c)
    {
        using var _ = c;
        try
        {
            var stream = c.GetStream();
            var buffer = new byte[8192];
            var pending = new StringBuilder();
            while (true)
            {
                int n = await stream.ReadAsync(buffer).ConfigureAwait(false);
                if (n == 0) return;
                if (pending.Length == 0 && buffer[0] == 0x16) return;
                pending.Append(Encoding.ASCII.GetString(buffer, 0, n));
                string text = pending.ToString();
                int end;
                while ((end = text.IndexOf("\r\n\r\n", StringComparison.Ordinal)) >= 0)
                {
                    string head = text[..end];
                    text = text[(end + 4)..];
                    string path = head.Split(' ').ElementAtOrDefault(1) ?? "/";
                    int status = 200;
                    if (path.StartsWith("/fail", StringComparison.Ordinal)) status = 500;
                    else if (path.StartsWith("/slow?ms=", StringComparison.Ordinal))
                        await Task.Delay(int.Parse(path["/slow?ms=".Length..])).ConfigureAwait(false);
                    byte[] body = Encoding.ASCII.GetBytes("ok " + path);
                    string reason = status == 200 ? "OK" : "Internal Server Error";
                    // One write: headers and body in one segment (no delayed-ACK wait).
                    byte[] response = Encoding.ASCII.GetBytes(
                        $"HTTP/1.1 {status} {reason}\r\nContent-Length: {body.Length}\r\nContent-Type: text/plain\r\n\r\n")
                        .Concat(body).ToArray();
                    await stream.WriteAsync(response).ConfigureAwait(false);
                }
                pending.Clear().Append(text);
            }
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException)
        {
            // The client went away (the timed-out request).
        }
    }
}
