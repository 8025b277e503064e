//! Building a heap graph from a trace's GC heap dump events, streamed once: the dump is the
//! first GC whose `GC/BulkNode` and `GC/BulkEdge` blocks end with its `GC/Stop`. The events come
//! in file order, not time order: under server GC the `GC/Start` is one GC thread's and the
//! walk and `GC/Stop` another's, so the start may be read after the whole walk. The walk is
//! therefore told by its own blocks: it ends at a `GC/Stop` later than its first block, from
//! the walking thread or of the GC whose blocking gen2 `GC/Start` was read. Nodes and edges
//! are two parallel streams (each node's `EdgeCount` consumes that many edges), so one lost
//! block misaligns every object after it: block index gaps and an edge total that differs from
//! the nodes' claim are errors, never a graph presented as whole. Types are named after the
//! stream (a `Type/BulkType` event may come after the nodes that use it). Roots become
//! PerfView's pseudo-nodes (`[.NET Roots]`, `[local vars]`, `[static var T.F]`, handle groups).

use clr_events::heapdump::{
    GcBulkEdge, GcBulkNode, GcBulkRootEdge, GcBulkRootStaticVar, GcBulkType,
};
use clr_events::runtime::{ids, rundown_ids, GcEnd, GcRootKind, GcStart, GcType, ModuleLoad};
use clr_events::KnownProvider;
use gcdump::{DumpInfo, GraphBuilder, HeapDump, NodeIndex};
use nettrace::{ByteSource, Event, Reader};
use rustc_hash::FxHashMap;

/// `GC/BulkRootConditionalWeakTableElementEdge` (dependent handles).
const GC_BULK_ROOT_CWT: u32 = 17;
/// `GCRootFlag` bits.
const ROOT_PINNING: u32 = 1;
const ROOT_WEAK: u32 = 2;

/// Why a trace gave no heap graph.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FromTraceError {
    /// No blocking gen2 GC with heap dump events.
    #[error("the trace holds no GC heap dump (no blocking gen2 GC with GC/BulkNode events; record with the GC heap dump keywords, 0x1980001)")]
    NoHeapDump,
    /// The dump started but did not end.
    #[error("the trace shows the start of a heap dump (GC #{gc}) but not its completion ({nodes} objects so far): the session ended or events were lost before GC/Stop")]
    Incomplete {
        /// The GC's number.
        gc: u32,
        /// Objects read before the trace ended.
        nodes: u64,
    },
    /// Blocks of the dump were lost: the graph cannot be trusted.
    #[error("the heap dump of GC #{gc} lost events: {what}; nodes and edges are parallel streams, so the graph after the loss is wrong and is not shown")]
    Lost {
        /// The GC's number.
        gc: u32,
        /// What was seen.
        what: String,
    },
    /// The trace could not be read up to the dump's end.
    #[error("reading the trace: {0}")]
    Read(#[from] nettrace::Error),
    /// The graph is too large for the file format or inconsistent.
    #[error("{0}")]
    Graph(#[from] gcdump::Error),
}

/// A graph read from a trace, with what the reading found.
#[derive(Debug)]
pub struct TraceHeap {
    /// The snapshot.
    pub dump: HeapDump,
    /// The GC that walked the heap.
    pub gc: u32,
    /// References to addresses that are no object of the dump (dropped, as other readers do).
    pub unresolved_edges: u64,
    /// Roots that name no object of the dump (dropped).
    pub unresolved_roots: u64,
    /// Events the trace as a whole lost (sequence gaps), outside the dump's blocks.
    pub dropped_events: u64,
}

#[derive(Default)]
struct Collect {
    state: State,
    gc: u32,
    /// `gc` was read from a `GC/Start` (or the walk's `GC/Stop`).
    gc_known: bool,
    /// The thread of the walk's first block and that block's time.
    walk: Option<(u64, i64)>,
    ptr: u8,
    node_addr: Vec<u64>,
    node_size: Vec<u32>,
    node_type: Vec<u32>,
    node_edges: Vec<u32>,
    edge_claimed: u64,
    edges: Vec<u64>,
    type_ids: FxHashMap<u64, u32>,
    type_id_list: Vec<u64>,
    type_names: FxHashMap<u64, String>,
    /// (object, group)
    roots: Vec<(u64, Group)>,
    /// (object, the held object's type id, field name, thread static)
    statics: Vec<(u64, u64, String, bool)>,
    /// The IL paths of the modules the trace loaded (its rundown's or load events).
    module_paths: Vec<String>,
    next_index: [Option<u32>; 3],
    lost: Vec<String>,
    decode_errors: u64,
    first_decode_error: Option<String>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Waiting,
    InDump,
    Done,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Group {
    Stack,
    Strong,
    Pinning,
    Finalizer,
    Other,
    Dependent,
}

impl Group {
    fn name(self) -> &'static str {
        match self {
            Group::Stack => "[local vars]",
            Group::Strong => "[strong Handles]",
            Group::Pinning => "[pinning Handles]",
            Group::Finalizer => "[finalizer Handles]",
            Group::Other => "[other Handles]",
            Group::Dependent => "[Dependent Handles]",
        }
    }
}

/// Block kinds whose `Index` must run without gaps.
const NODES: usize = 0;
const EDGES: usize = 1;
const ROOTS: usize = 2;

/// Reads `reader` to its end and builds the graph of its first complete heap dump.
/// `progress` hears the objects read so far, now and then. `read_module` gives the bytes of a
/// module the trace loaded, by the path its events name (None where it cannot or must not be
/// read: a path the traced process chose, so the caller reads it under that process's root,
/// through no link, bounded): the static roots are named after the classes that declare them.
pub fn graph_from_trace<S: ByteSource>(
    reader: &mut Reader<S>,
    progress: &mut dyn FnMut(u64),
    read_module: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
) -> Result<TraceHeap, FromTraceError> {
    let mut c = Collect {
        ptr: reader.header().pointer_size,
        ..Collect::default()
    };
    let pid = reader.header().process_id;
    let start_ticks = unix_ns_ticks(reader.header().start_unix_ns());
    let mut last_report = 0usize;
    let result = reader.for_each_event(|ev| {
        c.event(ev);
        if c.node_addr.len() >= last_report + 100_000 {
            last_report = c.node_addr.len();
            progress(last_report as u64);
        }
        true
    });
    if let Err(e) = result {
        // Events after the dump's end are not needed.
        if c.state != State::Done {
            if c.state == State::InDump {
                return Err(FromTraceError::Incomplete {
                    gc: c.gc,
                    nodes: c.node_addr.len() as u64,
                });
            }
            return Err(e.into());
        }
    }
    match c.state {
        State::Waiting => return Err(FromTraceError::NoHeapDump),
        State::InDump => {
            return Err(FromTraceError::Incomplete {
                gc: c.gc,
                nodes: c.node_addr.len() as u64,
            })
        }
        State::Done => {}
    }
    if c.edge_claimed != c.edges.len() as u64 {
        c.lost.push(format!(
            "the objects claim {} references but {} came",
            c.edge_claimed,
            c.edges.len()
        ));
    }
    if c.decode_errors > 0 {
        c.lost.push(format!(
            "{} bulk events could not be decoded (first: {})",
            c.decode_errors,
            c.first_decode_error.clone().unwrap_or_default()
        ));
    }
    if !c.lost.is_empty() {
        return Err(FromTraceError::Lost {
            gc: c.gc,
            what: c.lost.join("; "),
        });
    }
    let dropped = reader.stats().dropped_events;
    let gc = c.gc;
    let (graph, unresolved_edges, unresolved_roots) = c.build(read_module)?;
    Ok(TraceHeap {
        dump: HeapDump {
            graph,
            info: DumpInfo {
                is_64bit: reader.header().pointer_size != 4,
                process_id: pid.map_or(0, |p| p as i32),
                time_collected_ticks: start_ticks,
                creation_tool: Some("clrspy".into()),
                ..DumpInfo::default()
            },
        },
        gc,
        unresolved_edges,
        unresolved_roots,
        dropped_events: dropped,
    })
}

/// .NET ticks (100 ns since 0001-01-01) of a Unix time in nanoseconds.
fn unix_ns_ticks(ns: i64) -> i64 {
    const UNIX_EPOCH_TICKS: i64 = 621_355_968_000_000_000;
    UNIX_EPOCH_TICKS.saturating_add(ns / 100)
}

impl Collect {
    fn event(&mut self, ev: &Event<'_>) {
        let (id, ver, p, ptr) = (ev.event_id(), ev.version(), ev.payload, self.ptr);
        let provider = clr_events::known_provider(ev.provider());
        let module = match provider {
            Some(KnownProvider::Runtime) => id == ids::MODULE_LOAD,
            Some(KnownProvider::Rundown) => {
                id == rundown_ids::MODULE_DC_START || id == rundown_ids::MODULE_DC_STOP
            }
            _ => false,
        };
        if let (true, Some(k)) = (module, provider) {
            if let Ok(m) = ModuleLoad::parse_event(k, id, p, ver, ptr) {
                let path = m.il_path.to_string_lossy();
                if !path.is_empty() && !self.module_paths.contains(&path) {
                    self.module_paths.push(path);
                }
            }
            return;
        }
        if provider != Some(KnownProvider::Runtime) {
            return;
        }
        // Types are named whenever they come.
        if id == ids::GC_BULK_TYPE {
            self.types(p, ver, ptr);
            return;
        }
        if self.state == State::Done {
            return;
        }
        match id {
            ids::GC_START => {
                if let Ok(g) = GcStart::parse(p, ver, ptr) {
                    if g.depth >= 2 && g.kind != GcType::Background && !self.gc_known {
                        self.state = State::InDump;
                        self.gc = g.count;
                        self.gc_known = true;
                    }
                }
            }
            ids::GC_STOP => {
                if let Ok(g) = GcEnd::parse(p, ver, ptr) {
                    self.stop(g.count, ev.thread_id, ev.timestamp);
                }
            }
            ids::GC_BULK_NODE
            | ids::GC_BULK_EDGE
            | ids::GC_BULK_ROOT_EDGE
            | ids::GC_BULK_ROOT_STATIC_VAR
            | GC_BULK_ROOT_CWT => {
                self.state = State::InDump;
                self.walk.get_or_insert((ev.thread_id, ev.timestamp));
                match id {
                    ids::GC_BULK_NODE => self.nodes(p, ver, ptr),
                    ids::GC_BULK_EDGE => self.edges(p, ver, ptr),
                    ids::GC_BULK_ROOT_EDGE => self.root_edges(p, ver, ptr),
                    ids::GC_BULK_ROOT_STATIC_VAR => self.statics(p, ver, ptr),
                    _ => self.cwt(p, ptr),
                }
            }
            _ => {}
        }
    }

    /// A `GC/Stop` of GC `count` on `thread` at `time`: the walk's end when it follows the
    /// walk's first block and is the walking thread's or the started GC's; a started GC that
    /// ends with no walk is forgotten (the next one may walk).
    fn stop(&mut self, count: u32, thread: u64, time: i64) {
        let started = self.gc_known && self.gc == count;
        match self.walk {
            Some((walker, first)) if !self.node_addr.is_empty() => {
                if time >= first && (started || thread == walker) {
                    self.state = State::Done;
                    self.gc = count;
                    self.gc_known = true;
                } else if started {
                    // An earlier GC's end, read after the walk began.
                    self.gc_known = false;
                }
            }
            _ if started => {
                // A gen2 GC without a heap walk: keep looking.
                *self = Collect {
                    ptr: self.ptr,
                    type_names: std::mem::take(&mut self.type_names),
                    module_paths: std::mem::take(&mut self.module_paths),
                    ..Collect::default()
                };
            }
            _ => {}
        }
    }

    fn failed(&mut self, what: &str, e: impl std::fmt::Display) {
        self.decode_errors += 1;
        if self.first_decode_error.is_none() {
            self.first_decode_error = Some(format!("{what}: {e}"));
        }
    }

    /// Checks a block's index follows the previous one of its kind.
    fn index(&mut self, kind: usize, index: u32) {
        let names = ["GC/BulkNode", "GC/BulkEdge", "GC/BulkRootEdge"];
        let want = self.next_index[kind].unwrap_or(0);
        if index != want {
            self.lost.push(format!(
                "{} block {want} was followed by block {index}",
                names[kind]
            ));
        }
        self.next_index[kind] = Some(index.wrapping_add(1));
    }

    fn type_index(&mut self, id: u64) -> u32 {
        if let Some(&t) = self.type_ids.get(&id) {
            return t;
        }
        let t = self.type_id_list.len() as u32;
        self.type_id_list.push(id);
        self.type_ids.insert(id, t);
        t
    }

    fn types(&mut self, p: &[u8], ver: u8, ptr: u8) {
        let b = match GcBulkType::parse(p, ver, ptr) {
            Ok(b) => b,
            Err(e) => return self.failed("Type/BulkType", e),
        };
        for t in b.values {
            match t {
                Ok(t) => {
                    self.type_names
                        .entry(t.type_id)
                        .or_insert_with(|| display_type_name(&t.name.to_string_lossy()));
                }
                Err(e) => return self.failed("Type/BulkType", e),
            }
        }
    }

    fn nodes(&mut self, p: &[u8], ver: u8, ptr: u8) {
        let b = match GcBulkNode::parse(p, ver, ptr) {
            Ok(b) => b,
            Err(e) => return self.failed("GC/BulkNode", e),
        };
        self.index(NODES, b.index);
        for n in b.values {
            match n {
                Ok(n) => {
                    let t = self.type_index(n.type_id);
                    self.node_addr.push(n.address);
                    self.node_size.push(n.size.min(u64::from(u32::MAX)) as u32);
                    self.node_type.push(t);
                    let ec = n.edge_count.min(u64::from(u32::MAX)) as u32;
                    self.node_edges.push(ec);
                    self.edge_claimed += u64::from(ec);
                }
                Err(e) => return self.failed("GC/BulkNode", e),
            }
        }
    }

    fn edges(&mut self, p: &[u8], ver: u8, ptr: u8) {
        let b = match GcBulkEdge::parse(p, ver, ptr) {
            Ok(b) => b,
            Err(e) => return self.failed("GC/BulkEdge", e),
        };
        self.index(EDGES, b.index);
        for e in b.values {
            match e {
                Ok(e) => self.edges.push(e.target),
                Err(e) => return self.failed("GC/BulkEdge", e),
            }
        }
    }

    fn root_edges(&mut self, p: &[u8], ver: u8, ptr: u8) {
        let b = match GcBulkRootEdge::parse(p, ver, ptr) {
            Ok(b) => b,
            Err(e) => return self.failed("GC/BulkRootEdge", e),
        };
        self.index(ROOTS, b.index);
        for r in b.values {
            let r = match r {
                Ok(r) => r,
                Err(e) => return self.failed("GC/BulkRootEdge", e),
            };
            if r.flags & ROOT_WEAK != 0 {
                continue;
            }
            let g = match r.kind {
                GcRootKind::Stack => Group::Stack,
                GcRootKind::Finalizer => Group::Finalizer,
                GcRootKind::Handle if r.flags & ROOT_PINNING != 0 => Group::Pinning,
                GcRootKind::Handle => Group::Strong,
                GcRootKind::DependentHandle => Group::Dependent,
                _ => Group::Other,
            };
            self.roots.push((r.object, g));
        }
    }

    fn statics(&mut self, p: &[u8], ver: u8, ptr: u8) {
        let b = match GcBulkRootStaticVar::parse(p, ver, ptr) {
            Ok(b) => b,
            Err(e) => return self.failed("GC/BulkRootStaticVar", e),
        };
        for s in b.values {
            match s {
                Ok(s) => self.statics.push((
                    s.object,
                    s.type_id,
                    s.field_name.to_string_lossy(),
                    s.flags & 1 != 0,
                )),
                Err(e) => return self.failed("GC/BulkRootStaticVar", e),
            }
        }
    }

    /// `GC/BulkRootConditionalWeakTableElementEdge`: Index, Count, ClrInstanceID, then
    /// (key, value, root id) pointers; a live key keeps its value.
    fn cwt(&mut self, p: &[u8], ptr: u8) {
        let w = if ptr == 4 { 4 } else { 8 };
        let Some(items) = p.get(10..) else {
            return self.failed("GC/BulkRootConditionalWeakTableElementEdge", "short header");
        };
        let read = |b: &[u8]| -> u64 {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(a)
        };
        for it in items.chunks_exact(3 * w) {
            let key = read(&it[..w]);
            let value = read(&it[w..2 * w]);
            if key != 0 {
                self.roots.push((value, Group::Dependent));
            }
        }
    }

    /// The graph: objects first (in stream order), then the root pseudo-nodes.
    fn build(
        mut self,
        read_module: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<(gcdump::Graph, u64, u64), FromTraceError> {
        // The classes that declare the statics, from the assemblies the trace loaded.
        let fields: Vec<&str> = self.statics.iter().map(|s| s.2.as_str()).collect();
        let declared =
            super::statics::DeclaredStatics::read(&self.module_paths, &fields, read_module);
        drop(fields);
        let n = self.node_addr.len();
        if n >= (i32::MAX as usize) - 1_000_000 {
            return Err(FromTraceError::Lost {
                gc: self.gc,
                what: format!("{n} objects are more than the .gcdump format holds"),
            });
        }
        // Address → node, by binary search over the nodes sorted by address.
        let mut by_addr: Vec<u32> = (0..n as u32).collect();
        by_addr.sort_unstable_by_key(|&i| self.node_addr[i as usize]);
        let addr = &self.node_addr;
        let find = |a: u64| -> Option<u32> {
            by_addr
                .binary_search_by_key(&a, |&i| addr[i as usize])
                .ok()
                .map(|k| by_addr[k])
        };
        let mut b = GraphBuilder::new();
        b.reserve(n + 64, self.edges.len() + self.roots.len());
        let type_names = std::mem::take(&mut self.type_names);
        for &id in &self.type_id_list {
            let name = type_names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("Type(0x{id:x})"));
            b.add_type(&name, "");
        }
        let mut unresolved_edges = 0u64;
        let mut e = 0usize;
        for i in 0..n {
            let k = self.node_edges[i] as usize;
            for &target in self.edges.get(e..e + k).unwrap_or(&[]) {
                match find(target) {
                    Some(t) => b.push_child(t),
                    None if target == 0 => {}
                    None => unresolved_edges += 1,
                }
            }
            e += k;
            b.end_node(self.node_type[i], self.node_size[i], self.node_addr[i]);
        }
        drop(std::mem::take(&mut self.edges));
        // Root groups.
        let mut unresolved_roots = 0u64;
        let mut groups: Vec<(Group, Vec<NodeIndex>)> = Vec::new();
        self.roots.sort_unstable_by_key(|r| (r.1, r.0));
        self.roots.dedup();
        for &(obj, g) in &self.roots {
            let Some(t) = find(obj) else {
                unresolved_roots += 1;
                continue;
            };
            match groups.last_mut() {
                Some((lg, v)) if *lg == g => v.push(t),
                _ => groups.push((g, vec![t])),
            }
        }
        let pseudo = |b: &mut GraphBuilder, name: &str, kids: &[NodeIndex]| -> NodeIndex {
            let t = b.add_type(name, "");
            b.add_node(t, 0, 0, kids)
        };
        let mut top: Vec<NodeIndex> = Vec::new();
        let mut other: Vec<NodeIndex> = Vec::new();
        for (g, kids) in &groups {
            let node = pseudo(&mut b, g.name(), kids);
            if *g == Group::Stack {
                top.push(node);
            } else {
                other.push(node);
            }
        }
        // Statics: one node per field, grouped by thread-static or not.
        let mut statics: Vec<NodeIndex> = Vec::new();
        let mut thread_statics: Vec<NodeIndex> = Vec::new();
        let mut names: FxHashMap<String, Vec<NodeIndex>> = FxHashMap::default();
        let mut order: Vec<(String, bool)> = Vec::new();
        for (obj, ty, field, thread) in &self.statics {
            let Some(t) = find(*obj) else {
                unresolved_roots += 1;
                continue;
            };
            let ty = type_names
                .get(ty)
                .cloned()
                .unwrap_or_else(|| format!("Type(0x{ty:x})"));
            let kind = if *thread {
                "thread static var"
            } else {
                "static var"
            };
            let name = declared.root_name(kind, field, &ty);
            let v = names.entry(name.clone()).or_default();
            if v.is_empty() {
                order.push((name, *thread));
            }
            if !v.contains(&t) {
                v.push(t);
            }
        }
        for (name, thread) in order {
            let kids = names.remove(&name).unwrap_or_default();
            let node = pseudo(&mut b, &name, &kids);
            if thread {
                thread_statics.push(node);
            } else {
                statics.push(node);
            }
        }
        if !statics.is_empty() {
            top.push(pseudo(&mut b, "[static vars]", &statics));
        }
        if !thread_statics.is_empty() {
            top.push(pseudo(&mut b, "[thread static vars]", &thread_statics));
        }
        if !other.is_empty() {
            top.push(pseudo(&mut b, "[other roots]", &other));
        }
        let root = pseudo(&mut b, "[.NET Roots]", &top);
        b.set_root(root);
        Ok((b.finish()?, unresolved_edges, unresolved_roots))
    }
}

/// A runtime type name as people read it: generic arity marks dropped, `[T]` as `<T>`,
/// arrays as `T[]` (`System.Collections.Generic.List`1[Leak.Order]` →
/// `System.Collections.Generic.List<Leak.Order>`).
pub(crate) fn display_type_name(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '`' if chars.peek().is_some_and(|c| c.is_ascii_digit()) => {
                while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
                    chars.next();
                }
            }
            '[' if matches!(chars.peek(), Some(']') | Some(',')) => {
                // An array rank: `[]`, `[,]`.
                out.push('[');
                for c in chars.by_ref() {
                    out.push(c);
                    if c == ']' {
                        break;
                    }
                }
            }
            '[' => out.push('<'),
            ']' => out.push('>'),
            c => out.push(c),
        }
    }
    out
}
