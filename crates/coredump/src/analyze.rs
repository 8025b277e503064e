//! The analysis proper: the runtime's threads, their stacks, the monitors held and who waits
//! for them, the deadlock cycles, the exceptions and the modules, read through the data access
//! library (runs in the worker process).

use std::collections::{BTreeMap, HashMap};

use crate::dac::structs::ThreadData;
use crate::dac::{Dac, RawStack};
use crate::elf::Core;
use crate::model::*;

/// Thread state bits (`Thread::ThreadState`).
const TS_BACKGROUND: i32 = 0x200;
const TS_UNSTARTED: i32 = 0x400;
const TS_DEAD: i32 = 0x800;
const TS_TP_WORKER: i32 = 0x0100_0000;
const TS_COMPLETION_PORT: i32 = 0x0800_0000;
/// Threads kept at most (a runaway list in a damaged dump).
const MAX_THREADS: usize = 100_000;
/// Sync blocks read at most.
const MAX_SYNC_BLOCKS: u32 = 10_000_000;
/// Inner exceptions followed at most.
const MAX_INNER: usize = 32;
/// Characters of an exception message kept.
const MAX_MESSAGE: u32 = 4096;

/// The objects `gcroot` looks for.
#[derive(Clone, Debug)]
pub enum RootTarget {
    /// One object, by address.
    Address(u64),
    /// The first few objects of the types whose name matches (`*` and `?`; without them, a
    /// part of the name), case-insensitive.
    Type(String),
}

/// What to read.
#[derive(Clone, Debug, Default)]
pub(crate) struct Parts {
    /// Walk the heap (every object: seconds to minutes on large heaps).
    pub(crate) heap: bool,
    /// Find the paths from the roots to these objects (the heap is walked for it).
    pub(crate) gcroot: Option<RootTarget>,
}

/// The runtime's threads with their data, in the thread store's order.
fn runtime_threads(dac: &Dac, warnings: &mut Vec<String>) -> (Vec<(u64, ThreadData)>, u64, u64) {
    let Some(store) = dac.thread_store() else {
        warnings.push("the runtime's thread store could not be read".into());
        return (Vec::new(), 0, 0);
    };
    let mut out = Vec::new();
    let mut at = store.first_thread;
    while at != 0 && out.len() < MAX_THREADS {
        let Some(t) = dac.thread(at) else {
            warnings.push(format!(
                "thread {at:#x} of the runtime's list could not be read"
            ));
            break;
        };
        let next = t.next_thread;
        out.push((at, t));
        if next == at {
            break;
        }
        at = next;
    }
    (out, store.finalizer_thread, store.gc_thread)
}

/// Reads everything `parts` asks for from `core` through `dac`.
pub(crate) fn analyze(core: &Core, dac: &Dac, facts: DumpFacts, parts: Parts) -> Analysis {
    let mut warnings = Vec::new();
    let (list, finalizer, gc) = runtime_threads(dac, &mut warnings);
    let by_address: HashMap<u64, (u32, u32)> = list
        .iter()
        .map(|(a, t)| (*a, (t.os_thread_id, t.cor_thread_id)))
        .collect();
    let mut threads = Vec::new();
    // Per thread entering a monitor: the stack pointer up to which its references may be the
    // monitor's object (the frame of the code that called Monitor.Enter).
    let mut wait_limits: HashMap<u32, u64> = HashMap::new();
    for (addr, t) in &list {
        let mut kinds = Vec::new();
        if *addr == finalizer {
            kinds.push("finalizer".to_string());
        }
        if *addr == gc {
            kinds.push("gc".to_string());
        }
        for (bit, what) in [
            (TS_TP_WORKER, "threadpool worker"),
            (TS_COMPLETION_PORT, "threadpool I/O"),
            (TS_BACKGROUND, "background"),
            (TS_UNSTARTED, "unstarted"),
            (TS_DEAD, "dead"),
        ] {
            if t.state & bit != 0 {
                kinds.push(what.to_string());
            }
        }
        let exception = exception_object(core, t.last_thrown_object_handle);
        let stack = if t.os_thread_id != 0 {
            dac.stack(t.os_thread_id)
        } else {
            RawStack::default()
        };
        let limit = wait_limit(&stack);
        if let Some(l) = limit {
            wait_limits.insert(t.os_thread_id, l);
        }
        let runtime_frame = stack.runtime_top.clone();
        let frames = stack.frames;
        threads.push(ManagedThread {
            name: None,
            managed_id: t.cor_thread_id,
            os_id: t.os_thread_id,
            kinds,
            address: hex(*addr),
            lock_count: t.lock_count,
            exception: exception.map(hex),
            entering_monitor: limit.is_some(),
            runtime_frame,
            waits_for: None,
            frames: frames
                .iter()
                .map(|f| Frame {
                    sp: hex(f.sp),
                    ip: hex(f.ip),
                    method: f.method.clone().unwrap_or_default(),
                })
                .collect(),
        });
    }

    let objects = thread_objects(core, dac, &list);
    let names = thread_names(core, dac, &list, &objects);
    for (t, (addr, _)) in threads.iter_mut().zip(&list) {
        t.name = names.get(addr).cloned();
    }
    let (heap, gcroots) = if parts.heap || parts.gcroot.is_some() {
        heap_and_roots(core, dac, &list, &parts, &mut warnings)
    } else {
        (None, Vec::new())
    };
    let mut locks = held_monitors(dac, &by_address, &mut warnings);
    let entering = threads.iter().filter(|t| t.entering_monitor).count();
    if locks.is_empty() && entering > 0 {
        warnings.push(format!(
            "{entering} thread(s) wait to enter a monitor, but no monitor is held in this dump's sync-block table: a mini or triage dump leaves the table out (a heap dump holds it: clrspy dump -p PID --type heap), or the monitors were released as the dump was written"
        ));
    }
    find_waits(dac, &mut threads, &wait_limits, &mut locks);
    let deadlocks = deadlocks(&threads, &locks);
    let exceptions = exceptions(dac, &threads, &mut warnings);
    let modules = modules(core);
    Analysis {
        dump: facts,
        threads,
        locks,
        deadlocks,
        exceptions,
        heap,
        modules,
        gcroots,
        warnings,
    }
}

/// The kind of objects the heap walk collects: `gcroot --type`'s.
const ROOT_TARGETS: usize = 0;
/// Bytes of the runtime's `Thread` searched for the handle of its managed `Thread` object.
const THREAD_HANDLE_SEARCH: u64 = 1024;

/// The heap walked: its statistics and the paths from the roots to the objects `parts` names.
fn heap_and_roots(
    core: &Core,
    dac: &Dac,
    list: &[(u64, ThreadData)],
    parts: &Parts,
    warnings: &mut Vec<String>,
) -> (Option<HeapStats>, Vec<GcRoot>) {
    let pattern = match &parts.gcroot {
        Some(RootTarget::Type(p)) => clrspy_values::NamePattern::new(p).ok(),
        _ => None,
    };
    let lower = match &parts.gcroot {
        Some(RootTarget::Type(p)) => p.to_ascii_lowercase(),
        _ => String::new(),
    };
    let accept = |name: &str| {
        let hit = match &pattern {
            Some(p) if p.has_wildcards() => p.is_match(name),
            Some(_) => name.to_ascii_lowercase().contains(&lower),
            None => false,
        };
        hit.then_some(ROOT_TARGETS)
    };
    let pick = crate::heap::Pick {
        accept: &accept,
        max: vec![crate::gcroot::MAX_TARGETS],
    };
    let walked = crate::heap::walk(core, dac, list, pick, warnings);
    let targets = match &parts.gcroot {
        Some(RootTarget::Address(a)) => vec![*a],
        Some(RootTarget::Type(p)) => {
            if walked.found[ROOT_TARGETS].is_empty() {
                warnings.push(format!("no object of a type matching {p} in the heap"));
            }
            walked.found[ROOT_TARGETS].clone()
        }
        None => Vec::new(),
    };
    let roots = if targets.is_empty() {
        Vec::new()
    } else {
        let threads: Vec<u32> = list
            .iter()
            .map(|(_, t)| t.os_thread_id)
            .filter(|&t| t != 0)
            .collect();
        let mut g =
            crate::gcroot::Graph::new(core, dac, walked.ranges.clone(), walked.pinned.clone());
        crate::gcroot::paths(&mut g, &threads, &targets)
    };
    (parts.heap.then_some(walked.stats), roots)
}

/// Each runtime thread's managed `Thread` object: the runtime's `Thread` holds a handle to
/// it near its start. The handle's place is found on the first thread (a word pointing to a
/// slot that holds a `System.Threading.Thread` whose fields hold the runtime thread's address)
/// and tried first on the others.
fn thread_objects(core: &Core, dac: &Dac, list: &[(u64, ThreadData)]) -> Vec<u64> {
    let u64_at = |a: u64| {
        let mut b = [0u8; 8];
        (a & 7 == 0 && core.read_held(a, &mut b) == 8).then(|| u64::from_le_bytes(b))
    };
    let mut thread_mt = None;
    let mut not_thread = std::collections::HashSet::new();
    let mut is_thread = |mt: u64| -> bool {
        if thread_mt == Some(mt) {
            return true;
        }
        if thread_mt.is_some() || not_thread.contains(&mt) {
            return false;
        }
        if dac.type_name(mt).as_deref() == Some("System.Threading.Thread") {
            thread_mt = Some(mt);
            true
        } else {
            not_thread.insert(mt);
            false
        }
    };
    let mut place: Option<u64> = None;
    let mut out = Vec::new();
    for (native, _) in list {
        let offsets = place.into_iter().chain(
            (0..THREAD_HANDLE_SEARCH)
                .step_by(8)
                .filter(|o| Some(*o) != place),
        );
        for off in offsets {
            let Some(obj) = u64_at(native + off).filter(|&h| h != 0).and_then(u64_at) else {
                continue;
            };
            let Some(mt) = u64_at(obj).filter(|&m| m != 0).map(|m| m & !7) else {
                continue;
            };
            if !is_thread(mt) {
                continue;
            }
            // Its fields hold this runtime thread's address.
            let holds = (1..16).any(|i| u64_at(obj + 8 * i) == Some(*native));
            if holds {
                place = Some(off);
                out.push(obj);
                break;
            }
        }
    }
    out
}

/// The threads' names, by the runtime's `Thread` address: each managed `Thread` object holds
/// the address of its runtime thread in one field and its name, the one `String` it refers
/// to, in another (no field names needed: the values tell them apart).
fn thread_names(
    core: &Core,
    dac: &Dac,
    list: &[(u64, ThreadData)],
    objects: &[u64],
) -> HashMap<u64, String> {
    let natives: std::collections::HashSet<u64> = list.iter().map(|(a, _)| *a).collect();
    let mut names = HashMap::new();
    for &obj in objects {
        let Some(od) = dac.object(obj) else { continue };
        let size = od.size.min(256);
        let mut native = None;
        let mut name = None;
        let mut at = obj + 8;
        while at + 8 <= obj + size {
            let mut b = [0u8; 8];
            if core.read_held(at, &mut b) == 8 {
                let v = u64::from_le_bytes(b);
                if natives.contains(&v) {
                    native = Some(v);
                } else if v != 0 && name.is_none() {
                    // The library's own kind of the object: 0 is a string.
                    let is_string = dac
                        .object(v)
                        .is_some_and(|o| o.method_table != 0 && o.object_type == 0);
                    if is_string {
                        name = dac.string(v, 256);
                    }
                }
            }
            at += 8;
        }
        if let (Some(n), Some(t)) = (name, native) {
            names.insert(t, n);
        }
    }
    names
}

/// The object a thread's last-thrown handle points to.
fn exception_object(core: &Core, handle: u64) -> Option<u64> {
    if handle == 0 {
        return None;
    }
    let mut b = [0u8; 8];
    (core.read_virtual(handle, &mut b) == 8)
        .then(|| u64::from_le_bytes(b))
        .filter(|&o| o != 0)
}

/// The monitors held, from the sync-block table.
fn held_monitors(
    dac: &Dac,
    by_address: &HashMap<u64, (u32, u32)>,
    warnings: &mut Vec<String>,
) -> Vec<Lock> {
    let mut locks = Vec::new();
    let Some(first) = dac.sync_block(1) else {
        // No sync block at all is usual: monitors are thin locks until contended.
        return locks;
    };
    let count = first.sync_block_count.min(MAX_SYNC_BLOCKS);
    for i in 1..=count {
        let Some(b) = (if i == 1 {
            Some(first.clone())
        } else {
            dac.sync_block(i)
        }) else {
            warnings.push(format!("sync block {i} could not be read"));
            continue;
        };
        if b.free != 0 || b.monitor_held == 0 || b.holding_thread == 0 {
            continue;
        }
        let (owner_os_id, owner_managed_id) =
            by_address.get(&b.holding_thread).copied().unwrap_or((0, 0));
        let object_type = dac
            .object(b.object)
            .and_then(|o| dac.type_name(o.method_table))
            .unwrap_or_else(|| "?".into());
        locks.push(Lock {
            index: i,
            object: hex(b.object),
            object_type,
            owner_os_id,
            owner_managed_id,
            recursion: b.recursion,
            // The runtime reports a held monitor as 1 + 2 per waiter.
            waiters: b.monitor_held.saturating_sub(1) / 2,
            waiting_threads: Vec::new(),
        });
    }
    locks
}

/// Whether a frame is inside entering a monitor.
fn entering_monitor(method: &str) -> bool {
    method.starts_with("System.Threading.Monitor.Enter")
        || method.starts_with("System.Threading.Monitor.ReliableEnter")
        || method.starts_with("System.Threading.Monitor.TryEnter")
}

/// Where a thread entering a monitor may hold the monitor's object: at or below the frame of
/// the code that called `Monitor.Enter` (None when it is not entering one). Its innermost
/// managed frames are in `Monitor.Enter` (.NET 10), or it sits in the runtime's frame of
/// `Monitor.ReliableEnter` before any managed frame (.NET 8, 9).
fn wait_limit(stack: &RawStack) -> Option<u64> {
    let frames = &stack.frames;
    if let Some(enter) = frames
        .iter()
        .take(4)
        .rposition(|f| f.method.as_deref().is_some_and(entering_monitor))
    {
        return Some(frames.get(enter + 1).map_or(u64::MAX, |f| f.sp));
    }
    stack
        .runtime_top
        .as_deref()
        .is_some_and(entering_monitor)
        .then(|| frames.first().map_or(u64::MAX, |f| f.sp))
}

/// For each thread whose innermost managed frames enter a monitor, the held monitor it waits
/// for: the innermost reference on its stack to an object whose monitor another thread holds.
fn find_waits(
    dac: &Dac,
    threads: &mut [ManagedThread],
    limits: &HashMap<u32, u64>,
    locks: &mut [Lock],
) {
    let held: HashMap<u64, (usize, u32)> = locks
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            u64::from_str_radix(l.object.trim_start_matches("0x"), 16)
                .ok()
                .map(|o| (o, (i, l.owner_os_id)))
        })
        .collect();
    if held.is_empty() {
        return;
    }
    for t in threads.iter_mut() {
        let Some(&limit) = limits.get(&t.os_id) else {
            continue;
        };
        let mut refs = dac.stack_refs(t.os_id);
        refs.sort_by_key(|r| r.stack_pointer);
        let wanted = refs.iter().find(|r| {
            r.stack_pointer <= limit
                && held
                    .get(&r.object)
                    .is_some_and(|&(_, owner)| owner != t.os_id)
        });
        if let Some(r) = wanted {
            t.waits_for = Some(hex(r.object));
            if let Some(&(i, _)) = held.get(&r.object) {
                locks[i].waiting_threads.push(t.os_id);
            }
        }
    }
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// The cycles among monitor waits.
fn deadlocks(threads: &[ManagedThread], locks: &[Lock]) -> Vec<Deadlock> {
    let waits: BTreeMap<u32, u64> = threads
        .iter()
        .filter_map(|t| Some((t.os_id, parse_hex(t.waits_for.as_deref()?)?)))
        .collect();
    let owners: HashMap<u64, u32> = locks
        .iter()
        .filter_map(|l| Some((parse_hex(&l.object)?, l.owner_os_id)))
        .collect();
    let by_os: HashMap<u32, &ManagedThread> = threads.iter().map(|t| (t.os_id, t)).collect();
    crate::locks::cycles(&waits, &owners)
        .into_iter()
        .map(|cycle| Deadlock {
            members: cycle
                .iter()
                .map(|tid| {
                    let t = by_os.get(tid);
                    let waits_for = t.and_then(|t| t.waits_for.clone()).unwrap_or_default();
                    let lock = locks.iter().find(|l| l.object == waits_for);
                    CycleMember {
                        name: t.and_then(|t| t.name.clone()),
                        os_id: *tid,
                        managed_id: t.map_or(0, |t| t.managed_id),
                        waits_for_type: lock.map(|l| l.object_type.clone()).unwrap_or_default(),
                        waits_for,
                        holds: locks
                            .iter()
                            .filter(|l| l.owner_os_id == *tid)
                            .map(|l| l.object.clone())
                            .collect(),
                        waiters_behind: lock.map_or(0, |l| l.waiters),
                        stack: t
                            .map(|t| {
                                let runtime =
                                    t.runtime_frame.iter().map(|m| format!("[runtime] {m}"));
                                runtime
                                    .chain(t.frames.iter().map(|f| f.method.clone()))
                                    .take(8)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect(),
        })
        .collect()
}

/// The exceptions the threads hold, with their inner chains; one that cannot be read is said.
fn exceptions(
    dac: &Dac,
    threads: &[ManagedThread],
    warnings: &mut Vec<String>,
) -> Vec<ExceptionInfo> {
    let mut out = Vec::new();
    for t in threads {
        let Some(obj) = t.exception.as_deref().and_then(parse_hex) else {
            continue;
        };
        match exception(dac, obj) {
            Some(mut top) => {
                top.thread_os_id = t.os_id;
                out.push(top);
            }
            None => warnings.push(format!(
                "thread {} holds an exception at {obj:#x} that could not be read (its memory is not in the dump, or damaged)",
                t.os_id
            )),
        }
    }
    out
}

fn exception(dac: &Dac, obj: u64) -> Option<ExceptionInfo> {
    let one = |obj: u64| -> Option<(ExceptionInfo, u64)> {
        let o = dac.object(obj)?;
        let type_name = dac.type_name(o.method_table).unwrap_or_else(|| "?".into());
        let d = dac.exception(obj);
        let text = |a: u64| (a != 0).then(|| dac.string(a, MAX_MESSAGE)).flatten();
        let info = ExceptionInfo {
            thread_os_id: 0,
            address: hex(obj),
            type_name,
            message: d.as_ref().and_then(|d| text(d.message)),
            hresult: d
                .as_ref()
                .map_or_else(String::new, |d| format!("{:#010x}", d.hresult as u32)),
            stack_trace: d.as_ref().and_then(|d| text(d.stack_trace_string)),
            inner: Vec::new(),
        };
        Some((info, d.map_or(0, |d| d.inner)))
    };
    let (mut top, mut inner) = one(obj)?;
    let mut seen = vec![obj];
    while inner != 0 && top.inner.len() < MAX_INNER && !seen.contains(&inner) {
        seen.push(inner);
        let Some((e, next)) = one(inner) else { break };
        top.inner.push(e);
        inner = next;
    }
    Some(top)
}

/// The images mapped from their start, managed ones marked.
fn modules(core: &Core) -> Vec<Module> {
    let mut out: Vec<Module> = core
        .files
        .iter()
        .filter(|m| m.offset == 0)
        .map(|m| Module {
            base: hex(m.start),
            path: m.path.clone(),
            managed: m.path.to_ascii_lowercase().ends_with(".dll"),
        })
        .collect();
    out.dedup_by(|a, b| a.path == b.path);
    out
}
