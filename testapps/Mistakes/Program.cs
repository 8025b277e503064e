// clrspy's findings workload: pairs of routes, each a known .NET performance mistake and its
// fixed twin doing the same useful work the right way (the work is in Mistakes.cs).
//
//   dotnet Mistakes.dll [--port N]     (default: a free port on 127.0.0.1)
//
// Prints "ready pid=<pid> port=<port>" on stdout once it listens (the tests wait for it).
//   GET /ping                   "pong"
//   GET /expr/percall           Expression.Compile on every request   | /expr/cached   compiled once
//   GET /regex/percall          new Regex(.., Compiled) per request   | /regex/cached  a static Regex
//   GET /sync/result?ms=N       Task.Result on the request thread     | /sync/await    awaits
//   GET /throw/flow?n=N         int.Parse + catch FormatException     | /throw/none    int.TryParse
//   GET /gc/collect             GC.Collect() per request              | /gc/none       no Collect
//   GET /loh/churn?kb=N         a new large byte[] per request        | /loh/pooled    ArrayPool
//   GET /lock/convoy?ms=N       CPU work inside one shared lock       | /lock/none     no lock
//   GET /http/percall           a new HttpClient per request          | /http/shared   a static one
//                               (/http/shared?close=1: to a server that closes each connection)
//   GET /fire/forget            Task.Run not awaited, using what the   | /fire/awaited  awaited
//                               request disposes: ObjectDisposedException unseen
//   GET /thread/percall         a new Thread per request, joined      | /thread/pool   Task.Run
//   GET /io/blocking?ms=N       a synchronous socket read             | /io/async      ReadAsync
//   GET /cpu/burn?ms=N          burns N ms of CPU
//   GET /diff/work              a known cost per request; MISTAKES_REGRESS=cpu,alloc,throw at
//                               start makes the regressed "build" (Regress.cs): `clrspy diff`
using System.Net;
using Mistakes;

var port = 0;
for (var i = 0; i + 1 < args.Length; i++)
{
    if (args[i] == "--port" && int.TryParse(args[i + 1], out var p)) port = p;
}

// The loopback "slow server" behind /io/*: started before the app answers anything.
Io.StartSlowServer();

var builder = WebApplication.CreateSlimBuilder(args);
builder.Logging.ClearProviders();
builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, port));
var app = builder.Build();

app.MapGet("/ping", () => "pong");
// A server that closes every connection after its answer (as an HTTP/1.0 one does).
app.MapGet("/ping/close", (HttpContext ctx) => { ctx.Response.Headers.Connection = "close"; return "pong"; });

app.MapGet("/expr/percall", () => $"expr={Expressions.CompilePerCall(14)}");
app.MapGet("/expr/cached", () => $"expr={Expressions.Cached(14)}");

app.MapGet("/regex/percall", () => $"match={Regexes.ConstructPerCall()}");
app.MapGet("/regex/cached", () => $"match={Regexes.Cached()}");

// Synchronous handler: the request's pool thread blocks in .Result.
app.MapGet("/sync/result", (int? ms) => $"fetched={SyncOverAsync.Blocking(ms ?? 20)}");
app.MapGet("/sync/await", async (int? ms) => $"fetched={await SyncOverAsync.Awaiting(ms ?? 20)}");

app.MapGet("/throw/flow", (int? n) => $"parsed={ControlFlow.ParseWithExceptions(n ?? 10)}");
app.MapGet("/throw/none", (int? n) => $"parsed={ControlFlow.ParseWithTryParse(n ?? 10)}");

app.MapGet("/gc/collect", () => $"sum={Mistakes.Gc.CollectPerCall()}");
app.MapGet("/gc/none", () => $"sum={Mistakes.Gc.NoCollect()}");

app.MapGet("/loh/churn", (int? kb) => $"sum={LargeObjects.AllocatePerCall(kb ?? 256)}");
app.MapGet("/loh/pooled", (int? kb) => $"sum={LargeObjects.Pooled(kb ?? 256)}");

// The spin counts vary; the answers do not (so ab sees every response the same length).
app.MapGet("/lock/convoy", (int? ms) => { Locks.Convoy(ms ?? 2); return "spun"; });
app.MapGet("/lock/none", (int? ms) => { Locks.NoLock(ms ?? 2); return "spun"; });

app.MapGet("/http/percall", async (HttpContext ctx) => $"got={await Http.ClientPerCall(ctx)}");
app.MapGet("/http/shared", async (HttpContext ctx, int? close) => $"got={await Http.SharedClient(ctx, close == 1)}");

app.MapGet("/fire/forget", () => $"state={FireAndForget.Forget()}");
app.MapGet("/fire/awaited", async () => $"state={await FireAndForget.Awaited()}");

app.MapGet("/thread/percall", () => $"sum={Threads.ThreadPerCall()}");
app.MapGet("/thread/pool", async () => $"sum={await Threads.PoolWork()}");

// Synchronous handler: the request's pool thread blocks in a socket read.
app.MapGet("/io/blocking", (int? ms) => $"byte={Io.BlockingRead(ms ?? 10)}");
app.MapGet("/io/async", async (int? ms) => $"byte={await Io.AsyncRead(ms ?? 10)}");

app.MapGet("/cpu/burn", (int? ms) => { Cpu.Burn(ms ?? 20); return "burned"; });

// The answer's length is the same in both builds (ab checks it).
app.MapGet("/diff/work", () => Regress.Handle() >= 0 ? "done" : "odd!");

await app.StartAsync();
var address = app.Urls.First();
var bound = new Uri(address).Port;
Console.Out.WriteLine($"ready pid={Environment.ProcessId} port={bound}");
Console.Out.Flush();
await app.WaitForShutdownAsync();
