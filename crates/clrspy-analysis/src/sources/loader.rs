//! Assembly loading (the runtime's `AssemblyLoader` keyword 0x4, and `Loader` 0x8): each load
//! from its start to its stop on its thread, with the resolution stages it went through, the
//! resolving handlers that ran and the files probed; aggregated per assembly, context and file
//! (loads that succeeded) and per assembly and context (loads that failed, with the first
//! failure's stages and probes). A context's instance number (`#N`) is left out of its key, so
//! an app that loads one assembly into a million collectible contexts holds one entry, counted.
//! Without the `AssemblyLoader` keyword, `Loader/AssemblyLoad` and `Loader/ModuleLoad` still
//! give each assembly's name and file (no context, no failures).

use std::collections::{BTreeMap, BTreeSet};

use clr_events::loader::{
    ids, AssemblyLoad, AssemblyLoadStart, AssemblyLoadStop, KnownPathProbed,
    LoadFromResolveHandlerInvoked, ResolutionAttempted, ResolutionResult, ResolutionStage,
    ResolveHandlerInvoked,
};
use clr_events::runtime::{ids as runtime_ids, ModuleLoad};
use clr_events::{KnownProvider, ViewError};
use rustc_hash::FxHashMap;

use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

/// Stages kept per failed load (the runtime tries at most seven).
const MAX_ATTEMPTS: usize = 16;
/// Probed files kept per failed load.
const MAX_PROBES: usize = 32;
/// Handlers kept per failed load.
const MAX_HANDLERS: usize = 8;
/// Loads open at once on one thread (nested: a handler loading while its load waits).
const MAX_DEPTH: usize = 32;
/// Context instances remembered per assembly (more are counted as "more").
const MAX_INSTANCES: usize = 64;
/// `Loader/AssemblyLoad` events waiting for their `Loader/ModuleLoad`.
const MAX_PENDING: usize = 4096;

/// One resolution stage a load went through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// The stage.
    pub stage: ResolutionStage,
    /// The load context it ran in (instance number left out).
    pub context: String,
    /// What it came to.
    pub result: ResolutionResult,
    /// The runtime's message (empty on success).
    pub message: String,
}

/// One file looked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The file.
    pub path: String,
    /// Who looked: a `KnownPathProbed` source, or `LoadFromResolveHandler`.
    pub source: String,
    /// The probe's HRESULT, when the event gives one.
    pub hresult: Option<u32>,
}

/// Loads of one assembly into one context from one file.
#[derive(Clone, Debug, Default)]
pub struct LoadStats {
    /// The first load's time, ns since the trace started.
    pub first_ns: i64,
    /// Loads that loaded it (start to stop, not found already loaded).
    pub count: u64,
    /// Loads answered with it already loaded: cached, found in the context, or returned by a
    /// resolving handler (the handler's own load of it is counted in `count`).
    pub reused: u64,
    /// The loads' total duration (start to stop), ns.
    pub total_ns: i64,
    /// The longest, ns.
    pub(crate) max_ns: i64,
    /// The assembly that asked first (empty when unknown).
    pub requested_by: String,
    /// The resolving handler that returned it, when one did.
    pub handler: Option<String>,
    /// Instances of the context (`#N`), up to 64.
    pub instances: BTreeSet<u64>,
    /// More instances than those.
    pub more_instances: bool,
}

/// Failed loads of one assembly name into one context.
#[derive(Clone, Debug, Default)]
pub struct FailureStats {
    /// The first failure's time, ns since the trace started.
    pub first_ns: i64,
    /// Loads that failed.
    pub count: u64,
    /// The assembly that asked (first failure).
    pub requested_by: String,
    /// The path asked for, for loads by path.
    pub requested_path: String,
    /// The stages the first failure went through, in order.
    pub attempts: Vec<Attempt>,
    /// The files it probed (first failure), in order.
    pub probed: Vec<Probe>,
    /// The resolving handlers that ran (first failure).
    pub handlers: Vec<String>,
}

/// An assembly seen by the `Loader` keyword alone (no context).
#[derive(Clone, Debug, Default)]
pub struct ModuleStats {
    /// The first load's time, ns since the trace started.
    pub first_ns: i64,
    /// Loads.
    pub count: u64,
    /// Collectible (its context can be unloaded).
    pub(crate) collectible: bool,
}

/// A load started on a thread and not stopped yet.
#[derive(Clone, Debug)]
struct Open {
    ts: i64,
    name: String,
    attempts: Vec<Attempt>,
    probed: Vec<Probe>,
    handlers: Vec<String>,
    found_in_context: bool,
    handler_resolved: Option<String>,
}

/// Assembly loads, loaded and failed.
#[derive(Clone, Debug, Default)]
pub struct LoaderModel {
    /// `AssemblyLoader/Start` events.
    pub starts: u64,
    /// `AssemblyLoader/Stop` events.
    pub stops: u64,
    /// `AssemblyLoader/ResolutionAttempted` events.
    pub(crate) resolution_attempts: u64,
    /// Resolving handler events (293, 294, 295).
    pub(crate) handler_events: u64,
    /// `AssemblyLoader/KnownPathProbed` events.
    pub probes: u64,
    /// `Loader/AssemblyLoad` events.
    pub(crate) assembly_load_events: u64,
    /// Stops whose start came before the trace (or the window).
    pub(crate) stops_unstarted: u64,
    /// Loads started and not stopped by the end.
    pub in_flight: u64,
    /// Loads that loaded, by (context, assembly, file).
    pub loads: BTreeMap<(String, String, String), LoadStats>,
    /// Loads that failed, by (context, assembly name asked for).
    pub failures: BTreeMap<(String, String), FailureStats>,
    /// Assemblies by (name, file) from `Loader/AssemblyLoad` and `Loader/ModuleLoad`.
    pub modules: BTreeMap<(String, String), ModuleStats>,
    open: FxHashMap<u64, Vec<Open>>,
    pending: FxHashMap<u64, (String, u32, i64)>,
}

/// A context's name without its instance number (`"x" Type #3` → `"x" Type`), and the number.
pub(crate) fn context_key(raw: &str) -> (String, Option<u64>) {
    if let Some((head, n)) = raw.rsplit_once(" #") {
        if let Ok(n) = n.parse::<u64>() {
            return (head.to_string(), Some(n));
        }
    }
    (raw.to_string(), None)
}

fn push_capped<T: PartialEq>(v: &mut Vec<T>, item: T, cap: usize) {
    if v.len() < cap && !v.contains(&item) {
        v.push(item);
    }
}

impl LoaderModel {
    /// The innermost open load of `name` on `thread`.
    fn open_of(&mut self, thread: u64, name: &str) -> Option<&mut Open> {
        self.open
            .get_mut(&thread)?
            .iter_mut()
            .rev()
            .find(|o| o.name == name)
    }

    fn start(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let s = AssemblyLoadStart::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.starts += 1;
        let stack = self.open.entry(ev.thread_id).or_default();
        if stack.len() >= MAX_DEPTH {
            stack.remove(0);
        }
        stack.push(Open {
            ts: ev.ts_ns,
            name: s.name.to_string_lossy(),
            attempts: Vec::new(),
            probed: Vec::new(),
            handlers: Vec::new(),
            found_in_context: false,
            handler_resolved: None,
        });
        Ok(())
    }

    fn stop(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let s = AssemblyLoadStop::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.stops += 1;
        let name = s.start.name.to_string_lossy();
        let open = self.open.get_mut(&ev.thread_id).and_then(|stack| {
            let i = stack.iter().rposition(|o| o.name == name)?;
            let o = stack.remove(i);
            // Loads opened inside it and never stopped are lost with it.
            stack.truncate(i);
            Some(o)
        });
        if open.is_none() {
            self.stops_unstarted += 1;
        }
        let (context, instance) = context_key(&s.start.load_context.to_string_lossy());
        let requested_by = s.start.requesting_assembly.to_string_lossy();
        if s.success {
            let result = if s.result_name.is_empty() {
                name
            } else {
                s.result_name.to_string_lossy()
            };
            let key = (context, result, s.result_path.to_string_lossy());
            let l = self.loads.entry(key).or_insert_with(|| LoadStats {
                first_ns: ev.ts_ns,
                requested_by,
                ..LoadStats::default()
            });
            // Answered with an assembly already loaded: cached, found in the context, or
            // returned by a resolving handler (whose own load, nested, is counted).
            let reused = s.cached
                || open
                    .as_ref()
                    .is_some_and(|o| o.found_in_context || o.handler_resolved.is_some());
            if reused {
                l.reused += 1;
            } else {
                l.count += 1;
                if let Some(o) = &open {
                    let d = ev.ts_ns - o.ts;
                    l.total_ns += d;
                    l.max_ns = l.max_ns.max(d);
                }
            }
            if let Some(h) = open.and_then(|o| o.handler_resolved) {
                l.handler.get_or_insert(h);
            }
            if let Some(n) = instance {
                if l.instances.len() < MAX_INSTANCES {
                    l.instances.insert(n);
                } else if !l.instances.contains(&n) {
                    l.more_instances = true;
                }
            }
        } else {
            let f = self.failures.entry((context, name)).or_default();
            if f.count == 0 {
                f.first_ns = ev.ts_ns;
                f.requested_by = requested_by;
                f.requested_path = s.start.path.to_string_lossy();
                if let Some(o) = open {
                    f.attempts = o.attempts;
                    f.probed = o.probed;
                    f.handlers = o.handlers;
                }
            }
            f.count += 1;
        }
        Ok(())
    }

    fn attempt(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let r = ResolutionAttempted::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.resolution_attempts += 1;
        let name = r.name.to_string_lossy();
        if let Some(o) = self.open_of(ev.thread_id, &name) {
            if r.stage == ResolutionStage::FindInLoadContext && r.result == ResolutionResult::Success
            {
                o.found_in_context = true;
            }
            let a = Attempt {
                stage: r.stage,
                context: context_key(&r.load_context.to_string_lossy()).0,
                result: r.result,
                message: r.error_message.to_string_lossy(),
            };
            if o.attempts.len() < MAX_ATTEMPTS {
                o.attempts.push(a);
            }
        }
        Ok(())
    }

    fn handler(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        self.handler_events += 1;
        if ev.id == ids::LOAD_FROM_RESOLVE_HANDLER_INVOKED {
            let h = LoadFromResolveHandlerInvoked::parse(ev.payload, ev.version, ev.pointer_size)?;
            let name = h.name.to_string_lossy();
            if let Some(o) = self.open_of(ev.thread_id, &name) {
                if h.tracked && !h.computed_path.is_empty() {
                    let p = Probe {
                        path: h.computed_path.to_string_lossy(),
                        source: "LoadFromResolveHandler".into(),
                        hresult: None,
                    };
                    push_capped(&mut o.probed, p, MAX_PROBES);
                }
            }
            return Ok(());
        }
        let h = ResolveHandlerInvoked::parse(ev.id, ev.payload, ev.version, ev.pointer_size)?;
        let name = h.name.to_string_lossy();
        let resolved = h.resolved();
        let handler = h.handler.to_string_lossy();
        if let Some(o) = self.open_of(ev.thread_id, &name) {
            let kind = if ev.id == ids::ALC_RESOLVING_HANDLER_INVOKED {
                "AssemblyLoadContext.Resolving"
            } else {
                "AppDomain.AssemblyResolve"
            };
            let outcome = if resolved { "returned it" } else { "returned null" };
            push_capped(
                &mut o.handlers,
                format!("{kind} handler {handler}: {outcome}"),
                MAX_HANDLERS,
            );
            if resolved {
                o.handler_resolved = Some(handler);
            }
        }
        Ok(())
    }

    fn probe(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let k = KnownPathProbed::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.probes += 1;
        // The probe belongs to the innermost load open on its thread.
        if let Some(o) = self.open.get_mut(&ev.thread_id).and_then(|s| s.last_mut()) {
            let p = Probe {
                path: k.path.to_string_lossy(),
                source: k.source.to_string(),
                hresult: Some(k.result),
            };
            push_capped(&mut o.probed, p, MAX_PROBES);
        }
        Ok(())
    }

    fn assembly_load(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let a = AssemblyLoad::parse(ev.payload, ev.version, ev.pointer_size)?;
        self.assembly_load_events += 1;
        if self.pending.len() >= MAX_PENDING {
            self.pending.clear();
        }
        self.pending
            .insert(a.assembly_id, (a.name.to_string_lossy(), a.flags, ev.ts_ns));
        Ok(())
    }

    fn module_load(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let m = ModuleLoad::parse_event(
            KnownProvider::Runtime,
            runtime_ids::MODULE_LOAD,
            ev.payload,
            ev.version,
            ev.pointer_size,
        )?;
        if let Some((name, flags, ts)) = self.pending.remove(&m.assembly_id) {
            let e = self
                .modules
                .entry((name, m.il_path.to_string_lossy()))
                .or_insert_with(|| ModuleStats {
                    first_ns: ts,
                    ..ModuleStats::default()
                });
            e.count += 1;
            e.collectible |= flags & AssemblyLoad::COLLECTIBLE != 0;
        }
        Ok(())
    }
}

impl Model for LoaderModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::ASSEMBLY_LOAD_START),
        Wanted::runtime(ids::ASSEMBLY_LOAD_STOP),
        Wanted::runtime(ids::RESOLUTION_ATTEMPTED),
        Wanted::runtime(ids::ALC_RESOLVING_HANDLER_INVOKED),
        Wanted::runtime(ids::APP_DOMAIN_RESOLVE_HANDLER_INVOKED),
        Wanted::runtime(ids::LOAD_FROM_RESOLVE_HANDLER_INVOKED),
        Wanted::runtime(ids::KNOWN_PATH_PROBED),
        Wanted::runtime(ids::ASSEMBLY_LOAD),
        Wanted::runtime(runtime_ids::MODULE_LOAD),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        match ev.id {
            ids::ASSEMBLY_LOAD_START => self.start(ev),
            ids::ASSEMBLY_LOAD_STOP => self.stop(ev),
            ids::RESOLUTION_ATTEMPTED => self.attempt(ev),
            ids::KNOWN_PATH_PROBED => self.probe(ev),
            ids::ASSEMBLY_LOAD => self.assembly_load(ev),
            runtime_ids::MODULE_LOAD => self.module_load(ev),
            _ => self.handler(ev),
        }
    }

    fn finish(&mut self) {
        self.in_flight = self.open.values().map(|s| s.len() as u64).sum();
    }
}

/// The registry's entry: assembly loads per load context, failures with their stages and probed
/// files.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<LoaderModel>(
    "loader",
    boxed::<LoaderModel>,
);
