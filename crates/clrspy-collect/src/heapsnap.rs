//! Recording a GC heap dump: a short "type-table flush" session (so the runtime logs every
//! type again, with its name), then a session with the GC heap dump keywords — enabling it
//! makes the runtime run a full, blocking gen2 GC and walk the heap — recorded to a trace
//! file until that GC ends, the timeout passes or a stop is requested. The graph is built
//! from the file afterwards (clrspy-analysis), never from the live stream.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clr_events::runtime::{ids, GcEnd, GcStart, GcType};
use diagnostics_client::{
    start_session, stop_session, Connector, Endpoint, Provider, SessionConfig,
};

use crate::ring::open_output;
use crate::session::{pump, LiveFeeds, COMMAND_TIMEOUT};
use crate::tap::{Action, EventConsumer};
use crate::{Progress, Recording, Result, StopSignal, Summary};

/// The runtime keywords of a heap dump: GC | Type | GCHeapDump | GCHeapCollect |
/// GCHeapAndTypeNames.
pub(crate) const HEAP_DUMP_KEYWORDS: u64 = 0x1980001;
/// The runtime's buffer for the dump session, MB (heap dump events come in bursts).
pub(crate) const HEAP_DUMP_BUFFER_MB: u32 = 1024;

/// The dump session's configuration.
pub(crate) fn heap_dump_config() -> SessionConfig {
    SessionConfig {
        circular_buffer_mb: HEAP_DUMP_BUFFER_MB,
        rundown_keyword: diagnostics_client::DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: false,
        providers: vec![Provider {
            name: clr_events::RUNTIME_PROVIDER.into(),
            keywords: HEAP_DUMP_KEYWORDS,
            level: 5,
            arguments: None,
        }],
    }
}

/// Objects seen so far and whether the dump's GC ended, shared with the front end.
#[derive(Debug, Default)]
pub struct HeapDumpProgress {
    objects: AtomicU64,
    /// 0: no dump GC yet; 1: in it; 2: it ended.
    phase: AtomicU64,
}

impl HeapDumpProgress {
    /// Objects (`GC/BulkNode` values) seen so far on the live stream.
    pub fn objects(&self) -> u64 {
        self.objects.load(Ordering::Relaxed)
    }
    /// True once the dump's GC ended.
    pub fn complete(&self) -> bool {
        self.phase.load(Ordering::Relaxed) == 2
    }
}

/// Stops the recording when the heap dump's GC ends (on the tap; it only counts). Events come
/// in file order: under server GC the `GC/Start` may be read after the walk and its `GC/Stop`
/// (another GC thread wrote it), so the end is the first `GC/Stop` after the walk began that
/// is the walking thread's or the started GC's (as the trace's reader decides).
struct EndOfDump {
    shared: Arc<HeapDumpProgress>,
    gc: Option<u32>,
    /// The thread of the first `GC/BulkNode` and its time.
    walk: Option<(u64, i64)>,
    ptr: u8,
}

impl EventConsumer for EndOfDump {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        // Once whole, the start another thread wrote may still be read: it changes nothing.
        if ev.provider() != clr_events::RUNTIME_PROVIDER || self.shared.complete() {
            return Action::Continue;
        }
        let (p, v) = (ev.payload, ev.version());
        match ev.event_id() {
            ids::GC_START if self.gc.is_none() => {
                if let Ok(g) = GcStart::parse(p, v, self.ptr) {
                    if g.depth >= 2 && g.kind != GcType::Background {
                        self.gc = Some(g.count);
                        self.shared.phase.store(1, Ordering::Relaxed);
                    }
                }
            }
            ids::GC_BULK_NODE => {
                self.walk.get_or_insert((ev.thread_id, ev.timestamp));
                self.shared.phase.store(1, Ordering::Relaxed);
                // Index u32, Count u32: the count is enough for progress.
                if let Some(c) = p.get(4..8) {
                    let n = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    self.shared
                        .objects
                        .fetch_add(u64::from(n), Ordering::Relaxed);
                }
            }
            ids::GC_STOP => {
                let Ok(g) = GcEnd::parse(p, v, self.ptr) else {
                    return Action::Continue;
                };
                let started = self.gc == Some(g.count);
                match self.walk {
                    Some((walker, first)) if self.shared.objects() > 0 => {
                        if ev.timestamp >= first && (started || ev.thread_id == walker) {
                            self.shared.phase.store(2, Ordering::Relaxed);
                            return Action::Stop {
                                reason: "the heap dump is complete".into(),
                            };
                        }
                        if started {
                            self.gc = None; // an earlier GC's end, read after the walk began
                        }
                    }
                    _ if started => self.gc = None, // no heap walk in this one: wait for the next
                    _ => {}
                }
            }
            _ => {}
        }
        Action::Continue
    }
}

/// How long the dump session's stream may be quiet before the recording ends.
pub(crate) const QUIET_STOP: Duration = Duration::from_secs(3);

/// The shortest wait for the dump session's start reply: the runtime answers only after the
/// forced GC and its heap walk (seconds on a big heap), so the usual 5 s command timeout is not
/// enough there.
pub(crate) const MIN_START_WAIT: Duration = Duration::from_secs(30);

/// How long to wait for the dump session's start reply when the whole dump may take `timeout`:
/// at least [`MIN_START_WAIT`], the user's timeout when it is longer.
pub(crate) fn start_wait(timeout: Duration) -> Duration {
    timeout.max(MIN_START_WAIT)
}

/// Records a heap dump of the process at `endpoint` into the trace `out`: the flush session,
/// then the dump session until the dump's GC ends or `timeout` passes. Read the trace with
/// clrspy-analysis' `heap::from_trace` to get the graph (and to learn whether it is whole).
/// The dump session's start reply is awaited up to `start_wait(timeout)` (the runtime
/// sends it after the forced GC); what remains of `timeout` after it bounds the recording.
pub fn record_heap_dump(
    endpoint: &Endpoint,
    out: &Path,
    timeout: Duration,
    stop: &StopSignal,
    shared: Arc<HeapDumpProgress>,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<Summary> {
    let started = Instant::now();
    flush_type_table(endpoint)?;
    let config = heap_dump_config();
    // The file first: an unwritable path fails before the target is touched.
    let file = Some(open_output(out, None, &config)?);
    let to: Arc<dyn Connector> = Arc::new(endpoint.clone());
    let session = start_session(to.as_ref(), &config, start_wait(timeout))?;
    // At least a moment for the events the start reply waited on to arrive.
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_secs(2));
    let rec = Recording {
        config: &config,
        out: Some(out),
        duration: Some(left),
        stop,
        thread_cpu: None,
        ring: None,
    };
    let live = LiveFeeds {
        consumers: vec![Box::new(EndOfDump {
            shared,
            gc: None,
            walk: None,
            ptr: 8,
        })],
        // Should the live decoding skip past the GC's end (a busy machine), the quiet after
        // the dump ends the recording, not the timeout.
        quiet_stop: Some(QUIET_STOP),
        ..LiveFeeds::default()
    };
    pump(session, to, file, endpoint.pid, &rec, live, on_progress)
}

/// A SampleProfiler session, stopped as soon as the runtime sends anything: the runtime then
/// forgets which types it logged, so the dump names every type.
fn flush_type_table(endpoint: &Endpoint) -> Result<()> {
    let config = SessionConfig {
        circular_buffer_mb: 16,
        rundown_keyword: 0,
        stackwalk: false,
        providers: vec![Provider {
            name: "Microsoft-DotNETCore-SampleProfiler".into(),
            keywords: 0,
            level: 4,
            arguments: None,
        }],
    };
    let mut session = start_session(endpoint, &config, COMMAND_TIMEOUT)?;
    session.set_read_timeout(Duration::from_millis(200))?;
    let mut buf = vec![0u8; 64 * 1024];
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        match session.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => break,
            Err(_) => {}
        }
    }
    let id = session.id;
    let ep = endpoint.clone();
    let stopper = std::thread::spawn(move || stop_session(&ep, id, COMMAND_TIMEOUT));
    let t0 = Instant::now();
    while t0.elapsed() < COMMAND_TIMEOUT {
        if let Ok(0) = session.read(&mut buf) {
            break;
        }
    }
    match stopper.join() {
        Ok(r) => r.map_err(crate::Error::Client),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventMetadata, EventRecord, TraceWriter, WriterOptions};

    /// An event: id, version, payload.
    type Ev = (u32, u8, Vec<u8>);

    fn gc(id: u32, count: u32) -> Ev {
        let mut p = Vec::new();
        if id == ids::GC_START {
            for v in [count, 2, 1, 0] {
                p.extend(v.to_le_bytes());
            }
            p.extend([0u8; 10]);
            return (id, 2, p);
        }
        p.extend(count.to_le_bytes());
        p.extend(2u32.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        (id, 1, p)
    }

    fn bulk_node(index: u32, count: u32) -> Ev {
        let mut p = Vec::new();
        p.extend(index.to_le_bytes());
        p.extend(count.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        (ids::GC_BULK_NODE, 0, p)
    }

    /// Feeds (thread, time, event) in file order to the consumer; the stream's Stop index.
    fn feed(events: &[(u64, i64, Ev)]) -> (Arc<HeapDumpProgress>, Option<usize>) {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        for (thread, time, (id, version, payload)) in events {
            let m = w
                .define(&EventMetadata {
                    provider: clr_events::RUNTIME_PROVIDER.into(),
                    event_id: *id,
                    version: *version,
                    ..EventMetadata::default()
                })
                .unwrap();
            w.write(&EventRecord {
                metadata_id: m,
                thread_id: *thread,
                capture_thread_id: *thread,
                timestamp: *time,
                payload,
                ..EventRecord::default()
            })
            .unwrap();
        }
        let bytes = w.finish().unwrap();
        let shared = Arc::new(HeapDumpProgress::default());
        let mut c = EndOfDump {
            shared: shared.clone(),
            gc: None,
            walk: None,
            ptr: 8,
        };
        let mut stopped = None;
        let mut i = 0;
        nettrace::Reader::new(&bytes[..])
            .unwrap()
            .for_each_event(|ev| {
                if matches!(c.event(ev), Action::Stop { .. }) && stopped.is_none() {
                    stopped = Some(i);
                }
                i += 1;
                true
            })
            .unwrap();
        (shared, stopped)
    }

    /// Server GC: the walker's blocks and `GC/Stop` read before another GC thread's `GC/Start`
    /// (as a .NET 10 web app's 30 MB heap gave): the dump ends at the stop and stays whole.
    #[test]
    fn the_walks_end_is_found_when_its_start_comes_last() {
        let (shared, stopped) = feed(&[
            (9, 2000, bulk_node(0, 2008)),
            (9, 2100, bulk_node(1, 100)),
            (9, 2200, gc(ids::GC_STOP, 18)),
            (8, 1000, gc(ids::GC_START, 18)),
        ]);
        assert_eq!(stopped, Some(2));
        assert!(shared.complete());
        assert_eq!(shared.objects(), 2108);
    }

    /// An earlier GC's end, read mid-walk from another thread's buffer, does not end it; a GC
    /// that walked nothing is not the dump.
    #[test]
    fn an_earlier_gcs_end_does_not_end_the_walk() {
        let (shared, stopped) = feed(&[
            (8, 100, gc(ids::GC_START, 17)),
            (9, 2000, bulk_node(0, 10)),
            (8, 200, gc(ids::GC_STOP, 17)),
            (9, 2100, bulk_node(1, 10)),
            (9, 2200, gc(ids::GC_STOP, 18)),
        ]);
        assert_eq!(stopped, Some(4));
        assert!(shared.complete());
        let (shared, stopped) = feed(&[
            (8, 100, gc(ids::GC_START, 17)),
            (8, 200, gc(ids::GC_STOP, 17)),
        ]);
        assert_eq!(stopped, None);
        assert!(!shared.complete());
    }

    #[test]
    fn start_wait_is_the_users_timeout_or_longer() {
        assert_eq!(start_wait(Duration::from_secs(5)), MIN_START_WAIT);
        assert_eq!(
            start_wait(Duration::from_secs(120)),
            Duration::from_secs(120)
        );
        assert!(start_wait(Duration::ZERO) > COMMAND_TIMEOUT);
    }
}
