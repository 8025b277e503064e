// clrspy's web workload: an ASP.NET Core app with endpoints of known behaviour.
//
//   dotnet WebApp.dll [--port N]     (default: a free port on 127.0.0.1)
//
// Prints "ready pid=<pid> port=<port>" on stdout once it listens (the tests wait for it).
//   GET /            a short text (framework code only)
//   GET /cpu?ms=N    burns N ms of CPU in WebApp.Work.Burn (default 5)
//   GET /alloc?kb=N  allocates N KB in small arrays and returns their checksum (default 256)
//   GET /json        serializes a list of 200 records (framework JSON code)
//   GET /throw       throws and catches a WebApp.WorkException
//   GET /gc?gen=N&blocking=B  GC.Collect(N, Forced, B) (default gen 2, blocking false: a
//                    background GC while the app keeps allocating); returns the GC count after
//   GET /retain?mb=N keeps N MB of 1 KB arrays alive (replacing what an earlier call kept), so
//                    that gen2 is big enough for the runtime to collect it in the background
//   GET /call?path=P calls this app's P (default /) with HttpClient: an outgoing HTTP request
//                    (&host=localhost: by name, so the name is resolved; &port=N: another
//                    port than this app's, e.g. a closed one for a failed connect)
//   GET /log         logs one warning through ILogger (category WebApp.Requests), read by
//                    the Microsoft-Extensions-Logging EventSource when a session enables it
//   GET /sleep?ms=N  blocks its thread N ms in WebApp.Work.Sleep (Thread.Sleep; default 50)
//   GET /fail        throws an unhandled WebApp.WorkException: a 500
//   GET /logconfig?key=K  logs the configuration value K (environment, command line) at
//                    Information (category WebApp.Config): an app that logs a secret it was given
using System.Diagnostics;
using System.Net;

var port = 0;
for (var i = 0; i + 1 < args.Length; i++)
{
    if (args[i] == "--port" && int.TryParse(args[i + 1], out var p)) port = p;
}

var builder = WebApplication.CreateSlimBuilder(args);
builder.Logging.ClearProviders();
// Inert until an EventPipe session enables Microsoft-Extensions-Logging.
builder.Logging.AddEventSourceLogger();
builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, port));
var app = builder.Build();

app.MapGet("/", () => "hello from WebApp");
app.MapGet("/cpu", (int? ms) => WebApp.Work.Burn(ms ?? 5).ToString());
app.MapGet("/alloc", (int? kb) => WebApp.Work.Allocate(kb ?? 256).ToString());
app.MapGet("/json", () => Results.Json(WebApp.Work.Records(), WebApp.WebJson.Default.ListRecord));
app.MapGet("/throw", () => WebApp.Work.ThrowAndCatch());
app.MapGet("/retain", (int? mb) => WebApp.Work.Retain(mb ?? 64).ToString());
app.MapGet("/gc", (int? gen, bool? blocking) => WebApp.Work.Collect(gen ?? 2, blocking ?? false).ToString());
var client = new HttpClient();
app.MapGet("/call", async (string? path, string? host, int? port, HttpContext ctx) =>
    await client.GetStringAsync($"http://{host ?? "127.0.0.1"}:{port ?? ctx.Connection.LocalPort}{path ?? "/"}"));
app.MapGet("/log", (ILoggerFactory f) =>
{
    f.CreateLogger("WebApp.Requests").LogWarning("slow request {Id}", 42);
    return "logged";
});

app.MapGet("/sleep", (int? ms) => WebApp.Work.Sleep(ms ?? 50));
app.MapGet("/fail", string () => throw new WebApp.WorkException("unhandled, by design: a 500"));
app.MapGet("/logconfig", (string key, IConfiguration config, ILoggerFactory f) =>
{
    f.CreateLogger("WebApp.Config").LogInformation("setting {Key} is {Value}", key, config[key]);
    return "logged";
});

await app.StartAsync();
var address = app.Urls.First();
var bound = new Uri(address).Port;
Console.Out.WriteLine($"ready pid={Environment.ProcessId} port={bound}");
Console.Out.Flush();
await app.WaitForShutdownAsync();

namespace WebApp
{
    public sealed record Record(int Id, string Name, double Value);

    [System.Text.Json.Serialization.JsonSerializable(typeof(List<Record>))]
    internal partial class WebJson : System.Text.Json.Serialization.JsonSerializerContext
    {
    }

    public sealed class WorkException(string message) : Exception(message);

    public static class Work
    {
        /// Spins for `ms` milliseconds of wall time on the calling thread.
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        public static long Burn(int ms)
        {
            var sw = Stopwatch.StartNew();
            long x = 0;
            while (sw.ElapsedMilliseconds < ms)
            {
                for (var i = 0; i < 10_000; i++) x = x * 31 + i;
            }
            return x;
        }

        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        public static long Allocate(int kb)
        {
            long sum = 0;
            for (var i = 0; i < kb; i++)
            {
                var a = new byte[1024];
                a[i % 1024] = (byte)i;
                sum += a[i % 1024];
            }
            return sum;
        }

        /// Asks for a GC of generation `gen`; with `blocking` false a gen2 runs as a background GC
        /// (the app uses concurrent GC). Returns the number of GCs of that generation so far.
        public static int Collect(int gen, bool blocking)
        {
            gen = Math.Clamp(gen, 0, GC.MaxGeneration);
            GC.Collect(gen, GCCollectionMode.Forced, blocking);
            return GC.CollectionCount(gen);
        }

        private static byte[][] retained = [];

        /// Keeps `mb` MB of 1 KB arrays alive until the next call; returns how many.
        public static int Retain(int mb)
        {
            var keep = new byte[Math.Clamp(mb, 0, 1024) * 1024][];
            for (var i = 0; i < keep.Length; i++) keep[i] = new byte[1024];
            retained = keep;
            return keep.Length;
        }

        public static List<Record> Records() =>
            Enumerable.Range(0, 200).Select(i => new Record(i, "item " + i, i * 1.5)).ToList();

        /// Blocks the request's thread for `ms` milliseconds (Thread.Sleep: blocked, not CPU).
        [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
        public static string Sleep(int ms)
        {
            Thread.Sleep(Math.Clamp(ms, 0, 60_000));
            return "slept";
        }

        public static string ThrowAndCatch()
        {
            try
            {
                throw new WorkException("expected by the test");
            }
            catch (WorkException e)
            {
                return e.Message;
            }
        }
    }
}
