//! The Chromium trace event format (JSON; Perfetto UI and chrome://tracing open it): per thread,
//! the sampled stacks as a flame chart of complete ("X") slices — consecutive samples with the
//! same frames merge into one slice, a frame closes when a sample no longer has it — plus GC
//! pauses on a "GC" track, lock waits as async slices on the waiting thread, ASP.NET Core
//! requests and HttpClient requests as async slices from the thread they started on,
//! exceptions as instants, and process and thread names. Samples need time order, so this
//! export reads the trace a second time (streaming, after the analysis named every method); memory holds one
//! open stack per thread.

use std::io::{self, Write};

use clr_events::clrspy;
use clrspy_analysis::grouping::fold_root_first;
use clrspy_analysis::stacks::StackId;
use clrspy_analysis::symbols::{FrameId, Symbols};
use clrspy_analysis::{Analysis, JustMyCode, NativeView};
use nettrace::{ByteSource, Reader};
use rustc_hash::FxHashMap;
use serde_json::json;

use crate::thread_label;

/// Open frames of one thread: (frame, start µs).
#[derive(Default)]
struct Lane {
    open: Vec<(FrameId, f64)>,
    last_us: f64,
}

struct Out<'a> {
    w: &'a mut dyn Write,
    first: bool,
    pid: u64,
}

impl Out<'_> {
    fn event(&mut self, v: serde_json::Value) -> io::Result<()> {
        if !self.first {
            self.w.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.w, &v).map_err(io::Error::from)
    }

    fn close(
        &mut self,
        tid: u64,
        lane: &mut Lane,
        keep: usize,
        at_us: f64,
        symbols: &Symbols,
    ) -> io::Result<()> {
        while lane.open.len() > keep {
            let Some((frame, start)) = lane.open.pop() else {
                break;
            };
            let name = &symbols.frame(frame).name;
            self.event(json!({
                "name": name, "cat": "samples", "ph": "X", "ts": start,
                "dur": (at_us - start).max(0.0), "pid": self.pid, "tid": tid,
            }))?;
        }
        Ok(())
    }
}

/// ASP.NET Core's hosting provider: its requests become async slices.
const HOSTING: &str = "Microsoft.AspNetCore.Hosting";
/// HttpClient's provider: its outgoing requests become async slices too.
const HTTP_CLIENT: &str = "System.Net.Http";

/// A request's start or stop — served (`Microsoft.AspNetCore.Hosting`: `METHOD path`, category
/// `request`) or sent (`System.Net.Http`: `scheme://host:port/path`, category `http`) — tied by
/// its activity id: the begin or end of an async slice on the thread it started or ended on
/// (the viewer pairs them by id, whatever their order in the file). Events without an activity
/// id (TplEventSource 0x80 not recorded) cannot be paired and are left out.
fn request_slice(o: &mut Out<'_>, ev: &nettrace::Event<'_>, us: f64) -> io::Result<()> {
    let phase = match ev.metadata.event_name.as_str() {
        "RequestStart" => "b",
        "RequestStop" => "e",
        _ => return Ok(()),
    };
    if ev.activity_id.is_zero() {
        return Ok(());
    }
    let sent = ev.provider() == HTTP_CLIENT;
    let (name, cat) = if sent {
        ("http request", "http")
    } else {
        ("request", "request")
    };
    let id = ev
        .activity_id
        .0
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    let (pid, tid) = (o.pid, ev.thread_id);
    if phase == "e" {
        return o.event(json!({"name": name, "cat": cat, "ph": "e", "id": id, "ts": us, "pid": pid, "tid": tid}));
    }
    let d = nettrace::decode_payload(&ev.metadata.fields, ev.payload);
    let field = |name: &str| {
        d.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| match f.value.as_str() {
                Some(s) => s.to_string(),
                None => f.value.as_i64().map(|n| n.to_string()).unwrap_or_default(),
            })
            .unwrap_or_default()
    };
    let args = if sent {
        let url = format!(
            "{}://{}:{}{}",
            field("scheme"),
            field("host"),
            field("port"),
            field("pathAndQuery")
        );
        json!({"request": url})
    } else {
        let (method, path) = (field("method"), field("path"));
        json!({"request": format!("{method} {path}"), "method": method, "path": path})
    };
    o.event(json!({"name": name, "cat": cat, "ph": "b", "id": id, "ts": us, "pid": pid, "tid": tid, "args": args}))
}

/// Writes the trace, the samples' stacks grouped by `group` (`--just-my-code`) and their
/// native frames shown as `native` says; `reader` reads the same trace again from its start.
/// Returns why the second pass stopped before the trace's end (damage), when it did; the file
/// then holds the events before, and says so in `otherData.stopped_early`.
pub(crate) fn write_grouped<S: ByteSource>(
    a: &Analysis,
    reader: &mut Reader<S>,
    group: Option<&JustMyCode>,
    native: NativeView,
    out: &mut dyn Write,
) -> io::Result<Option<String>> {
    let pid = a.process_id.unwrap_or(1);
    out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
    let mut o = Out {
        w: out,
        first: true,
        pid,
    };
    o.event(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": match &a.process_name {
        Some(n) => format!("{n} (pid {pid})"),
        None => format!("process {pid}"),
    }}}))?;
    o.event(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "GC pauses"}}))?;
    let interval_us = a.sampling_interval_ns as f64 / 1000.0;
    let mut lanes: FxHashMap<u64, Lane> = FxHashMap::default();
    let mut contention: FxHashMap<u64, (f64, u64)> = FxHashMap::default();
    let mut next_id = 1u64;
    let mut frames_of: FxHashMap<StackId, Vec<FrameId>> = FxHashMap::default();
    let mut kernel_stacks = clrspy_analysis::stacks::KernelStacks::default();
    let mut stopped_early = None;
    loop {
        let ev = match reader.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                stopped_early = Some(e.to_string());
                break;
            }
        };
        if kernel_stacks.take_known(&ev, &a.stacks) {
            continue;
        }
        let us = ev.timestamp_ns() as f64 / 1000.0;
        let provider = ev.provider();
        let mut tid = ev.thread_id;
        // The first pass interned every sample's stack: this finds it (a kernel sample's
        // whole stack by its id; one of native code alone is clrspy's own event, the
        // thread and stack id in its payload).
        let sample = if provider == clr_events::SAMPLE_PROFILER_PROVIDER {
            Some(
                kernel_stacks
                    .get(ev.stack_id)
                    .or_else(|| a.stacks.lookup(&ev.stack)),
            )
        } else if provider == clrspy::PROVIDER
            && ev.event_id() == clrspy::ids::KERNEL_SAMPLE
            && ev.metadata.metadata_id >= clrspy::FIRST_METADATA_ID
        {
            match clrspy::KernelSample::parse(ev.payload) {
                Ok(k) => {
                    tid = u64::from(k.thread_id);
                    Some(if k.frames.is_empty() {
                        kernel_stacks.get(k.stack_id)
                    } else {
                        a.stacks.lookup(&nettrace::Stack::new(k.frames, 8))
                    })
                }
                Err(_) => None,
            }
        } else {
            None
        };
        if let Some(stack) = sample {
            let names: Vec<FrameId> = match stack {
                None => Vec::new(),
                Some(id) => match frames_of.get(&id) {
                    Some(n) => n.clone(),
                    None => {
                        let leaf_first: Vec<FrameId> = a
                            .stacks
                            .ips(id)
                            .iter()
                            .map(|&ip| a.symbols.resolve(ip))
                            .collect();
                        // Root first.
                        let mut n = a.native_frames(leaf_first, native);
                        n.reverse();
                        if let Some(g) = group {
                            n = fold_root_first(n, |&f| g.is_framework_frame(f, &a.symbols));
                        }
                        frames_of.insert(id, n.clone());
                        n
                    }
                },
            };
            let lane = lanes.entry(tid).or_default();
            if lane.open.is_empty() && lane.last_us == 0.0 {
                let label = thread_label(a, tid);
                o.event(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": label}}))?;
            }
            let us = us.max(lane.last_us);
            // A long gap: the thread was not sampled, close everything after one interval.
            if !lane.open.is_empty() && us - lane.last_us > 20.0 * interval_us {
                let end = lane.last_us + interval_us;
                o.close(tid, lane, 0, end, &a.symbols)?;
            }
            let common = lane
                .open
                .iter()
                .zip(&names)
                .take_while(|((open, _), name)| open == *name)
                .count();
            o.close(tid, lane, common, us, &a.symbols)?;
            for &n in &names[common..] {
                lane.open.push((n, us));
            }
            lane.last_us = us;
            continue;
        }
        if provider == HOSTING || provider == HTTP_CLIENT {
            request_slice(&mut o, &ev, us)?;
            continue;
        }
        if provider != clr_events::RUNTIME_PROVIDER {
            continue;
        }
        match ev.event_id() {
            // Contention/Start, Contention/Stop: an async slice on the waiting thread.
            81 => {
                contention.insert(tid, (us, next_id));
                o.event(json!({"name": "lock wait", "cat": "contention", "ph": "b", "id": next_id, "ts": us, "pid": pid, "tid": tid}))?;
                next_id += 1;
            }
            91 => {
                if let Some((_, id)) = contention.remove(&tid) {
                    o.event(json!({"name": "lock wait", "cat": "contention", "ph": "e", "id": id, "ts": us, "pid": pid, "tid": tid}))?;
                }
            }
            // Exception/Start: an instant on the throwing thread.
            80 => {
                let d =
                    clr_events::decode(provider, 80, ev.version(), ev.payload, a.pointer_size());
                let (ty, msg) = d
                    .as_ref()
                    .map(|d| {
                        (
                            d.str("ExceptionType").unwrap_or("").to_string(),
                            d.str("ExceptionMessage").unwrap_or("").to_string(),
                        )
                    })
                    .unwrap_or_default();
                o.event(json!({"name": format!("throw {ty}"), "cat": "exception", "ph": "i", "s": "t", "ts": us, "pid": pid, "tid": tid, "args": {"type": ty, "message": msg}}))?;
            }
            _ => {}
        }
    }
    for (tid, lane) in lanes.iter_mut() {
        let end = lane.last_us + interval_us;
        o.close(*tid, lane, 0, end, &a.symbols)?;
    }
    for (_, (start, id)) in contention {
        o.event(json!({"name": "lock wait", "cat": "contention", "ph": "e", "id": id, "ts": start, "pid": pid, "tid": 0}))?;
    }
    for g in &a.gc.gcs {
        let dur = if g.pause_ms > 0.0 {
            g.pause_ms
        } else {
            g.duration_ms.unwrap_or(0.0)
        };
        o.event(json!({
            "name": format!("GC #{} gen{} {}", g.number, g.generation, g.reason),
            "cat": "gc", "ph": "X", "ts": g.start_ms * 1000.0, "dur": dur * 1000.0,
            "pid": pid, "tid": 0,
            "args": {"type": g.kind.to_string(), "pause_ms": g.pause_ms, "heap_after_mb": g.heap_after_mb},
        }))?;
    }
    o.w.write_all(b"\n],\"otherData\":")?;
    let other = json!({
        "generator": concat!("clrspy ", env!("CARGO_PKG_VERSION")),
        "stopped_early": stopped_early,
    });
    serde_json::to_writer(&mut *o.w, &other).map_err(io::Error::from)?;
    o.w.write_all(b"}\n")?;
    Ok(stopped_early)
}
