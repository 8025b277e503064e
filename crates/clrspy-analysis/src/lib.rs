//! clrspy's analysis layer: one streaming pass over a trace feeds the models behind the
//! reports — samples (CPU and waiting, per thread and stack), allocations, exceptions,
//! contention, GCs, threads — while method and module events build the symbols. Stacks are
//! interned as they come and named at the end (the rundown comes last), so memory grows with
//! distinct stacks, methods and types, never with the number of events.
//!
//! ```no_run
//! use clrspy_analysis::{Analysis, Options};
//! let mut reader = nettrace::StreamReader::from_read(std::fs::File::open("t.nettrace")?)?;
//! let mut analysis = Analysis::run(&mut reader, Options::default(), &mut |_| ())?;
//! let profile = analysis.profile(&Default::default());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod alloc;
pub mod contention;
pub mod cpu;
pub mod event;
pub mod exceptions;
pub mod gc;
pub mod inventory;
pub mod profile;
pub mod stacks;
pub mod symbols;
pub mod threads;

use clr_events::{known_provider, layout_for, KnownProvider, ThreadSampleType};
use nettrace::{ByteSource, Reader};
use rustc_hash::FxHashMap;

pub use event::EventCtx;
pub use profile::{Metric, StackFilter, StackProfile};

use event::{rundown, runtime};

/// The provider of the events `clrspy record` adds to a trace (thread CPU times, names,
/// module maps).
pub const CLRSPY_PROVIDER: &str = "clrspy";

/// clrspy's own event ids.
pub mod clrspy_events {
    /// ThreadCpu { ThreadID, CpuTimeNs, State }.
    pub const THREAD_CPU: u32 = 1;
    /// ThreadName { ThreadID, Name }.
    pub const THREAD_NAME: u32 = 2;
    /// SamplerInfo { IntervalMs, Source }.
    pub const SAMPLER_INFO: u32 = 3;
    /// Tick { }: every thread's CPU time was read at this time.
    pub const TICK: u32 = 4;
    /// ModuleMap { Start, End, Offset, Path }: an executable mapping of the process.
    pub const MODULE_MAP: u32 = 5;
}

/// What to analyse.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only events at or after this time (ns since the trace start).
    pub from_ns: Option<i64>,
    /// Only events before this time.
    pub to_ns: Option<i64>,
}

/// How the provider of an event was classified (cached per metadata id).
#[derive(Clone, Copy, Debug)]
enum Source {
    Known(KnownProvider),
    Clrspy,
    Other,
}

/// The result of one pass.
#[derive(Debug)]
pub struct Analysis {
    /// Interned stacks.
    pub stacks: stacks::StackTable,
    /// Method and module ranges, then frame names.
    pub symbols: symbols::Symbols,
    /// Samples.
    pub cpu: cpu::CpuModel,
    /// Allocation ticks.
    pub alloc: alloc::AllocModel,
    /// Exceptions.
    pub exceptions: exceptions::ExceptionModel,
    /// Lock contention.
    pub contention: contention::ContentionModel,
    /// GCs.
    pub gc: gc::GcModel,
    /// Threads and the thread pool.
    pub threads: threads::ThreadModel,
    /// Events read.
    pub events: u64,
    /// Events of each known provider that some model used and that failed to decode.
    pub undecodable: u64,
    /// Trace duration (first to last event), ns.
    pub duration_ns: i64,
    /// The sampling interval, ns.
    pub sampling_interval_ns: u64,
    /// Events the runtime lost.
    pub dropped_events: u64,
    /// Why the pass stopped early (a damaged or cut trace), when it did.
    pub read_error: Option<String>,
    /// True when the trace has rundown (method names for code jitted before the session).
    pub has_rundown: bool,
    /// True when the trace has clrspy's thread CPU readings.
    pub has_thread_cpu: bool,
    /// The process id.
    pub process_id: Option<u64>,
    options: Options,
    pointer_size: u8,
    sources: FxHashMap<u32, (Source, String)>,
    first_ns: Option<i64>,
    last_ns: i64,
}

impl Analysis {
    /// An empty analysis for a trace with this header.
    pub fn new(header: &nettrace::TraceHeader, options: Options) -> Analysis {
        let interval = u64::from(header.sampling_interval_ns.unwrap_or(1_000_000)).max(1);
        Analysis {
            stacks: stacks::StackTable::new(),
            symbols: symbols::Symbols::new(),
            cpu: cpu::CpuModel::new(interval),
            alloc: alloc::AllocModel::new(),
            exceptions: exceptions::ExceptionModel::new(),
            contention: contention::ContentionModel::new(),
            gc: gc::GcModel::new(),
            threads: threads::ThreadModel::new(),
            events: 0,
            undecodable: 0,
            duration_ns: 0,
            sampling_interval_ns: interval,
            dropped_events: 0,
            read_error: None,
            has_rundown: false,
            has_thread_cpu: false,
            process_id: header.process_id,
            options,
            pointer_size: header.pointer_size,
            sources: FxHashMap::default(),
            first_ns: None,
            last_ns: 0,
        }
    }

    /// Reads every event of `reader`; `progress` gets the bytes read so far now and then. A
    /// damaged trace is analysed up to the damage ([`Analysis::read_error`] says where).
    pub fn run<S: ByteSource>(
        reader: &mut Reader<S>,
        options: Options,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Analysis, nettrace::Error> {
        let mut a = Analysis::new(reader.header(), options);
        loop {
            match reader.next_event() {
                Ok(Some(ev)) => {
                    a.event(&ev);
                    if a.events.is_multiple_of(65_536) {
                        progress(ev.offset);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    if a.events == 0 {
                        return Err(e);
                    }
                    a.read_error = Some(e.to_string());
                    break;
                }
            }
        }
        a.dropped_events = reader.stats().dropped_events;
        a.finish();
        Ok(a)
    }

    fn source(&mut self, ev: &nettrace::Event<'_>) -> Source {
        let id = ev.metadata.metadata_id;
        let p = ev.provider();
        // V6 traces may reuse a metadata id after a flush: check the provider too.
        if let Some((s, name)) = self.sources.get(&id) {
            if name == p {
                return *s;
            }
        }
        let s = match known_provider(p) {
            Some(k) => Source::Known(k),
            None if p == CLRSPY_PROVIDER => Source::Clrspy,
            None => Source::Other,
        };
        self.sources.insert(id, (s, p.to_string()));
        s
    }

    fn in_range(&self, ts: i64) -> bool {
        self.options.from_ns.is_none_or(|f| ts >= f) && self.options.to_ns.is_none_or(|t| ts < t)
    }

    /// Feeds one event.
    pub fn event(&mut self, ev: &nettrace::Event<'_>) {
        self.events += 1;
        let ts = ev.timestamp_ns();
        self.first_ns.get_or_insert(ts);
        self.last_ns = self.last_ns.max(ts);
        let kind = match self.source(ev) {
            Source::Known(k) => k,
            Source::Clrspy => return self.clrspy_event(ev, ts),
            Source::Other => return,
        };
        let id = ev.event_id();
        if !event::wanted(kind, id) {
            return;
        }
        if kind == KnownProvider::SampleProfiler {
            if !self.in_range(ts) {
                return;
            }
            let managed =
                ThreadSampleType::from_payload(ev.payload) == Some(ThreadSampleType::Managed);
            let stack = self.stacks.intern(&ev.stack);
            self.cpu.sample(ts, ev.thread_id, stack, managed);
            return;
        }
        let Some(layout) = layout_for(kind, id, ev.version()) else {
            return;
        };
        let fields = layout.decode(ev.payload, self.pointer_size);
        if fields.error.is_some() && fields.fields.is_empty() {
            self.undecodable += 1;
            return;
        }
        let is_method = matches!(
            (kind, id),
            (
                KnownProvider::Runtime,
                runtime::METHOD_LOAD_VERBOSE | runtime::METHOD_UNLOAD_VERBOSE
            ) | (
                KnownProvider::Rundown,
                rundown::METHOD_DC_START_VERBOSE | rundown::METHOD_DC_STOP_VERBOSE
            )
        );
        if is_method {
            if kind == KnownProvider::Rundown {
                self.has_rundown = true;
            }
            self.symbols.add_method(
                fields.u64("MethodID").unwrap_or(0),
                fields.u64("MethodStartAddress").unwrap_or(0),
                fields.u64("MethodSize").unwrap_or(0),
                fields.str("MethodNamespace").unwrap_or(""),
                fields.str("MethodName").unwrap_or(""),
                fields.str("MethodSignature").unwrap_or(""),
            );
            return;
        }
        if (kind, id) == (KnownProvider::Runtime, runtime::R2R_GET_ENTRY_POINT) {
            self.symbols.add_entry_point(
                fields.u64("MethodID").unwrap_or(0),
                fields.u64("EntryPoint").unwrap_or(0),
                fields.str("MethodNamespace").unwrap_or(""),
                fields.str("MethodName").unwrap_or(""),
                fields.str("MethodSignature").unwrap_or(""),
            );
            return;
        }
        if kind != KnownProvider::Runtime || !self.in_range(ts) {
            return;
        }
        let needs_stack = matches!(
            id,
            runtime::GC_ALLOCATION_TICK | runtime::EXCEPTION_START | runtime::CONTENTION_START
        );
        let stack = if needs_stack {
            self.stacks.intern(&ev.stack)
        } else {
            None
        };
        let ctx = EventCtx {
            provider: kind,
            id,
            version: ev.version(),
            ts_ns: ts,
            thread_id: ev.thread_id,
            fields: &fields,
            stack,
        };
        match id {
            runtime::GC_ALLOCATION_TICK => self.alloc.on_tick(&ctx),
            runtime::EXCEPTION_START => self.exceptions.on_throw(&ctx),
            runtime::EXCEPTION_CATCH_START => self.exceptions.on_catch(&ctx),
            runtime::CONTENTION_START => self.contention.on_start(&ctx),
            runtime::CONTENTION_STOP => self.contention.on_stop(&ctx),
            runtime::GC_START
            | runtime::GC_STOP
            | runtime::GC_HEAP_STATS
            | runtime::GC_SUSPEND_EE_START
            | runtime::GC_RESTART_EE_STOP => self.gc.on_event(&ctx),
            _ => self.threads.on_event(&ctx),
        }
    }

    fn clrspy_event(&mut self, ev: &nettrace::Event<'_>, ts: i64) {
        let d = ev.decode_with_metadata();
        let get = |name: &str| d.fields.iter().find(|f| f.name == name).map(|f| &f.value);
        let u = |name: &str| get(name).and_then(|v| v.as_u64());
        match ev.event_id() {
            clrspy_events::THREAD_CPU => {
                if let (Some(t), Some(c)) = (u("ThreadID"), u("CpuTimeNs")) {
                    self.has_thread_cpu = true;
                    self.cpu.thread_cpu(ts, t, c);
                }
            }
            clrspy_events::THREAD_NAME => {
                if let (Some(t), Some(n)) = (u("ThreadID"), get("Name").and_then(|v| v.as_str())) {
                    self.threads.name(t, n);
                }
            }
            clrspy_events::TICK => self.cpu.tick(ts),
            clrspy_events::MODULE_MAP => {
                if let (Some(start), Some(end), Some(path)) =
                    (u("Start"), u("End"), get("Path").and_then(|v| v.as_str()))
                {
                    self.symbols.add_module(symbols::ModuleMapping {
                        start,
                        end,
                        file_offset: u("Offset").unwrap_or(0),
                        path: path.to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    /// Ends the pass: names methods, weighs the last samples.
    pub fn finish(&mut self) {
        self.cpu.finish();
        self.symbols.finish();
        self.duration_ns = self.first_ns.map_or(0, |f| self.last_ns - f);
    }

    /// The samples as resolved, weighed stacks.
    pub fn profile(&mut self, filter: &StackFilter) -> StackProfile {
        StackProfile::build(&self.cpu, &self.stacks, &mut self.symbols, filter)
    }

    /// The length of the analysed window: the trace's first to last event, clipped to the
    /// options' `from_ns`/`to_ns` (0 for an empty trace or window). Rates and shares of time
    /// are over this.
    pub fn window_ns(&self) -> i64 {
        let Some(first) = self.first_ns else {
            return 0;
        };
        let start = self.options.from_ns.map_or(first, |f| f.max(first));
        let end = self
            .options
            .to_ns
            .map_or(self.last_ns, |t| t.min(self.last_ns));
        (end - start).max(0)
    }

    /// The trace's pointer size.
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }

    /// Resolves a stack to frame names, leaf first.
    pub fn frames(&mut self, stack: Option<stacks::StackId>) -> Vec<String> {
        let Some(s) = stack else { return Vec::new() };
        let ips: Vec<u64> = self.stacks.ips(s).to_vec();
        ips.into_iter()
            .map(|ip| {
                let f = self.symbols.resolve(ip);
                self.symbols.frame(f).name.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_are_the_runtimes() {
        let rt = KnownProvider::Runtime;
        for (id, name) in [
            (runtime::GC_START, "GC/Start"),
            (runtime::GC_STOP, "GC/Stop"),
            (runtime::GC_HEAP_STATS, "GC/HeapStats"),
            (runtime::GC_SUSPEND_EE_START, "GC/SuspendEEStart"),
            (runtime::GC_RESTART_EE_STOP, "GC/RestartEEStop"),
            (runtime::GC_ALLOCATION_TICK, "GC/AllocationTick"),
            (runtime::EXCEPTION_START, "Exception/Start"),
            (runtime::EXCEPTION_CATCH_START, "ExceptionCatch/Start"),
            (runtime::CONTENTION_START, "Contention/Start"),
            (runtime::CONTENTION_STOP, "Contention/Stop"),
            (runtime::METHOD_LOAD_VERBOSE, "Method/LoadVerbose"),
            (runtime::METHOD_UNLOAD_VERBOSE, "Method/UnloadVerbose"),
            (
                runtime::TP_ADJUSTMENT,
                "ThreadPoolWorkerThreadAdjustment/Adjustment",
            ),
            (runtime::TP_WORKER_START, "ThreadPoolWorkerThread/Start"),
            (runtime::R2R_GET_ENTRY_POINT, "Method/R2RGetEntryPoint"),
        ] {
            assert_eq!(clr_events::event_name_for(rt, id, 0), Some(name), "id {id}");
        }
        let rd = KnownProvider::Rundown;
        assert_eq!(
            clr_events::event_name_for(rd, rundown::METHOD_DC_STOP_VERBOSE, 0),
            Some("Method/DCStopVerbose")
        );
        assert_eq!(
            clr_events::event_name_for(rd, rundown::METHOD_DC_START_VERBOSE, 0),
            Some("Method/DCStartVerbose")
        );
    }
}
