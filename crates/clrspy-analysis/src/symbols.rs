//! Symbols: naming the addresses of a stack. Managed code is named from the runtime's method
//! events — `Method/LoadVerbose` while recording (a launched process) and the rundown's
//! `Method/DCStartVerbose`/`DCStopVerbose` at the end (an attached one) — as
//! `Namespace.Type.Method`, with a short signature only when two methods would share a name.
//! Every code range of a method (tiered re-JIT gives several) maps to the same frame. Native
//! code is named `module!+0xoffset` when the trace carries clrspy's module map, else `[native]`.
//!
//! Precompiled (ReadyToRun) methods often have no load event, only `Method/R2RGetEntryPoint`
//! with an entry address and no size: such a method is taken to run from its entry to the next
//! known code start, at most `R2R_MAX_SIZE` bytes — an approximation, used only for addresses
//! no exact range covers, neither an event's nor the image's own function table.
//!
//! Precompiled code that ran before the recording (no method event at all) is named from its
//! image ([`crate::r2r`]): an address inside a mapped .NET image gets the name of the
//! ReadyToRun function holding it, from the names the recording stored in the trace or from
//! the image file.
//!
//! Ranges are collected during the pass and resolved at the end, because the rundown comes last.

use clr_events::clrspy::{ids as clrspy_ids, NativeSymbol, R2rImage, R2rMethod};
use clr_events::runtime::{ids, rundown_ids, MethodLoad, ModuleLoad, R2rEntryPoint};
use clr_events::{KnownProvider, ViewError};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::app_code::{app_modules, own_modules, AppCode};
use crate::event::{Model, ModelEvent, Provider, Wanted};
use crate::r2r::{ImageIdentity, ImageSources, R2rNames};
pub(crate) use crate::signature::short_signature;

/// The longest a ReadyToRun method is assumed to be when only its entry point is known.
pub(crate) const R2R_MAX_SIZE: u64 = 4 * 1024;

/// An interned frame name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A managed method.
    Managed,
    /// Native code in a known module.
    Native,
    /// An address no method or module covers.
    Unknown,
}

/// A named frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The display name.
    pub name: String,
    /// Its kind.
    pub kind: FrameKind,
}

#[derive(Clone, Debug)]
struct Method {
    namespace: String,
    name: String,
    signature: String,
}

/// The frame of code the JIT wrote that no method event names (no rundown, no method loads).
pub(crate) const UNNAMED_JIT_CODE: &str = "[jitted code, unnamed]";

/// The same in a trace with the rundown, which names every method: what is left is the
/// code the runtime writes for itself (precode and fixup stubs, call-counting and dispatch
/// stubs, the write barrier), which no event names.
pub(crate) const RUNTIME_STUBS: &str = "[runtime stubs and helpers]";

/// True for the mappings that hold the JIT's code rather than a module's: the runtime's
/// double-mapped code heap (`/memfd:doublemapper (deleted)` in /proc/PID/maps) and anonymous
/// executable memory. Their addresses are managed methods, never offsets into a file.
pub(crate) fn is_jit_code_heap(path: &str) -> bool {
    let p = path.trim_start_matches('/');
    p.starts_with("memfd:doublemapper") || p.starts_with("[anon") || p.is_empty()
}

/// A native module mapping (from clrspy's module map events).
#[derive(Clone, Debug)]
pub(crate) struct ModuleMapping {
    /// First address.
    pub(crate) start: u64,
    /// One past the last address.
    pub(crate) end: u64,
    /// File offset of `start`.
    pub(crate) file_offset: u64,
    /// The file's path.
    pub(crate) path: String,
}

/// Method and module address ranges, then frame names.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    methods: Vec<Method>,
    method_by_id: FxHashMap<u64, u32>,
    /// (start, end, method index), sorted by start at [`Symbols::finish`].
    ranges: Vec<(u64, u64, u32)>,
    /// The code of on-stack-replaced methods (OSR versions): start, end; sorted and without
    /// repeats at [`Symbols::finish`], so a frame is looked up in it by binary search (a
    /// trace may name any number: no scan per frame).
    osr_code: Vec<(u64, u64)>,
    /// (entry, method index) of ReadyToRun methods known only by their entry point.
    entries: Vec<(u64, u32)>,
    /// Ranges derived from `entries` at [`Symbols::finish`].
    entry_ranges: Vec<(u64, u64, u32)>,
    modules: Vec<ModuleMapping>,
    frames: Vec<Frame>,
    /// Per frame: a managed frame of a known blocking call ([`crate::cpu::is_blocking_frame`]),
    /// decided once when it is interned (every stack of every sample asks).
    blocking: Vec<bool>,
    frame_by_name: FxHashMap<String, FrameId>,
    /// Frame of each method, after naming.
    method_frames: Vec<FrameId>,
    cache: FxHashMap<u64, FrameId>,
    finished: bool,
    has_rundown: bool,
    /// Names of precompiled code from the trace and the images.
    r2r: R2rNames,
    /// Names of native code from the trace (ELF symbols the recording stored).
    native: crate::native_names::NativeNames,
    /// The module of each method id that a method event named (its `ModuleID`).
    method_modules: FxHashMap<u64, u64>,
    /// The IL file of each module id (module load and rundown events).
    module_paths: FxHashMap<u64, String>,
    /// The frames of the app's own assemblies ([`Symbols::mark_app_code`]).
    app: AppCode,
    /// The app's methods the JIT inlined, by compiled method (frames are labelled with them).
    inlinings: crate::inlined::Inlinings,
    /// The program's name (`WebApp` for `dotnet WebApp.dll`), when known: which assemblies
    /// are the app's ([`Symbols::set_entry`]).
    entry: Option<String>,
    /// The generated methods (`dynamicClass.…`) compiled while recording, counted.
    generated: crate::generated::GeneratedCode,
}

impl Model for Symbols {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::METHOD_LOAD_VERBOSE).always(),
        Wanted::runtime(ids::METHOD_UNLOAD_VERBOSE).always(),
        Wanted::runtime(ids::R2R_GET_ENTRY_POINT).always(),
        Wanted::rundown(rundown_ids::METHOD_DC_START_VERBOSE),
        Wanted::rundown(rundown_ids::METHOD_DC_STOP_VERBOSE),
        Wanted::clrspy(clrspy_ids::R2R_METHOD),
        Wanted::clrspy(clrspy_ids::NATIVE_SYMBOL),
        Wanted::clrspy(clrspy_ids::R2R_IMAGE),
        Wanted::clrspy(clrspy_ids::INLINED),
        Wanted::runtime(ids::MODULE_LOAD).always(),
        Wanted::rundown(rundown_ids::MODULE_DC_START),
        Wanted::rundown(rundown_ids::MODULE_DC_STOP),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        match (ev.provider, ev.id) {
            (Provider::Known(KnownProvider::Runtime), ids::R2R_GET_ENTRY_POINT) => {
                let e = R2rEntryPoint::parse(p, v, ptr)?;
                self.add_entry_point(
                    e.method_id,
                    e.entry_point,
                    &e.namespace.to_string_lossy(),
                    &e.name.to_string_lossy(),
                    &e.signature.to_string_lossy(),
                );
            }
            (Provider::Known(k), id) if is_module_event(k, id) => {
                let m = ModuleLoad::parse_event(k, id, p, v, ptr)?;
                let path = m.il_path.to_string_lossy();
                if !path.is_empty() {
                    self.module_paths.insert(m.module_id, path);
                }
            }
            (Provider::Known(k), id) => {
                let m = MethodLoad::parse_event(k, id, p, v, ptr)?;
                if m.module_id != 0 {
                    self.method_modules.insert(m.method_id, m.module_id);
                }
                if k == KnownProvider::Rundown {
                    self.has_rundown = true;
                }
                if k == KnownProvider::Runtime && m.namespace.eq_str(crate::inlined::LAMBDAS) {
                    self.inlinings.lambda_compiled_live(m.name);
                    // Loads only: a collected dynamic method's unload names it again.
                    if id == ids::METHOD_LOAD_VERBOSE {
                        self.generated.add(m.name, ev.ts_ns);
                    }
                }
                if m.is_osr() && m.size > 0 {
                    self.osr_code
                        .push((m.start, m.start.saturating_add(u64::from(m.size))));
                }
                self.add_method(
                    m.method_id,
                    m.start,
                    u64::from(m.size),
                    &m.namespace.to_string_lossy(),
                    &m.name.to_string_lossy(),
                    &m.signature.to_string_lossy(),
                );
            }
            (Provider::Clrspy, clrspy_ids::R2R_METHOD) => {
                let m = R2rMethod::parse(p)?;
                self.r2r.add_stored(
                    &m.path.to_string_lossy(),
                    m.offset,
                    m.size,
                    &m.name.to_string_lossy(),
                );
                self.finished = false;
            }
            (Provider::Clrspy, clrspy_ids::NATIVE_SYMBOL) => {
                let n = NativeSymbol::parse(p)?;
                self.native.add(
                    &n.path.to_string_lossy(),
                    n.offset,
                    n.size,
                    &n.name.to_string_lossy(),
                );
                self.finished = false;
            }
            (Provider::Clrspy, clrspy_ids::INLINED) => {
                let i = clr_events::clrspy::Inlined::parse(p)?;
                self.inlinings
                    .add(i.method.to_string_lossy(), i.inlinee.to_string_lossy());
                self.finished = false;
            }
            (Provider::Clrspy, clrspy_ids::R2R_IMAGE) => {
                let i = R2rImage::parse(p)?;
                if let Some(mvid) = parse_mvid(&i.mvid.to_string_lossy()) {
                    self.r2r.add_identity(
                        &i.path.to_string_lossy(),
                        ImageIdentity { size: i.size, mvid },
                    );
                }
            }
            (Provider::Clrspy | Provider::Named(_), _) => {}
        }
        Ok(())
    }
}

impl Symbols {
    /// No symbols yet.
    pub fn new() -> Symbols {
        Symbols::default()
    }

    /// No symbols yet; precompiled code is named from the images `sources` leads to.
    pub fn with_images(sources: ImageSources) -> Symbols {
        Symbols {
            r2r: R2rNames::new(sources),
            native: Default::default(),
            ..Symbols::default()
        }
    }

    fn method_index(
        &mut self,
        method_id: u64,
        namespace: &str,
        name: &str,
        signature: &str,
    ) -> u32 {
        match self.method_by_id.get(&method_id) {
            Some(&i) => i,
            None => {
                let i = self.methods.len() as u32;
                self.methods.push(Method {
                    namespace: namespace.to_string(),
                    name: name.to_string(),
                    signature: signature.to_string(),
                });
                self.method_by_id.insert(method_id, i);
                i
            }
        }
    }

    /// Records a ReadyToRun method's entry point (no size known).
    pub(crate) fn add_entry_point(
        &mut self,
        method_id: u64,
        entry: u64,
        namespace: &str,
        name: &str,
        signature: &str,
    ) {
        if entry == 0 {
            return;
        }
        let idx = self.method_index(method_id, namespace, name, signature);
        self.entries.push((entry, idx));
        self.finished = false;
    }

    /// Records a method's code range (from a load, rundown or unload event's fields).
    pub(crate) fn add_method(
        &mut self,
        method_id: u64,
        start: u64,
        size: u64,
        namespace: &str,
        name: &str,
        signature: &str,
    ) {
        let idx = self.method_index(method_id, namespace, name, signature);
        if size > 0 && start > 0 {
            let end = start.saturating_add(size);
            // Load and rundown report the same range: keep it once.
            if !self
                .ranges
                .iter()
                .rev()
                .take(4)
                .any(|&(s, e, m)| s == start && e == end && m == idx)
            {
                self.ranges.push((start, end, idx));
            }
        }
        self.finished = false;
    }

    /// Records a native module mapping.
    pub(crate) fn add_module(&mut self, m: ModuleMapping) {
        self.modules.push(m);
        self.finished = false;
    }

    /// Names the program (its entry assembly's name), so that [`Symbols::finish`] labels
    /// frames only with inlined methods of the app's own types.
    pub(crate) fn set_entry(&mut self, entry: Option<&str>) {
        if self.entry.as_deref() != entry {
            self.entry = entry.map(str::to_string);
            self.finished = false;
        }
    }

    /// The outermost declaring types of the methods loaded from the app's assemblies (empty
    /// when the program or its modules are not known).
    fn app_types(&self) -> FxHashSet<&str> {
        let Some(entry) = self.entry.as_deref() else {
            return FxHashSet::default();
        };
        let modules: Vec<(u64, &str)> = self
            .module_paths
            .iter()
            .map(|(&id, p)| (id, p.as_str()))
            .collect();
        let app = app_modules(entry, &modules);
        self.method_modules
            .iter()
            .filter(|(_, module)| app.contains(module))
            .filter_map(|(id, _)| self.method_by_id.get(id))
            .filter_map(|&i| self.methods.get(i as usize))
            .map(|m| m.namespace.split('+').next().unwrap_or(&m.namespace))
            .collect()
    }

    /// Sorts the ranges and names the methods; call once all events were seen.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        // The labels name only the app's own types (kept whole: more events may come).
        let mut labels = self.inlinings.labels();
        if !labels.is_empty() {
            labels.keep_app_types(&self.app_types());
        }
        self.ranges.sort_unstable();
        self.ranges.dedup();
        self.osr_code.sort_unstable();
        self.osr_code.dedup();
        // Entry-point-only methods run to the next known code start, capped.
        self.entries.sort_unstable();
        self.entries.dedup();
        self.entry_ranges.clear();
        for (i, &(start, m)) in self.entries.iter().enumerate() {
            let next_entry = self.entries.get(i + 1).map_or(u64::MAX, |e| e.0);
            let k = self.ranges.partition_point(|r| r.0 <= start);
            let next_range = self.ranges.get(k).map_or(u64::MAX, |r| r.0);
            let end = next_entry
                .min(next_range)
                .min(start.saturating_add(R2R_MAX_SIZE));
            if end > start {
                self.entry_ranges.push((start, end, m));
            }
        }
        self.modules.sort_by_key(|m| m.start);
        // A short signature only where two methods share Namespace.Method.
        let mut count: FxHashMap<String, u32> = FxHashMap::default();
        let full: Vec<String> = self.methods.iter().map(full_name).collect();
        for f in &full {
            *count.entry(f.clone()).or_default() += 1;
        }
        let names: Vec<String> = self
            .methods
            .iter()
            .zip(&full)
            .map(|(m, f)| {
                let name = if count.get(f).copied().unwrap_or(0) > 1 && !m.signature.is_empty() {
                    format!("{f}({})", short_signature(&m.signature))
                } else {
                    f.clone()
                };
                if labels.is_empty() {
                    name
                } else {
                    // Keyed by `Namespace.Method`: overloads share their inlinings' label.
                    match labels.label(f.clone()).strip_prefix(f.as_str()) {
                        Some(label) => format!("{name}{label}"),
                        None => name,
                    }
                }
            })
            .collect();
        self.method_frames = names
            .into_iter()
            .map(|n| self.intern(n, FrameKind::Managed))
            .collect();
        self.cache.clear();
        // The frames `resolve` falls back to.
        self.intern("[native]".into(), FrameKind::Native);
        if !self.modules.is_empty() {
            self.intern("[unknown]".into(), FrameKind::Unknown);
        }
        self.finished = true;
    }

    /// A frame that stands for time no stack shows (`[runtime: tiered JIT]`,
    /// `[idle: thread pool]`): interned once, listed like any other frame.
    pub fn synthetic(&mut self, name: &str) -> FrameId {
        self.intern(name.to_string(), FrameKind::Native)
    }

    fn intern(&mut self, name: String, kind: FrameKind) -> FrameId {
        if let Some(&id) = self.frame_by_name.get(&name) {
            return id;
        }
        let id = FrameId(self.frames.len() as u32);
        self.blocking
            .push(kind == FrameKind::Managed && crate::cpu::is_blocking_frame(&name));
        self.frames.push(Frame {
            name: name.clone(),
            kind,
        });
        self.frame_by_name.insert(name, id);
        id
    }

    /// The generated methods (expression trees, regular expressions, dynamic methods) the
    /// runtime compiled while recording.
    pub fn generated(&self) -> &crate::generated::GeneratedCode {
        &self.generated
    }

    /// True when the trace has rundown (names of code compiled before the session).
    pub fn has_rundown(&self) -> bool {
        self.has_rundown
    }

    /// Names every address of `ips` ([`Symbols::finish`] first), so [`Symbols::resolve`]
    /// finds them without changing anything.
    /// True when `ip` is in on-stack-replaced (OSR) code and `next`, the frame-pointer walk's
    /// next frame, in another version of the same method: the OSR frame's pseudo return
    /// address into its Tier0 code (a kernel-sampled stack whose recorder could not mend it:
    /// the method was compiled before the recording). The method's own caller is then missing
    /// from such a stack; the pseudo frame is left out so that the method is shown once.
    /// ([`Symbols::finish`] first.)
    pub(crate) fn osr_pseudo(&self, ip: u64, next: u64) -> bool {
        let in_osr = |a: u64| {
            let i = self.osr_code.partition_point(|&(s, _)| s <= a);
            i > 0 && a < self.osr_code[i - 1].1
        };
        !self.osr_code.is_empty()
            && in_osr(ip)
            && !in_osr(next)
            && self
                .lookup_exact(ip)
                .is_some_and(|f| self.lookup_exact(next) == Some(f))
    }

    /// True when any OSR code is known (see [`Symbols::osr_pseudo`]).
    pub(crate) fn has_osr_code(&self) -> bool {
        !self.osr_code.is_empty()
    }

    pub(crate) fn resolve_all(&mut self, ips: &[u64]) {
        for &ip in ips {
            self.resolve_mut(ip);
        }
    }

    /// The frame of an address: the one `Symbols::resolve_all` (or
    /// `Symbols::resolve_mut`) named, else the method whose code holds it, else a generic
    /// native or unknown frame.
    pub fn resolve(&self, ip: u64) -> FrameId {
        if let Some(&f) = self.cache.get(&ip) {
            return f;
        }
        if let Some(f) = self.lookup_method(ip) {
            return f;
        }
        let name = if self.modules.is_empty() {
            "[native]"
        } else {
            "[unknown]"
        };
        self.frame_by_name
            .get(name)
            .copied()
            .unwrap_or(FrameId(u32::MAX))
    }

    /// The frame of an address, naming native and unknown addresses as needed
    /// ([`Symbols::finish`] first).
    pub(crate) fn resolve_mut(&mut self, ip: u64) -> FrameId {
        if let Some(&f) = self.cache.get(&ip) {
            return f;
        }
        let f = self.lookup(ip);
        self.cache.insert(ip, f);
        f
    }

    fn lookup_method(&self, ip: u64) -> Option<FrameId> {
        self.lookup_exact(ip).or_else(|| self.lookup_entry(ip))
    }

    /// A method whose code range an event gave.
    fn lookup_exact(&self, ip: u64) -> Option<FrameId> {
        // The last range starting at or before ip that still covers it.
        let i = self.ranges.partition_point(|r| r.0 <= ip);
        for &(s, e, m) in self.ranges[..i].iter().rev().take(8) {
            if ip >= s && ip < e {
                if let Some(&f) = self.method_frames.get(m as usize) {
                    return Some(f);
                }
            }
        }
        None
    }

    /// A ReadyToRun method known only by its entry point (an estimated range).
    fn lookup_entry(&self, ip: u64) -> Option<FrameId> {
        let k = self.entry_ranges.partition_point(|r| r.0 <= ip);
        if let Some(&(s, e, m)) = k.checked_sub(1).and_then(|k| self.entry_ranges.get(k)) {
            if ip >= s && ip < e {
                if let Some(&f) = self.method_frames.get(m as usize) {
                    return Some(f);
                }
            }
        }
        None
    }

    /// Exact ranges first, then the image's own function table (exact too), then the
    /// entry-point estimate, then the module's offset.
    fn lookup(&mut self, ip: u64) -> FrameId {
        if let Some(f) = self.lookup_exact(ip) {
            return f;
        }
        let j = self.modules.partition_point(|m| m.start <= ip);
        if let Some(m) = j.checked_sub(1).and_then(|k| self.modules.get(k)) {
            if ip < m.end {
                if is_jit_code_heap(&m.path) {
                    // A method R2R entry points may still name; else code without a name.
                    if let Some(f) = self.lookup_entry(ip) {
                        return f;
                    }
                    let name = if self.has_rundown {
                        RUNTIME_STUBS
                    } else {
                        UNNAMED_JIT_CODE
                    };
                    return self.intern(name.into(), FrameKind::Unknown);
                }
                let off = ip - m.start + m.file_offset;
                let path = m.path.clone();
                if let Some(name) = self.r2r.name(&path, off) {
                    return self.intern(name.to_string(), FrameKind::Managed);
                }
                if let Some(f) = self.lookup_entry(ip) {
                    return f;
                }
                let base = path.rsplit('/').next().unwrap_or(&path);
                if let Some(name) = self.native.name(&path, off) {
                    return self.intern(format!("{base}!{name}"), FrameKind::Native);
                }
                return self.intern(format!("{base}!+0x{off:x}"), FrameKind::Native);
            }
        }
        if let Some(f) = self.lookup_entry(ip) {
            return f;
        }
        if self.modules.is_empty() {
            self.intern("[native]".into(), FrameKind::Native)
        } else {
            self.intern(format!("[unknown 0x{ip:x}]"), FrameKind::Unknown)
        }
    }

    /// True for a managed frame of a known blocking call (`Monitor.Enter`, `Thread.Sleep`,
    /// a socket read...: [`crate::cpu::BLOCKING_FRAMES`]).
    pub(crate) fn is_blocking(&self, id: FrameId) -> bool {
        self.blocking.get(id.0 as usize).copied().unwrap_or(false)
    }

    /// A frame's name and kind.
    pub fn frame(&self, id: FrameId) -> &Frame {
        static NONE: Frame = Frame {
            name: String::new(),
            kind: FrameKind::Unknown,
        };
        self.frames.get(id.0 as usize).unwrap_or(&NONE)
    }

    /// Decides which frames are the app's own code by their assembly: the methods of the
    /// entry assembly (`entry`, the program's name, e.g. `WebApp` for `dotnet WebApp.dll`) and
    /// of the assemblies loaded from its folder ([`app_modules`]). Call after
    /// [`Symbols::finish`]; without an entry assembly or module events, no frame is.
    pub(crate) fn mark_app_code(&mut self, entry: Option<&str>) {
        let Some(entry) = entry else {
            self.app = AppCode::default();
            return;
        };
        let modules: Vec<(u64, &str)> = self
            .module_paths
            .iter()
            .map(|(&id, p)| (id, p.as_str()))
            .collect();
        let app = app_modules(entry, &modules);
        if app.is_empty() {
            self.app = AppCode::default();
            return;
        }
        let own_ids = own_modules(entry, &modules);
        let mut frames = std::collections::BTreeSet::new();
        let mut own = std::collections::BTreeSet::new();
        for (method_id, module) in &self.method_modules {
            if !app.contains(module) {
                continue;
            }
            let Some(&idx) = self.method_by_id.get(method_id) else {
                continue;
            };
            if let Some(&f) = self.method_frames.get(idx as usize) {
                let name = self.frame(f).name.clone();
                if own_ids.contains(module) {
                    own.insert(name.clone());
                }
                frames.insert(name);
            }
        }
        let mut assemblies: Vec<String> = app
            .iter()
            .filter_map(|m| self.module_paths.get(m))
            .map(|p| p.rsplit(['/', '\\']).next().unwrap_or(p).to_string())
            .collect();
        assemblies.sort();
        assemblies.dedup();
        self.app = AppCode::new(assemblies, frames).with_own(own);
    }

    /// The declaring types of the methods named so far (`Namespace.Type+Nested`), as the
    /// method events wrote them, one per method.
    pub(crate) fn declaring_types(&self) -> impl Iterator<Item = &str> {
        self.methods.iter().map(|m| m.namespace.as_str())
    }

    /// True when the recording followed the JIT's inlining of the app's code (frames of code
    /// compiled since are labelled with the app's methods inlined into them).
    pub fn inlining_followed(&self) -> bool {
        self.inlinings.followed
    }

    /// True when `frame` is a generated method (`dynamicClass.lambda_method…`: MVC's invokers,
    /// compiled expressions) that may hold the app's code inlined but is not labelled with it,
    /// and could have been: the trace did not follow the JIT's inlining, or the method was
    /// compiled before it began (known only from the rundown). One compiled while it was
    /// followed inlines none of the app's code.
    pub fn is_unlabelled_lambda(&self, frame: &str) -> bool {
        crate::inlined::is_unlabelled_lambda(frame)
            && !(self.inlinings.followed && self.inlinings.was_compiled_live(frame))
    }

    /// The app's own code, by assembly (`Symbols::mark_app_code`).
    pub fn app_code(&self) -> &AppCode {
        &self.app
    }

    /// Number of distinct frames named so far.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }
}

/// `Loader/ModuleLoad` and the rundown's module events.
fn is_module_event(k: KnownProvider, id: u32) -> bool {
    match k {
        KnownProvider::Runtime => id == ids::MODULE_LOAD,
        KnownProvider::Rundown => {
            id == rundown_ids::MODULE_DC_START || id == rundown_ids::MODULE_DC_STOP
        }
        _ => false,
    }
}

/// 32 hex digits → 16 bytes.
fn parse_mvid(s: &str) -> Option<[u8; 16]> {
    let mut out = [0u8; 16];
    if s.len() != 32 || !s.is_ascii() {
        return None;
    }
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

fn full_name(m: &Method) -> String {
    clr_events::method_names::join(&m.namespace, &m.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_osr_frames_pseudo_return_is_the_same_methods_other_code() {
        let mut s = Symbols::new();
        s.add_method(1, 0x1000, 0x100, "App.Cpu", "Burn", "void  (int32)"); // Tier0
        s.add_method(1, 0x5000, 0x80, "App.Cpu", "Burn", "void  (int32)"); // OSR
        s.osr_code.push((0x5000, 0x5080));
        // Many more OSR methods, out of order and repeated, elsewhere.
        for k in (0..10_000u64).rev() {
            s.osr_code
                .push((0x10_0000 + k * 0x100, 0x10_0000 + k * 0x100 + 0x80));
            s.osr_code
                .push((0x10_0000 + k * 0x100, 0x10_0000 + k * 0x100 + 0x80));
        }
        s.add_method(2, 0x2000, 0x10, "App.Cpu", "Run", "void  (int32)");
        s.finish();
        assert!(s.has_osr_code());
        assert!(s.osr_pseudo(0x5010, 0x1010));
        // The caller, and frames not in OSR code, are kept.
        assert!(!s.osr_pseudo(0x5010, 0x2005));
        assert!(!s.osr_pseudo(0x1010, 0x5010));
        assert!(!s.osr_pseudo(0x2005, 0x1010));
        let mut table = crate::stacks::StackTable::new();
        let a = table.intern_ips(&[0x5010, 0x1010, 0x2005]).unwrap();
        let b = table.intern_ips(&[0x2005]).unwrap();
        table.drop_next_frames(|ip, next| s.osr_pseudo(ip, next));
        assert_eq!(table.ips(a), &[0x5010, 0x2005]);
        assert_eq!(table.ips(b), &[0x2005]);
    }

    #[test]
    fn rejit_ranges_share_one_frame_and_overloads_get_signatures() {
        let mut s = Symbols::new();
        s.add_method(1, 0x1000, 0x100, "App.Cpu", "Burn", "void  (int32)");
        s.add_method(1, 0x5000, 0x80, "App.Cpu", "Burn", "void  (int32)"); // tier 1
        s.add_method(2, 0x2000, 0x10, "App.Cpu", "Run", "void  (int32)");
        s.add_method(
            3,
            0x3000,
            0x10,
            "App.Cpu",
            "Run",
            "void  (class System.String)",
        );
        s.finish();
        let name = |s: &mut Symbols, ip: u64| {
            let f = s.resolve_mut(ip);
            s.frame(f).name.clone()
        };
        let a = s.resolve(0x1010);
        assert_eq!(a, s.resolve(0x5010));
        assert_eq!(s.frame(s.resolve(0x9999)).name, "[native]");
        assert!(is_jit_code_heap("/memfd:doublemapper (deleted)"));
        assert!(!is_jit_code_heap("/usr/lib/libc.so.6"));
        assert_eq!(s.frame(a).name, "App.Cpu.Burn");
        assert_eq!(name(&mut s, 0x2001), "App.Cpu.Run(int32)");
        assert_eq!(name(&mut s, 0x3001), "App.Cpu.Run(String)");
        assert_eq!(name(&mut s, 0x9999), "[native]");
        s.add_module(ModuleMapping {
            start: 0x9000,
            end: 0xa000,
            file_offset: 0x100,
            path: "/usr/lib/libcoreclr.so".into(),
        });
        s.finish();
        assert_eq!(name(&mut s, 0x9999), "libcoreclr.so!+0xa99");
        assert_eq!(name(&mut s, 0xb000), "[unknown 0xb000]");
        assert_eq!(name(&mut s, 0x1000 + 0x100), "[unknown 0x1100]");
        // The JIT's code heap is managed code without a name, never a module.
        s.add_module(ModuleMapping {
            start: 0x40000,
            end: 0x50000,
            file_offset: 0,
            path: "/memfd:doublemapper (deleted)".into(),
        });
        s.finish();
        assert_eq!(name(&mut s, 0x41234), UNNAMED_JIT_CODE);
        // ReadyToRun entry points: up to the next code start.
        s.add_entry_point(9, 0x20000, "R2R", "A", "");
        s.add_entry_point(10, 0x20100, "R2R", "B", "");
        s.finish();
        assert_eq!(name(&mut s, 0x200ff), "R2R.A");
        assert_eq!(name(&mut s, 0x20100), "R2R.B");
        assert_eq!(name(&mut s, 0x20100 + R2R_MAX_SIZE), "[unknown 0x21100]");
    }

    /// Code in a mapped ReadyToRun image with no method event: named from the trace's stored
    /// names first, else from the image file (this machine's framework), else `module!+0x..`.
    #[test]
    fn precompiled_code_is_named_from_the_trace_or_the_image() {
        let dir = std::fs::read_dir("/usr/share/dotnet/shared/Microsoft.NETCore.App")
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).max());
        let fake = "/nowhere/Fake.Stored.dll";
        let mut s = Symbols::new();
        s.add_module(ModuleMapping {
            start: 0x10_0000,
            end: 0x20_0000,
            file_offset: 0,
            path: fake.into(),
        });
        s.r2r.add_stored(fake, 0x1000, 0x80, "Fake.Type+Inner.Run");
        s.finish();
        let name = |s: &mut Symbols, ip: u64| {
            let f = s.resolve_mut(ip);
            s.frame(f).name.clone()
        };
        assert_eq!(name(&mut s, 0x10_1040), "Fake.Type+Inner.Run");
        assert_eq!(name(&mut s, 0x10_1080), "Fake.Stored.dll!+0x1080");
        let Some(dir) = dir else { return };
        let path = dir.join("System.Net.Sockets.dll");
        let Some(img) = crate::r2r::load_image(&path) else {
            panic!("{} is a ReadyToRun image", path.display())
        };
        let f = *img
            .functions()
            .iter()
            .find(|f| img.name(f) == "System.Net.Sockets.SocketAsyncEngine.EventLoop")
            .expect("EventLoop is precompiled");
        let sec = *img
            .sections()
            .iter()
            .find(|x| f.start >= x.rva && f.start - x.rva < x.virtual_size)
            .expect("its section");
        // Mapped as the runtime maps it: the section's file bytes at its RVA.
        let base = 0x7f00_0000_0000u64;
        s.add_module(ModuleMapping {
            start: base + u64::from(sec.rva),
            end: base + u64::from(sec.rva + sec.virtual_size),
            file_offset: u64::from(sec.file_offset),
            path: path.display().to_string(),
        });
        s.finish();
        let ip = base + u64::from(f.start) + 3;
        assert_eq!(
            name(&mut s, ip),
            "System.Net.Sockets.SocketAsyncEngine.EventLoop"
        );
        assert_eq!(s.frame(s.resolve(ip)).kind, FrameKind::Managed);
        // Without reading files, the same address is only an offset in the module.
        let mut off = Symbols::with_images(ImageSources {
            dirs: Vec::new(),
            original_paths: false,
        });
        off.add_module(ModuleMapping {
            start: base + u64::from(sec.rva),
            end: base + u64::from(sec.rva + sec.virtual_size),
            file_offset: u64::from(sec.file_offset),
            path: path.display().to_string(),
        });
        off.finish();
        assert!(name(&mut off, ip).starts_with("System.Net.Sockets.dll!+0x"));
    }
}
