//! Names users give to what they record: the runtime provider's keywords (dotnet-trace's
//! `--clrevents` names) and named profiles — provider lists for a purpose (CPU, GC,
//! allocations, exceptions, contention, networking, assembly loading, databases). Plain data;
//! [`provider_spec`](crate::provider_spec) parses what users write.

/// A keyword of a provider, by name.
pub(crate) type Keyword = (&'static str, u64);

/// `Microsoft-Windows-DotNETRuntime`'s keywords (the manifest's, with dotnet-trace's aliases).
pub(crate) const RUNTIME_KEYWORDS: &[Keyword] = &[
    ("gc", 0x1),
    ("gchandle", 0x2),
    ("assemblyloader", 0x4),
    ("fusion", 0x4),
    ("loader", 0x8),
    ("jit", 0x10),
    ("ngen", 0x20),
    ("startenumeration", 0x40),
    ("endenumeration", 0x80),
    ("security", 0x400),
    ("appdomainresourcemanagement", 0x800),
    ("jittracing", 0x1000),
    ("interop", 0x2000),
    ("contention", 0x4000),
    ("exception", 0x8000),
    ("threading", 0x10000),
    ("jittedmethodiltonativemap", 0x20000),
    ("overrideandsuppressngenevents", 0x40000),
    ("type", 0x80000),
    ("gcheapdump", 0x100000),
    ("gcsampledobjectallocationhigh", 0x200000),
    ("gcheapsurvivalandmovement", 0x400000),
    ("gcheapcollect", 0x800000),
    ("managedheapcollect", 0x800000),
    ("managedheadcollect", 0x800000), // dotnet-trace's spelling
    ("gcheapandtypenames", 0x1000000),
    ("gcsampledobjectallocationlow", 0x2000000),
    ("perftrack", 0x2000_0000),
    ("stack", 0x4000_0000),
    ("threadtransfer", 0x8000_0000),
    ("debugger", 0x1_0000_0000),
    ("monitoring", 0x2_0000_0000),
    ("codesymbols", 0x4_0000_0000),
    ("eventsource", 0x8_0000_0000),
    ("compilation", 0x10_0000_0000),
    ("compilationdiagnostic", 0x20_0000_0000),
    ("methoddiagnostic", 0x40_0000_0000),
    ("typediagnostic", 0x80_0000_0000),
    ("jitinstrumentationdata", 0x100_0000_0000),
    ("profiler", 0x200_0000_0000),
    ("waithandle", 0x400_0000_0000),
    ("allocationsampling", 0x800_0000_0000),
];

/// `Microsoft-Windows-DotNETRuntimeRundown`'s keywords.
pub(crate) const RUNDOWN_KEYWORDS: &[Keyword] = &[
    ("loader", 0x8),
    ("jit", 0x10),
    ("ngen", 0x20),
    ("startrundown", 0x40),
    ("startenumeration", 0x40),
    ("endrundown", 0x100),
    ("endenumeration", 0x100),
    ("appdomainresourcemanagement", 0x800),
    ("threading", 0x10000),
    ("jittedmethodiltonativemap", 0x20000),
    ("overrideandsuppressngenevents", 0x40000),
    ("perftrack", 0x2000_0000),
    ("stack", 0x4000_0000),
    ("compilation", 0x10_0000_0000),
];

/// `System.Threading.Tasks.TplEventSource`'s keywords.
pub(crate) const TPL_KEYWORDS: &[Keyword] = &[
    ("tasktransfer", 0x1),
    ("tasks", 0x2),
    ("parallel", 0x4),
    ("asynccausalityoperation", 0x8),
    ("asynccausalityrelation", 0x10),
    ("asynccausalitysynchronouswork", 0x20),
    ("taskstops", 0x40),
    ("tasksflowactivityids", 0x80),
    ("asyncmethod", 0x100),
];

/// The keyword table of a provider, when clrspy knows it (case-insensitive provider name).
pub(crate) fn keyword_names(provider: &str) -> Option<&'static [Keyword]> {
    if provider.eq_ignore_ascii_case(crate::RUNTIME_PROVIDER) {
        Some(RUNTIME_KEYWORDS)
    } else if provider.eq_ignore_ascii_case(crate::RUNDOWN_PROVIDER) {
        Some(RUNDOWN_KEYWORDS)
    } else if provider.eq_ignore_ascii_case("System.Threading.Tasks.TplEventSource") {
        Some(TPL_KEYWORDS)
    } else {
        None
    }
}

/// A named profile.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    /// The name.
    pub name: &'static str,
    /// Other names (dotnet-trace's, where it has one for the same purpose).
    pub aliases: &'static [&'static str],
    /// What it is for and what it costs.
    pub description: &'static str,
    /// The providers, in `Name:Keywords:Level[:Args]` form, comma-separated.
    pub providers: &'static str,
}

/// The `aspnet` profile's event sources: requests from `Microsoft.AspNetCore.Hosting`
/// (method, path, start and stop), connections from Kestrel, each request's status from the
/// DiagnosticSource bridge (`HttpRequestIn.Stop`'s `Response.StatusCode`; the
/// `HttpRequestIn.Start` activity ties the request's later events to it), its endpoint from
/// the routing middleware's `ExecutingEndpoint` log, and activity ids flowing through async
/// code (TplEventSource 0x80). The spec of the bare activity name (`HttpRequestIn`) is what
/// makes the host create its activity (it asks `IsEnabled` for that name first): without it a
/// freshly started app writes neither `HttpRequestIn.Start` nor `.Stop`.
macro_rules! aspnet_event_sources {
    () => {
        "Microsoft.AspNetCore.Hosting:0:4,Microsoft-AspNetCore-Server-Kestrel:0:4,System.Threading.Tasks.TplEventSource:0x80:4,Microsoft-Diagnostics-DiagnosticSource:0x3:5:FilterAndPayloadSpecs=\"Microsoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn@Activity1Start:-Request.Method\r\nMicrosoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn.Start@Activity1Start:-Request.Method\r\nMicrosoft.AspNetCore/Microsoft.AspNetCore.Hosting.HttpRequestIn.Stop@Activity1Stop:-Response.StatusCode\",Microsoft-Extensions-Logging:0x2:4:FilterSpecs=\"Microsoft.AspNetCore.Routing.EndpointMiddleware:Information\""
    };
}

/// The event sources of the `aspnet` profile (without its samples), in
/// `Name:Keywords:Level[:Args]` form: what `clrspy report requests` reads.
pub const ASPNET_EVENT_SOURCES: &str = aspnet_event_sources!();

/// The profiles.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "cpu",
        aliases: &["cpu-sampling"],
        description: "CPU samples every 1 ms on every managed thread plus the runtime's common events; clrspy adds each thread's measured CPU time, so CPU and waiting are told apart",
        providers: "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4",
    },
    Profile {
        name: "thread-time",
        aliases: &["dotnet-sampled-thread-time"],
        description: "the same samples read as wall-clock thread time (running and waiting): for slow requests and hangs; see `clrspy report waits`",
        providers: "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4",
    },
    Profile {
        name: "dotnet-common",
        aliases: &[],
        description: "the runtime's common events as dotnet-trace 10 defines them (GC, loader, JIT, exceptions, compilation...), no samples; low overhead",
        providers: "Microsoft-Windows-DotNETRuntime:0x100003801D:4",
    },
    Profile {
        name: "gc-collect",
        aliases: &[],
        description: "GC start/stop, pauses and heap sizes only; very low overhead",
        providers: "Microsoft-Windows-DotNETRuntime:0x1:4,Microsoft-Windows-DotNETRuntimePrivate:0x1:4",
    },
    Profile {
        name: "gc-verbose",
        aliases: &[],
        description: "GCs plus allocation ticks (one per ~100 KB allocated, with type and stack), GC handles and exceptions",
        providers: "Microsoft-Windows-DotNETRuntime:0x8003:5",
    },
    Profile {
        name: "alloc",
        aliases: &["allocations"],
        description: "allocations by type and stack (allocation ticks, type names), GCs, and method names for the stacks",
        providers: "Microsoft-Windows-DotNETRuntime:0x1080019:5",
    },
    Profile {
        name: "exceptions",
        aliases: &[],
        description: "exceptions with their stacks, messages and catch sites",
        providers: "Microsoft-Windows-DotNETRuntime:0x8018:4",
    },
    Profile {
        name: "contention",
        aliases: &["locks"],
        description: "lock contention: who waited where, for how long, on which lock (owner thread on .NET 8+)",
        providers: "Microsoft-Windows-DotNETRuntime:0x4018:5",
    },
    Profile {
        name: "net",
        aliases: &["http", "networking"],
        description: "HTTP requests, DNS, sockets and TLS from the System.Net event sources, with activity ids linking each request to its DNS, connect and TLS work (`report http`), and the thread-time samples (what the threads did meanwhile)",
        providers: "System.Net.Http:0xffffffffffffffff:5,System.Net.NameResolution:0xffffffffffffffff:5,System.Net.Sockets:0xffffffffffffffff:5,System.Net.Security:0xffffffffffffffff:5,System.Threading.Tasks.TplEventSource:0x80:4,Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4",
    },
    Profile {
        name: "aspnet",
        aliases: &["requests"],
        description: "ASP.NET Core requests (method, path, route, status, duration, connection) with thread-time samples, so each slow request's time splits into CPU and blocked calls; see `clrspy report requests`",
        providers: concat!(
            aspnet_event_sources!(),
            ",Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4"
        ),
    },
    Profile {
        name: "loader",
        aliases: &["assemblies"],
        description: "assembly loading: every load attempt, resolution stage and failure (AssemblyLoader, Loader keywords)",
        providers: "Microsoft-Windows-DotNETRuntime:0x1C:5",
    },
    Profile {
        name: "hangs",
        aliases: &["hang", "deadlock"],
        description: "deadlocks, long waits and thread-pool starvation: lock waits with their owners, wait handles (.NET 9+), the pool's injections, and thread-time samples; see `clrspy report hangs`",
        providers: "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x40000014018:5",
    },
    Profile {
        name: "database",
        aliases: &[],
        description: "ADO.NET (SqlClient) and Entity Framework Core commands with their text, through DiagnosticSource, as dotnet-trace's profile",
        providers: "System.Threading.Tasks.TplEventSource:0x80:4,Microsoft-Diagnostics-DiagnosticSource:0x3:5:FilterAndPayloadSpecs=\"SqlClientDiagnosticListener/System.Data.SqlClient.WriteCommandBefore@Activity1Start:-Command;Command.CommandText;ConnectionId;Operation;Command.Connection.ServerVersion;Command.CommandTimeout;Command.CommandType;Command.Connection.ConnectionString;Command.Connection.Database;Command.Connection.DataSource;Command.Connection.PacketSize\r\nSqlClientDiagnosticListener/System.Data.SqlClient.WriteCommandAfter@Activity1Stop:\r\nMicrosoft.EntityFrameworkCore/Microsoft.EntityFrameworkCore.Database.Command.CommandExecuting@Activity2Start:-Command.CommandText;Command;ConnectionId;IsAsync;Command.Connection.ClientConnectionId;Command.Connection.ServerVersion;Command.CommandTimeout;Command.CommandType;Command.Connection.ConnectionString;Command.Connection.Database;Command.Connection.DataSource;Command.Connection.PacketSize\r\nMicrosoft.EntityFrameworkCore/Microsoft.EntityFrameworkCore.Database.Command.CommandExecuted@Activity2Stop:\"",
    },
];

/// A profile by name or alias (case-insensitive).
pub fn find_profile(name: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_and_profiles() {
        let k = keyword_names("microsoft-windows-dotnetruntime").unwrap();
        assert!(k.contains(&("exception", 0x8000)));
        assert!(keyword_names("My-Source").is_none());
        assert_eq!(find_profile("CPU-Sampling").map(|p| p.name), Some("cpu"));
        assert_eq!(
            find_profile("dotnet-sampled-thread-time").map(|p| p.name),
            Some("thread-time")
        );
        assert!(find_profile("nope").is_none());
        let mut names: Vec<&str> = PROFILES.iter().map(|p| p.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PROFILES.len());
    }
}
