//! Every thread's managed stack now, from one short session: the runtime's sample profiler
//! (which suspends the runtime about every millisecond and walks every managed thread each
//! time) until every managed thread has a sample, then the rundown that names the frames.
//!
//! The session is stopped as soon as the sampler starts its second round (a thread seen
//! again: the first round is complete — the sampler writes a round's samples one after the
//! other) or after [`StackOptions::window`] of samples, whichever comes first; a thread that
//! appears after the first round gets its first sample. The frames are named by the same
//! symbols as every other view ([`Analysis`]: the rundown's methods, ReadyToRun code, modules).
//! The OS's list of threads (`/proc/PID/task`) is merged in by thread id, so threads the
//! runtime does not know are listed too. A bound on the whole ([`StackOptions::timeout`])
//! means it never hangs: past it, what was taken is returned, marked partial.
//! [`add_native_frames`] adds the native frames, from the runtime's crash report.

mod native;

pub use native::{add_native_frames, NativeReport};

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clr_events::ThreadSampleType;
use clrspy_analysis::stacks::StackId;
use clrspy_analysis::thread_stacks::{OsThread, StackSnapshot, ThreadStack};
use clrspy_analysis::{registry::ModelSet, Analysis, Options};
use clrspy_collect::{Action, End, EventConsumer, LiveFeeds, Recording, StopSignal};
use diagnostics_client::{Endpoint, Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

use crate::session::SessionError;

/// Why no stack snapshot could be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StackError {
    /// The session could not start (the target refused it, or is gone).
    #[error("{0}")]
    Session(#[from] SessionError),
    /// The thread that runs the session could not be started.
    #[error("starting the session's thread: {0}")]
    Thread(std::io::Error),
}

/// How a stack snapshot is taken.
#[derive(Clone, Copy, Debug)]
pub struct StackOptions {
    /// The bound on the whole: past it, what was taken is returned, marked partial.
    pub timeout: Duration,
    /// The longest span of samples to wait for every thread in (from the first sample).
    pub window: Duration,
    /// The session's buffer in the target, MB.
    pub buffer_mb: u32,
}

impl Default for StackOptions {
    fn default() -> StackOptions {
        StackOptions {
            timeout: Duration::from_secs(10),
            window: Duration::from_millis(300),
            buffer_mb: 16,
        }
    }
}

/// How the snapshot went, beside it.
#[derive(Clone, Debug, Default)]
pub struct StackReport {
    /// From asking for the session to the snapshot.
    pub elapsed: Duration,
    /// From asking for the session to the sampler's first round complete (None when it never
    /// completed).
    pub sampled_after: Option<Duration>,
    /// Sample events read.
    pub samples: u64,
    /// Events read in all (samples, rundown).
    pub events: u64,
    /// True when the session ended by itself before the timeout (the rundown is complete).
    pub ended: bool,
}

/// The first sample of each thread.
struct First {
    stack: Option<StackId>,
    kind: Option<ThreadSampleType>,
}

/// What the consumer and the caller share.
#[derive(Default)]
struct State {
    analysis: Option<Analysis>,
    first: HashMap<u64, First>,
    first_ts: Option<i64>,
    /// Set when the sampler's first round is known complete (or the window passed).
    sampled_at: Option<Instant>,
    samples: u64,
    events: u64,
    ended: bool,
    error: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Feeds the symbols with every event and keeps each thread's first sample.
struct StackFeed {
    shared: Arc<Shared>,
    window_ns: i64,
}

impl EventConsumer for StackFeed {
    fn start(&mut self, header: &nettrace::TraceHeader) {
        let options = Options {
            models: ModelSet::NONE,
            ..Options::default()
        };
        self.shared.lock().analysis = Some(Analysis::new(header, options));
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        let mut s = self.shared.lock();
        s.events += 1;
        let sample = ev.event_id() == 0 && ev.provider() == clr_events::SAMPLE_PROFILER_PROVIDER;
        if !sample {
            if let Some(a) = s.analysis.as_mut() {
                a.event(ev);
            }
            return Action::Continue;
        }
        s.samples += 1;
        let ts = ev.timestamp_ns();
        let first_ts = *s.first_ts.get_or_insert(ts);
        let mut done = ts.saturating_sub(first_ts) >= self.window_ns;
        if s.first.contains_key(&ev.thread_id) {
            // The sampler began its next round: the first one is whole.
            done = true;
        } else {
            let stack = s.analysis.as_mut().and_then(|a| a.stacks.intern(&ev.stack));
            let kind = ThreadSampleType::from_payload(ev.payload);
            s.first.insert(ev.thread_id, First { stack, kind });
        }
        if done && s.sampled_at.is_none() {
            s.sampled_at = Some(Instant::now());
            self.shared.changed.notify_all();
            return Action::Stop {
                reason: "every managed thread was sampled".into(),
            };
        }
        Action::Continue
    }

    fn end(&mut self, end: &End) {
        let mut s = self.shared.lock();
        s.ended = true;
        s.error = end.error.clone();
        self.shared.changed.notify_all();
    }
}

/// The session: the sample profiler, the runtime's loader events (module names for code
/// loaded while it runs), the rundown at its end; stacks on.
fn session_config(opts: &StackOptions) -> SessionConfig {
    SessionConfig {
        circular_buffer_mb: opts.buffer_mb.max(1),
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: true,
        providers: vec![
            Provider {
                name: clr_events::SAMPLE_PROFILER_PROVIDER.into(),
                keywords: 0,
                level: 4,
                arguments: None,
            },
            Provider {
                name: clr_events::RUNTIME_PROVIDER.into(),
                // Loader and JIT: methods jitted and modules loaded during the session.
                keywords: 0x8 | 0x10,
                level: 4,
                arguments: None,
            },
        ],
    }
}

/// Takes the stack of every thread of the process behind `endpoint` now. Fails when the
/// session could not start (the target refused it, or is gone); a session that does not end
/// in time gives a partial snapshot ([`StackSnapshot::complete`] false, its notes say why).
pub fn take_stacks(
    endpoint: &Endpoint,
    opts: &StackOptions,
) -> Result<(StackSnapshot, StackReport), StackError> {
    let started = Instant::now();
    let deadline = started + opts.timeout;
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        changed: Condvar::new(),
    });
    let stop = Arc::new(StopSignal::new());
    let feed = StackFeed {
        shared: shared.clone(),
        window_ns: i64::try_from(opts.window.as_nanos()).unwrap_or(i64::MAX),
    };
    let config = session_config(opts);
    let (ep, st) = (endpoint.clone(), stop.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    // On a thread of its own: a target that stops answering must not hold the caller past
    // its timeout (the thread is then left to end with the connection).
    std::thread::Builder::new()
        .name("clrspy-stack-session".into())
        .spawn(move || {
            let rec = Recording {
                config: &config,
                out: None,
                duration: None,
                stop: &st,
                thread_cpu: None,
                ring: None,
            };
            let live = LiveFeeds {
                consumers: vec![Box::new(feed)],
                lossless: true,
                ..LiveFeeds::default()
            };
            let r = clrspy_collect::record_live(&ep, &rec, live, &mut |_| {});
            let _ = tx.send(r);
        })
        .map_err(StackError::Thread)?;
    let mut outcome = None;
    {
        let mut s = shared.lock();
        while !s.ended && Instant::now() < deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            s = shared
                .changed
                .wait_timeout(s, left.min(Duration::from_millis(50)))
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
            if let Ok(r) = rx.try_recv() {
                outcome = Some(r);
                break;
            }
        }
    }
    if outcome.is_none() && shared.lock().ended {
        outcome = rx.recv_timeout(Duration::from_secs(1)).ok();
    }
    let got = outcome.is_some();
    let mut failed = None;
    if let Some(Err(e)) = outcome {
        // Failed before any event (refused, gone): an error; after, what arrived counts.
        if shared.lock().analysis.is_none() {
            return Err(StackError::Session(e.into()));
        }
        failed = Some(e.to_string());
    }
    stop.request();
    let os = os_threads(endpoint.pid);
    let s = shared.lock();
    let ended = s.ended && got;
    let mut snap = StackSnapshot::merge(endpoint.pid, sampled(&s), &os);
    say_what_is_missing(&mut snap, &s, ended, failed.as_deref(), opts.timeout);
    let report = StackReport {
        elapsed: started.elapsed(),
        sampled_after: s.sampled_at.map(|t| t.saturating_duration_since(started)),
        samples: s.samples,
        events: s.events,
        ended,
    };
    Ok((snap, report))
}

/// Marks `snap` partial and says why when the sampler did not finish a round or the session
/// did not end (`ended`) within `timeout`; notes a stream that ended early (`failed`).
fn say_what_is_missing(
    snap: &mut StackSnapshot,
    s: &State,
    ended: bool,
    failed: Option<&str>,
    timeout: Duration,
) {
    let secs = timeout.as_secs_f64();
    if s.sampled_at.is_none() {
        snap.complete = false;
        snap.notes.push(match s.samples {
            n if s.ended => format!(
                "the session ended before the sampler finished a round ({n} samples): the process may have exited"
            ),
            0 => format!(
                "no sample arrived within {:.1} s: the runtime did not answer the sampler",
                secs
            ),
            n => format!(
                "the runtime's sampler did not finish a round within {:.1} s ({n} samples)",
                secs
            ),
        });
    }
    if !ended {
        snap.complete = false;
        snap.notes.push(format!(
            "the session did not end within {:.1} s: methods not named yet show as [jitted code, unnamed]",
            secs
        ));
    } else if let Some(e) = s.error.as_deref().or(failed) {
        snap.notes.push(format!("the stream ended early: {e}"));
    }
}

/// Each sampled thread's first stack, named.
fn sampled(s: &State) -> Vec<ThreadStack> {
    let Some(a) = s.analysis.as_ref() else {
        return Vec::new();
    };
    let mut a = a.snapshot();
    a.finish();
    s.first
        .iter()
        .map(|(&tid, f)| ThreadStack {
            thread_id: tid,
            frames: a.frames(f.stack),
            sampled: true,
            running_managed: f.kind == Some(ThreadSampleType::Managed),
            ..ThreadStack::default()
        })
        .collect()
}

/// The process's threads as the OS lists them now (empty off Linux).
pub(crate) fn os_threads(pid: u32) -> Vec<OsThread> {
    clrspy_collect::procstat::ProcSampler::new(pid)
        .threads()
        .into_iter()
        .map(|r| OsThread {
            thread_id: u64::from(r.tid),
            name: r.name.unwrap_or_default(),
            state: char::from(r.state),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};

    /// (provider, event id, ms, thread, stack, payload)
    type Ev = (&'static str, u32, i64, u64, Vec<u64>, Vec<u8>);

    fn utf16z(s: &str) -> Vec<u8> {
        s.encode_utf16()
            .chain([0])
            .flat_map(u16::to_le_bytes)
            .collect()
    }

    /// A MethodLoadVerbose payload: `App.<name>` at [start, start + 0x100).
    fn method(id: u64, start: u64, name: &str) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(id.to_le_bytes());
        p.extend(1u64.to_le_bytes());
        p.extend(start.to_le_bytes());
        p.extend(0x100u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.extend(0u32.to_le_bytes());
        p.extend(utf16z("App"));
        p.extend(utf16z(name));
        p.extend(utf16z("void  ()"));
        p.extend(0u16.to_le_bytes());
        p
    }

    fn sample(ms: i64, thread: u64, stack: &[u64], kind: u32) -> Ev {
        (
            clr_events::SAMPLE_PROFILER_PROVIDER,
            0,
            ms,
            thread,
            stack.to_vec(),
            kind.to_le_bytes().to_vec(),
        )
    }

    fn trace(events: &[Ev]) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let mut ids = HashMap::new();
        for (provider, id, ms, thread, stack, payload) in events {
            let m = match ids.get(&(*provider, *id)) {
                Some(&m) => m,
                None => {
                    let m = w
                        .define(&EventMetadata {
                            provider: provider.to_string(),
                            event_id: *id,
                            version: 1,
                            ..EventMetadata::default()
                        })
                        .unwrap();
                    ids.insert((*provider, *id), m);
                    m
                }
            };
            w.write(&EventRecord {
                metadata_id: m,
                thread_id: *thread,
                capture_thread_id: *thread,
                timestamp: ms * 1_000_000,
                stack,
                payload,
                ..EventRecord::default()
            })
            .unwrap();
        }
        w.finish().unwrap()
    }

    /// Feeds `events` to a fresh consumer; the state and the event index of each Stop.
    fn feed(events: &[Ev], window_ms: i64) -> (Arc<Shared>, Vec<usize>) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let mut c = StackFeed {
            shared: shared.clone(),
            window_ns: window_ms * 1_000_000,
        };
        let bytes = trace(events);
        let mut r = TraceReader::new(&bytes).unwrap();
        c.start(r.header());
        let mut stops = Vec::new();
        let mut i = 0;
        r.for_each_event(|ev| {
            if matches!(c.event(ev), Action::Stop { .. }) {
                stops.push(i);
            }
            i += 1;
            true
        })
        .unwrap();
        c.end(&End::default());
        (shared, stops)
    }

    const LOAD: u32 = clr_events::runtime::ids::METHOD_LOAD_VERBOSE;
    const RT: &str = clr_events::RUNTIME_PROVIDER;

    #[test]
    fn the_second_round_stops_the_session_and_each_thread_keeps_its_first_stack() {
        let events = vec![
            (RT, LOAD, 0, 1, vec![], method(1, 0x1000, "Wait")),
            (RT, LOAD, 0, 1, vec![], method(2, 0x2000, "Main")),
            sample(1, 10, &[0x1010, 0x2010], 1),
            sample(1, 11, &[0x2020], 2),
            sample(1, 12, &[], 1),
            // The next round: thread 10 again.
            sample(2, 10, &[0x2010], 2),
            sample(2, 13, &[0x1010], 2),
        ];
        let (shared, stops) = feed(&events, 300);
        assert_eq!(stops, [5], "one stop, at the second round's first sample");
        let s = shared.lock();
        assert!(s.sampled_at.is_some() && s.ended);
        assert_eq!(s.samples, 5);
        let mut t = sampled(&s);
        t.sort_by_key(|t| t.thread_id);
        let ids: Vec<u64> = t.iter().map(|t| t.thread_id).collect();
        // A thread that appears after the first round still gets its first sample.
        assert_eq!(ids, [10, 11, 12, 13]);
        assert_eq!(
            t[0].frames,
            ["App.Wait", "App.Main"],
            "the first sample, named"
        );
        assert!(!t[0].running_managed);
        assert!(t[1].running_managed);
        assert!(t[2].frames.is_empty() && t[2].sampled);
    }

    #[test]
    fn the_window_bounds_the_wait_for_a_round() {
        let events = vec![
            sample(0, 10, &[0x1010], 2),
            sample(100, 11, &[0x1010], 2),
            sample(400, 12, &[0x1010], 2),
            sample(500, 13, &[0x1010], 2),
        ];
        let (shared, stops) = feed(&events, 300);
        assert_eq!(stops, [2]);
        assert_eq!(shared.lock().first.len(), 4);
    }
}
