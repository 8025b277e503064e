// clrspy's Razor Pages workload under a Microsoft.* namespace (a copy of testapps/RazorApp): a page that renders a partial with tag helpers in a loop, so
// its stacks are 60+ frames of ASP.NET deep, with the CPU spent far inside.
//
//   dotnet RazorShop.dll [--port N]     (default: a free port on 127.0.0.1)
//
// Prints "ready pid=<pid> port=<port>" on stdout once it listens.
//   GET /           the Index page: 40 rows, each the partial _Row with an <input asp-for>
//                   and the app's <score> tag helper, which ranks the row's readings through
//                   Microsoft.Samples.RazorShop.Scoring.Ranker`2 (LINQ over nested generic collections) and
//                   compiles a small expression (LambdaCompiler.CreateDelegate)
using System.Diagnostics;
using System.Net;

var port = 0;
for (var i = 0; i + 1 < args.Length; i++)
{
    if (args[i] == "--port" && int.TryParse(args[i + 1], out var p)) port = p;
}

var builder = WebApplication.CreateBuilder(args);
builder.Logging.ClearProviders();
builder.WebHost.ConfigureKestrel(k => k.Listen(IPAddress.Loopback, port));
builder.Services.AddRazorPages();
var app = builder.Build();
app.MapRazorPages();
await app.StartAsync();
var address = app.Urls.FirstOrDefault() ?? "";
var bound = new Uri(address).Port;
Console.WriteLine($"ready pid={Environment.ProcessId} port={bound}");
Console.Out.Flush();
await app.WaitForShutdownAsync();
