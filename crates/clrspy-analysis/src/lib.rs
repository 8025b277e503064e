//! clrspy's analysis layer: one streaming pass over a trace feeds the models behind the
//! reports — samples (CPU and waiting, per thread and stack), allocations, exceptions,
//! contention, GCs, threads — while method and module events build the symbols. Stacks are
//! interned as they come and named at the end (the rundown comes last), so memory grows with
//! distinct stacks, methods and types, never with the number of events.
//!
//! Each model declares the events it reads (`Model::EVENTS`) and reads them through
//! clr-events' typed views; the pass builds one dispatch table from the models
//! [`Options::models`] enables, decodes only what some model wants, and counts payloads a
//! view rejects per event name ([`Analysis::decode_errors`]) instead of reading zeros.
//! Results are read through `&self`; a live view feeds events and takes
//! [`Analysis::snapshot`]s while the pass goes on.
//!
//! ```no_run
//! use clrspy_analysis::{Analysis, Options};
//! let mut reader = nettrace::StreamReader::from_read(std::fs::File::open("t.nettrace")?)?;
//! let analysis = Analysis::run(&mut reader, Options::default(), &mut |_| ())?;
//! let profile = analysis.profile(&Default::default());
//! for f in analysis.decode_errors() {
//!     eprintln!("{} {} events could not be decoded: {}", f.count, f.event, f.first_error);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(unreachable_pub)]

pub mod alloc;
mod app_code;
pub mod callers;
pub mod contention;
pub mod counters;
pub mod cpu;
mod dispatch;
pub mod estimate;
mod event;
pub mod exceptions;
pub mod gc;
pub mod generated;
pub mod grouping;
pub mod heap;
mod inlined;
pub mod inventory;
pub mod log_stream;
mod model_entry;
mod native_names;
pub mod profile;
pub mod r2r;
pub mod registry;
pub mod repair_file;
pub mod rows;
pub mod runqueue;
mod signature;
pub mod sketch;
pub mod source_lines;
pub mod sources;
pub mod stacks;
pub mod symbols;
pub mod task_waits;
pub mod thread_names;
pub mod thread_stacks;
pub mod threads;
pub mod trace_file;

use clr_events::{event_name_for, ViewError};
use nettrace::{ByteSource, Reader};
use rustc_hash::FxHashMap;

use dispatch::{Routes, Source, Target};

pub use event::ModelKind;
pub(crate) use event::{EventContext, Model, ModelEvent, Provider, Wanted};
pub use grouping::JustMyCode;
pub(crate) use model_entry::AnyModel;
pub use profile::{Metric, NativeView, StackFilter, StackProfile};
pub use registry::ModelSet;
pub(crate) use registry::MODELS;

/// The provider of the events `clrspy record` adds to a trace (thread CPU times, names,
/// module maps): [`clr_events::clrspy`] defines them.
pub(crate) const CLRSPY_PROVIDER: &str = clr_events::clrspy::PROVIDER;

/// What to analyse.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only events at or after this time (ns since the trace start; 0 is the start).
    pub from_ns: Option<i64>,
    /// Only events before this time.
    pub to_ns: Option<i64>,
    /// The models to run (all by default; symbols always run).
    pub models: ModelSet,
    /// Where the images of precompiled code are read from, to name it.
    pub images: r2r::ImageSources,
    /// Where one model streams its rows (`--requests-jsonl`): given to the model the sink
    /// names, when it runs.
    pub rows: Option<rows::RowSink>,
}

/// The command line of EventPipe's `ProcessInfo` event.
fn process_info_command_line(ev: &nettrace::Event<'_>) -> Option<String> {
    let d = clr_events::decode(
        ev.provider(),
        1,
        ev.version(),
        ev.payload,
        ev.pointer_size(),
    )?;
    d.str("CommandLine").map(str::to_string)
}

/// The program a command line runs: `app` for `dotnet app.dll ...` (and `corerun app.dll`),
/// else the executable's file name.
pub(crate) fn program_name(command_line: &str) -> Option<String> {
    let mut words = command_line.split_whitespace();
    let first = words.next()?;
    let base = |w: &str| w.rsplit(['/', '\\']).next().unwrap_or(w).to_string();
    let exe = base(first);
    let exe_stem = exe.trim_end_matches(".exe");
    // The hosts that run an app's dll: the app is the dll.
    if exe_stem == "dotnet" || exe_stem == "corerun" {
        if let Some(dll) = words.find(|w| w.ends_with(".dll")) {
            return Some(base(dll).trim_end_matches(".dll").to_string());
        }
    }
    Some(exe_stem.to_string()).filter(|n| !n.is_empty())
}

/// Events of one name that could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DecodeFailures {
    /// The event's name, e.g. `GC/Start`.
    pub event: String,
    /// How many.
    pub count: u64,
    /// The first error.
    pub first_error: String,
}

/// The result of one pass (and, while events still come, the pass itself).
#[derive(Clone, Debug)]
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
    /// Events some model wanted that failed to decode (see [`Analysis::decode_errors`]).
    pub undecodable: u64,
    /// Trace duration (first to last event), ns.
    pub duration_ns: i64,
    /// The sampling interval, ns.
    pub sampling_interval_ns: u64,
    /// Events the runtime lost (for a ring buffer's trace, not the gap at its start: the
    /// ring dropped those by design).
    pub dropped_events: u64,
    /// Why the pass stopped early (a damaged or cut trace), when it did.
    pub read_error: Option<String>,
    /// True when the trace has rundown (method names for code jitted before the session).
    pub has_rundown: bool,
    /// True when the trace has clrspy's thread CPU readings.
    pub has_thread_cpu: bool,
    /// The process id.
    pub process_id: Option<u64>,
    /// The process's name (its entry assembly or executable), from EventPipe's `ProcessInfo`
    /// event's command line, when the trace has one.
    pub process_name: Option<String>,
    /// That command line, whole, when the trace has one.
    pub command_line: Option<String>,
    /// The stop trigger that ended the recording (clrspy's `Trigger` event), if one did.
    pub trigger: Option<inventory::TriggerNote>,
    /// What the ring buffer kept and dropped, for a trace a ring wrote.
    pub ring: Option<clr_events::clrspy::Ring>,
    /// Frames for time no sampled stack shows (runtime threads, idle workers).
    pub groups: profile::Groups,
    /// The whole stacks of the kernel's samples and waits, by their ids in the file.
    pub kernel_stacks: stacks::KernelStacks,
    /// The registry's models held behind a pointer, with their place in the registry.
    extra: Vec<(usize, Box<dyn AnyModel>)>,
    /// Routes of self-describing events by (provider, event) name (`"*"` for any), with the
    /// provider as the model spelt it.
    named: FxHashMap<(&'static str, &'static str), (usize, &'static str)>,
    options: Options,
    pointer_size: u8,
    sources: FxHashMap<u32, Source>,
    dispatch: FxHashMap<(Provider, u32), usize>,
    routes: Vec<Routes>,
    failures: Vec<DecodeFailures>,
    first_ns: Option<i64>,
    last_ns: i64,
}

impl Analysis {
    /// An empty analysis for a trace with this header.
    pub fn new(header: &nettrace::TraceHeader, options: Options) -> Analysis {
        let interval = u64::from(header.sampling_interval_ns.unwrap_or(1_000_000)).max(1);
        let mut a = Analysis {
            stacks: stacks::StackTable::new(),
            symbols: symbols::Symbols::with_images(options.images.clone()),
            cpu: cpu::CpuModel::new(interval)
                .with_window(options.from_ns, options.to_ns)
                .with_cpus(header.cpu_count),
            alloc: alloc::AllocModel::new(),
            exceptions: exceptions::ExceptionModel::new(),
            contention: contention::ContentionModel::new(interval),
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
            process_name: None,
            command_line: None,
            trigger: None,
            ring: None,
            groups: profile::Groups::default(),
            kernel_stacks: stacks::KernelStacks::default(),
            extra: Vec::new(),
            named: FxHashMap::default(),
            options,
            pointer_size: header.pointer_size,
            sources: FxHashMap::default(),
            dispatch: FxHashMap::default(),
            routes: Vec::new(),
            failures: Vec::new(),
            first_ns: None,
            last_ns: 0,
        };
        a.build_dispatch();
        a
    }

    /// The registry's model `M`, when this analysis runs it (boxed models only: the first six
    /// are fields).
    pub fn model<M: 'static>(&self) -> Option<&M> {
        self.extra
            .iter()
            .find_map(|(_, m)| m.as_any().downcast_ref::<M>())
    }

    /// Reads every event of `reader`; `progress` gets the bytes read so far now and then. A
    /// damaged trace is analysed up to the damage ([`Analysis::read_error`] says where).
    pub fn run<S: ByteSource>(
        reader: &mut Reader<S>,
        options: Options,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Analysis, nettrace::Error> {
        let mut a = Analysis::new(reader.header(), options);
        // `for_each_event` hands each event by reference where it is built (returning it from
        // `next_event` copied every event once more).
        let result = reader.for_each_event(|ev| {
            a.event(ev);
            if a.events.is_multiple_of(65_536) {
                progress(ev.offset);
            }
            true
        });
        if let Err(e) = result {
            if a.events == 0 {
                return Err(e);
            }
            a.read_error = Some(e.to_string());
        }
        let st = reader.stats();
        a.dropped_events = match a.ring {
            Some(_) => st.dropped_events.saturating_sub(st.dropped_at_start),
            None => st.dropped_events,
        };
        a.finish();
        Ok(a)
    }

    fn in_range(&self, ts: i64) -> bool {
        self.options.from_ns.is_none_or(|f| ts >= f) && self.options.to_ns.is_none_or(|t| ts < t)
    }

    /// Feeds one event (also after [`Analysis::finish`]: a live view keeps feeding and
    /// finishes again, or takes [`Analysis::snapshot`]s).
    pub fn event(&mut self, ev: &nettrace::Event<'_>) {
        self.events += 1;
        let ts = ev.timestamp_ns();
        self.first_ns.get_or_insert(ts);
        self.last_ns = self.last_ns.max(ts);
        if self.process_name.is_none()
            && ev.event_id() == 1
            && ev.provider() == clr_events::EVENTPIPE_PROVIDER
        {
            self.command_line = process_info_command_line(ev);
            self.process_name = self.command_line.as_deref().and_then(program_name);
        }
        if self.trigger.is_none() && ev.event_id() == clr_events::clrspy::ids::TRIGGER {
            self.trigger = inventory::TriggerNote::read(ev);
        }
        if self.ring.is_none() && ev.event_id() == clr_events::clrspy::ids::RING {
            self.ring = inventory::ring_note(ev);
        }
        if self.kernel_stacks.take(ev, &mut self.stacks) {
            return;
        }
        let (Some(provider), Some(r)) = self.source(ev) else {
            return;
        };
        let in_range = self.in_range(ts);
        let mut stack = None;
        let mut interned = false;
        let kernel_sample = dispatch::is_kernel_sample(ev);
        let mut mev = ModelEvent {
            provider,
            id: if kernel_sample {
                clr_events::clrspy::ids::KERNEL_SAMPLE
            } else {
                ev.event_id()
            },
            version: ev.version(),
            ts_ns: ts,
            thread_id: ev.thread_id,
            payload: ev.payload,
            pointer_size: self.pointer_size,
            stack: None,
            // The built-in models read no context: only the registered ones get it.
            context: EventContext::default(),
        };
        for k in 0..self.routes[r].len() {
            let route = self.routes[r][k];
            if route.windowed && !in_range {
                continue;
            }
            if route.stack && !interned {
                stack = match self.kernel_stacks.get(ev.stack_id) {
                    // A kernel sample's or wait's whole stack, by its id.
                    Some(id) => Some(id),
                    None => match provider {
                        // A wait's stack: by its id in the payload, or (traces before) there.
                        Provider::Clrspy
                            if !kernel_sample
                                && ev.event_id() == clr_events::clrspy::ids::KERNEL_WAIT =>
                        {
                            match clr_events::clrspy::KernelWait::parse(ev.payload) {
                                Ok(w) if w.sample.frames.is_empty() => {
                                    self.kernel_stacks.get(w.stack_id)
                                }
                                Ok(w) => self
                                    .stacks
                                    .intern(&nettrace::Stack::new(w.sample.frames, 8)),
                                Err(_) => None,
                            }
                        }
                        // A sample of native code alone: by its id in the payload, or (traces
                        // before) there.
                        Provider::Clrspy
                            if !kernel_sample
                                && ev.event_id() == clr_events::clrspy::ids::KERNEL_SAMPLE =>
                        {
                            match clr_events::clrspy::KernelSample::parse(ev.payload) {
                                Ok(k) if k.frames.is_empty() => self.kernel_stacks.get(k.stack_id),
                                Ok(k) => self.stacks.intern(&nettrace::Stack::new(k.frames, 8)),
                                Err(_) => None,
                            }
                        }
                        _ => self.stacks.intern(&ev.stack),
                    },
                };
                interned = true;
            }
            mev.stack = if route.stack { stack } else { None };
            if matches!(route.target, Target::Boxed(_)) {
                mev.context = EventContext::of(ev);
            }
            let result = match route.target {
                Target::Symbols => self.symbols.on_event(&mev),
                Target::Modules => self.module_map(&mev),
                Target::Model(ModelKind::Cpu) => self.cpu.on_event(&mev),
                Target::Model(ModelKind::Alloc) => self.alloc.on_event(&mev),
                Target::Model(ModelKind::Exceptions) => self.exceptions.on_event(&mev),
                Target::Model(ModelKind::Contention) => self.contention.on_event(&mev),
                Target::Model(ModelKind::Gc) => self.gc.on_event(&mev),
                Target::Model(ModelKind::Threads) => self.threads.on_event(&mev),
                Target::Boxed(i) => match self.extra.get_mut(i) {
                    Some((_, m)) => m.feed(&mev),
                    None => Ok(()),
                },
            };
            if let Err(e) = result {
                self.failed(provider, ev, e);
                // One failure per event, whichever model met it first.
                break;
            }
        }
    }

    /// Feeds one event of another session on the same process to the symbols only (method
    /// and module names, module maps): a live view names the code jitted before it attached
    /// from a short rundown session's events, which must not count as this trace's events or
    /// move its clock.
    pub fn name_event(&mut self, ev: &nettrace::Event<'_>) {
        if self.kernel_stacks.take(ev, &mut self.stacks) {
            return;
        }
        let (Some(provider), Some(r)) = self.source(ev) else {
            return;
        };
        for k in 0..self.routes[r].len() {
            let route = self.routes[r][k];
            if !matches!(route.target, Target::Symbols | Target::Modules) {
                continue;
            }
            let mev = ModelEvent {
                provider,
                id: ev.event_id(),
                version: ev.version(),
                ts_ns: ev.timestamp_ns(),
                thread_id: ev.thread_id,
                payload: ev.payload,
                pointer_size: self.pointer_size,
                stack: None,
                context: EventContext::of(ev),
            };
            let result = match route.target {
                Target::Symbols => self.symbols.on_event(&mev),
                _ => self.module_map(&mev),
            };
            if let Err(e) = result {
                self.failed(provider, ev, e);
                break;
            }
        }
    }

    fn module_map(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let m = clr_events::clrspy::ModuleMap::parse(ev.payload)?;
        self.symbols.add_module(symbols::ModuleMapping {
            start: m.start,
            end: m.end,
            file_offset: m.offset,
            path: m.path.to_string_lossy(),
        });
        Ok(())
    }

    fn failed(&mut self, provider: Provider, ev: &nettrace::Event<'_>, e: ViewError) {
        self.undecodable += 1;
        let name = match provider {
            Provider::Known(k) => event_name_for(k, ev.event_id(), ev.version()),
            Provider::Clrspy | Provider::Named(_) => None,
        };
        let name = match name {
            Some(n) => n,
            None => e.event,
        };
        match self.failures.iter_mut().find(|f| f.event == name) {
            Some(f) => f.count += 1,
            None => self.failures.push(DecodeFailures {
                event: name.to_string(),
                count: 1,
                first_error: e.to_string(),
            }),
        }
    }

    /// Events some model wanted that could not be decoded, per event name (in the order
    /// first seen), with the first error of each.
    pub fn decode_errors(&self) -> &[DecodeFailures] {
        &self.failures
    }

    /// Ends the pass: weighs the samples still waiting for a reading, names methods and every
    /// address of every stack. Idempotent; events fed after it are taken into account by the
    /// next call.
    pub fn finish(&mut self) {
        self.cpu.finish();
        self.gc.finish();
        self.contention.finish();
        let end = self
            .options
            .to_ns
            .map_or(self.last_ns, |t| t.min(self.last_ns));
        for (_, m) in &mut self.extra {
            m.end_pass(end);
        }
        self.symbols.set_entry(self.process_name.as_deref());
        self.symbols.finish();
        if self.symbols.has_osr_code() {
            let symbols = &self.symbols;
            self.stacks
                .drop_next_frames(|ip, next| symbols.osr_pseudo(ip, next));
        }
        self.symbols.resolve_all(self.stacks.all_ips());
        self.symbols.mark_app_code(self.process_name.as_deref());
        self.alloc.name_nested_types(self.symbols.declaring_types());
        self.duration_ns = self.first_ns.map_or(0, |f| self.last_ns - f);
        self.has_rundown = self.symbols.has_rundown();
        self.has_thread_cpu = self.cpu.has_readings();
        self.learn_thread_starts();
        self.name_groups();
    }

    /// Reads what started each thread from the outer frames of its sampled and waiting
    /// stacks ([`threads::ThreadModel::learn_stack`]): the pool's worker loop, or the start of
    /// a `new Thread()` and the method it runs.
    fn learn_thread_starts(&mut self) {
        /// Outer frames read: the start path and, with the kernel's sampler, the native
        /// frames below it.
        const OUTER_FRAMES: usize = 32;
        let stacks: Vec<(u64, stacks::StackId)> = self
            .cpu
            .weights()
            .filter_map(|(t, s, _)| Some((t, s?)))
            .collect();
        for (t, s) in stacks {
            if self.threads.knows_start(t) {
                continue;
            }
            let ips = self.stacks.ips(s);
            let outer = &ips[ips.len().saturating_sub(OUTER_FRAMES)..];
            let frames: Vec<String> = outer
                .iter()
                .map(|&ip| self.symbols.frame(self.symbols.resolve(ip)).name.clone())
                .collect();
            self.threads.learn_stack(t, &frames);
        }
    }

    /// What is known of thread `t` to name it by ([`thread_names::ThreadFacts`]).
    fn thread_facts(&self, t: u64) -> thread_names::ThreadFacts {
        self.threads.facts(t, self.process_id)
    }

    /// The name to show for thread `t` ([`thread_names::ThreadFacts::display`]): its own
    /// name; `.NET TP Worker` only when the runtime says it is a pool worker; else what
    /// started it (a `new Thread()` started from a pool worker has the worker's OS name).
    pub fn thread_name(&self, t: u64) -> Option<String> {
        self.thread_facts(t).display()
    }

    /// Interns the frames of time no sampled stack shows: each unsampled thread's group
    /// (`[runtime: tiered JIT]` by its name's role), and the idle frames.
    fn name_groups(&mut self) {
        let mut unsampled: Vec<u64> = self.cpu.unsampled().map(|(t, _)| t).collect();
        unsampled.sort_unstable();
        for t in unsampled {
            let role = self.thread_role(t);
            let name = if !role.is_runtime() || (self.cpu.was_sampled(t) && !role.is_native_work())
            {
                profile::UNSAMPLED_FRAME.to_string()
            } else {
                role.frame()
            };
            let f = self.symbols.synthetic(&name);
            self.groups.unsampled.insert(t, f);
        }
        self.groups.idle_pool = Some(self.symbols.synthetic(profile::IDLE_POOL_FRAME));
        self.groups.idle_sockets = Some(self.symbols.synthetic(profile::IDLE_SOCKETS_FRAME));
        self.groups.unsampled_any = Some(self.symbols.synthetic(profile::UNSAMPLED_FRAME));
        self.groups.native = profile::native::NativeGroups::build(&mut self.symbols);
    }

    /// A stack's frames (leaf first) with their native runs shown as `view` says
    /// ([`NativeView`]): the views that read stacks themselves (the Chromium export) show
    /// them as the profile's rows do.
    pub fn native_frames(
        &self,
        frames: Vec<symbols::FrameId>,
        view: NativeView,
    ) -> Vec<symbols::FrameId> {
        self.groups.native.apply(frames, &self.symbols, view)
    }

    /// True for a frame of native work or the runtime's unnamed code (`[JIT compiler:
    /// libclrjit.so]`, `libcrypto.so.3!SHA256_Update`, `[runtime stubs and helpers]`): for
    /// [`StackProfile::managed_callers`].
    pub fn is_native_work(&self, f: symbols::FrameId) -> bool {
        self.groups.native.is_work(f)
    }

    /// The role of thread `t`, from its recorded name and whether the sampler saw it. In a
    /// trace without samples, "never sampled" says nothing: the main thread (its id is the
    /// process's) runs managed code, and a thread the name does not place is unknown.
    pub fn thread_role(&self, t: u64) -> threads::ThreadRole {
        let n = self.threads.names.get(&t).map(String::as_str);
        let role = threads::ThreadRole::of(n, self.cpu.was_sampled(t));
        if role != threads::ThreadRole::Native || self.cpu.span_ns().is_some() {
            role
        } else if self.process_id == Some(t) {
            threads::ThreadRole::Managed
        } else {
            threads::ThreadRole::Unknown
        }
    }

    /// A finished copy of the analysis so far, for a live view; this one keeps going (samples
    /// waiting for the next reading stay waiting here).
    pub fn snapshot(&self) -> Analysis {
        let mut a = self.clone();
        a.finish();
        a
    }

    /// The length of the analysed window, ns: the trace's first to last event, clipped to
    /// the options' `from`/`to`; 0 when the trace (or the window) is empty.
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

    /// The samples as resolved, weighed stacks ([`Analysis::finish`] first).
    pub fn profile(&self, filter: &StackFilter) -> StackProfile {
        let plumbing = self.plumbing_threads();
        StackProfile::build(
            &self.cpu,
            &self.stacks,
            &self.symbols,
            &self.groups,
            filter,
            &plumbing,
        )
    }

    /// The runtime's plumbing threads ([`threads::ThreadRole::waits_by_design`]) whose kernel
    /// waits the stack profiles leave out; none without the kernel sampler's waits.
    fn plumbing_threads(&self) -> rustc_hash::FxHashSet<u64> {
        if !self.cpu.kernel_waits() {
            return Default::default();
        }
        self.threads
            .names
            .iter()
            .filter(|(_, n)| threads::ThreadRole::waits_by_design(n))
            .map(|(&t, _)| t)
            .collect()
    }

    /// The trace's pointer size.
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }

    /// Source lines of code addresses, from the trace's IL-to-native maps and the PDBs the
    /// options' `--symbols` directories (and the recorded paths) lead to.
    pub fn source_lines(&self) -> source_lines::SourceLines<'_> {
        source_lines::SourceLines::new(
            self.model::<sources::lines::LineMaps>(),
            &self.options.images,
        )
    }

    /// Resolves a stack to frame names, leaf first ([`Analysis::finish`] first).
    pub fn frames(&self, stack: Option<stacks::StackId>) -> Vec<String> {
        let Some(s) = stack else { return Vec::new() };
        self.stacks
            .ips(s)
            .iter()
            .map(|&ip| self.symbols.frame(self.symbols.resolve(ip)).name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests;
