// clrspy's scenario web API: the symptoms of the runtime's diagnostics tutorials on one
// ASP.NET Core MVC app (controllers, the console logger, the default thread pool).
//
//   dotnet DiagScenarios.dll [--urls http://127.0.0.1:PORT]   (default: a free port on 127.0.0.1)
//
// Prints "ready pid=<pid> port=<port>" on stdout once it listens (after whatever the console
// logger writes; the tests look for the line). Endpoints: Controllers/DiagController.cs and
// testapps/README.md.
using DiagScenarios;

// appsettings.json (log level Warning) is read from beside the dll, wherever it is started.
var builder = WebApplication.CreateBuilder(new WebApplicationOptions
{
    Args = args,
    ContentRootPath = AppContext.BaseDirectory,
});
if (string.IsNullOrEmpty(builder.Configuration["urls"]))
{
    builder.WebHost.UseUrls("http://127.0.0.1:0");
}
builder.Services.AddControllers(o => o.Filters.Add<ServerErrorFilter>());

var app = builder.Build();
app.MapControllers();

await app.StartAsync();
var port = new Uri(app.Urls.First()).Port;
Console.Out.WriteLine($"ready pid={Environment.ProcessId} port={port}");
Console.Out.Flush();
await app.WaitForShutdownAsync();
