//! The well-known counter sources of .NET 8, 9 and 10 and their counters or instruments, for
//! `clrspy counters list` (a process may publish others: any EventSource's counters and any
//! meter can be asked for by name).

/// How a source publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// An EventSource's EventCounters.
    EventCounters,
    /// A System.Diagnostics.Metrics meter.
    Meter,
}

/// A well-known source.
#[derive(Clone, Copy, Debug)]
pub struct KnownSource {
    /// The EventSource or meter name.
    pub name: &'static str,
    /// EventCounters or meter.
    pub kind: SourceKind,
    /// The runtimes that publish it (`.NET 8+`).
    pub since: &'static str,
    /// Its counters or instruments: (name, what it measures).
    pub counters: &'static [(&'static str, &'static str)],
}

/// The well-known sources, meters first where a name has both.
pub const KNOWN: &[KnownSource] = &[
    KnownSource {
        name: "System.Runtime",
        kind: SourceKind::Meter,
        since: ".NET 9+",
        counters: &[
            (
                "dotnet.process.cpu.time",
                "CPU time, by cpu.mode user/system (s)",
            ),
            ("dotnet.process.cpu.count", "processors the process may use"),
            ("dotnet.process.memory.working_set", "working set (By)"),
            ("dotnet.gc.collections", "GCs, by gc.heap.generation"),
            ("dotnet.gc.heap.total_allocated", "bytes allocated (By)"),
            (
                "dotnet.gc.last_collection.heap.size",
                "heap size after the last GC, by generation (By)",
            ),
            (
                "dotnet.gc.last_collection.heap.fragmentation.size",
                "fragmentation after the last GC (By)",
            ),
            (
                "dotnet.gc.last_collection.memory.committed_size",
                "memory committed by the GC (By)",
            ),
            ("dotnet.gc.pause.time", "time paused in GC (s)"),
            ("dotnet.jit.compiled_methods", "methods jitted"),
            ("dotnet.jit.compiled_il.size", "IL bytes jitted (By)"),
            ("dotnet.jit.compilation.time", "time in the JIT (s)"),
            (
                "dotnet.monitor.lock_contentions",
                "contended lock acquisitions",
            ),
            ("dotnet.thread_pool.thread.count", "thread pool threads"),
            ("dotnet.thread_pool.work_item.count", "work items completed"),
            ("dotnet.thread_pool.queue.length", "work items queued"),
            ("dotnet.timer.count", "active timers"),
            ("dotnet.assembly.count", "assemblies loaded"),
            ("dotnet.exceptions", "exceptions thrown, by error.type"),
        ],
    },
    KnownSource {
        name: "System.Runtime",
        kind: SourceKind::EventCounters,
        since: ".NET Core 3.0+ (ask with EventCounters\\System.Runtime on .NET 9+)",
        counters: &[
            ("cpu-usage", "CPU usage (%)"),
            ("working-set", "working set (MB)"),
            ("gc-heap-size", "GC heap size (MB)"),
            ("gen-0-gc-count", "gen0 GCs per interval"),
            ("gen-1-gc-count", "gen1 GCs per interval"),
            ("gen-2-gc-count", "gen2 GCs per interval"),
            ("time-in-gc", "time in GC since the last GC (%)"),
            ("gen-0-size", "gen0 size (B)"),
            ("gen-1-size", "gen1 size (B)"),
            ("gen-2-size", "gen2 size (B)"),
            ("loh-size", "LOH size (B)"),
            ("poh-size", "POH size (B)"),
            ("alloc-rate", "bytes allocated per interval (B)"),
            ("gc-fragmentation", "GC fragmentation (%)"),
            ("gc-committed", "GC committed bytes (MB)"),
            ("assembly-count", "assemblies loaded"),
            ("exception-count", "exceptions per interval"),
            ("threadpool-thread-count", "thread pool threads"),
            (
                "monitor-lock-contention-count",
                "lock contentions per interval",
            ),
            ("threadpool-queue-length", "thread pool queue length"),
            (
                "threadpool-completed-items-count",
                "work items completed per interval",
            ),
            ("active-timer-count", "active timers"),
            ("il-bytes-jitted", "IL bytes jitted (B)"),
            ("methods-jitted-count", "methods jitted"),
            ("time-in-jit", "time in the JIT per interval (ms)"),
        ],
    },
    KnownSource {
        name: "Microsoft.AspNetCore.Hosting",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[
            (
                "http.server.request.duration",
                "request duration histogram (s)",
            ),
            ("http.server.active_requests", "requests in progress"),
        ],
    },
    KnownSource {
        name: "Microsoft.AspNetCore.Hosting",
        kind: SourceKind::EventCounters,
        since: ".NET Core 3.0+",
        counters: &[
            ("requests-per-second", "requests per interval"),
            ("total-requests", "requests since start"),
            ("current-requests", "requests in progress"),
            ("failed-requests", "failed requests since start"),
        ],
    },
    KnownSource {
        name: "Microsoft.AspNetCore.Server.Kestrel",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[
            ("kestrel.active_connections", "open connections"),
            (
                "kestrel.connection.duration",
                "connection duration histogram (s)",
            ),
            ("kestrel.queued_connections", "connections waiting to start"),
            (
                "kestrel.queued_requests",
                "HTTP/2 and HTTP/3 requests waiting to start",
            ),
            (
                "kestrel.rejected_connections",
                "connections rejected (limit reached)",
            ),
            (
                "kestrel.tls_handshake.duration",
                "TLS handshake duration histogram (s)",
            ),
            (
                "kestrel.active_tls_handshakes",
                "TLS handshakes in progress",
            ),
            (
                "kestrel.upgraded_connections",
                "connections upgraded (WebSockets)",
            ),
        ],
    },
    KnownSource {
        name: "Microsoft.AspNetCore.Routing",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[(
            "aspnetcore.routing.match_attempts",
            "route matching attempts",
        )],
    },
    KnownSource {
        name: "Microsoft.AspNetCore.RateLimiting",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[
            (
                "aspnetcore.rate_limiting.active_request_leases",
                "leases held",
            ),
            (
                "aspnetcore.rate_limiting.request_lease.duration",
                "lease duration histogram (s)",
            ),
            (
                "aspnetcore.rate_limiting.queued_requests",
                "requests waiting for a lease",
            ),
            (
                "aspnetcore.rate_limiting.request.time_in_queue",
                "time waiting for a lease (s)",
            ),
            (
                "aspnetcore.rate_limiting.requests",
                "lease attempts, by result",
            ),
        ],
    },
    KnownSource {
        name: "System.Net.Http",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[
            ("http.client.open_connections", "open connections, by state"),
            (
                "http.client.connection.duration",
                "connection duration histogram (s)",
            ),
            (
                "http.client.request.duration",
                "request duration histogram (s)",
            ),
            (
                "http.client.request.time_in_queue",
                "time waiting for a connection (s)",
            ),
            ("http.client.active_requests", "requests in progress"),
        ],
    },
    KnownSource {
        name: "System.Net.NameResolution",
        kind: SourceKind::Meter,
        since: ".NET 8+",
        counters: &[("dns.lookup.duration", "DNS lookup duration histogram (s)")],
    },
];
