//! The pump shared by attach and launch: read the runtime's stream, hand it to the sinks (the
//! trace file, and any others) and to the event tap as it arrives, splice in the thread CPU
//! readings, watch the stop conditions (requests, duration, the target's end, a consumer's
//! Stop), and ask the runtime to stop — from a side thread: the runtime answers StopTracing only
//! after it wrote the rundown into the stream we must keep draining.

use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{start_session, stop_session, Connector, Endpoint, Session};

use crate::consumer::Broadcast;
use crate::inject::Injected;
use crate::procstat::monotonic_ns;
use crate::r2r::{SharedIps, StackIps};
use crate::readings::{CpuReadings, KERNEL_DRAIN};
use crate::ring::open_output;
use crate::sink::{ByteSink, SinkReport};
use crate::tap::{Action, EventConsumer, Tap};
use crate::worker::WorkerHandle;
use crate::{OnProgress, Progress, Recording, Result, StopReason, Summary};

/// How long each command may take before the runtime is considered unresponsive.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// What a recording feeds besides its trace file.
#[derive(Default)]
pub struct LiveFeeds<'a> {
    /// Consumers of the decoded events (run on the tap's thread).
    pub consumers: Vec<Box<dyn EventConsumer>>,
    /// Where more consumers join and leave while the session runs.
    pub broadcast: Option<Broadcast>,
    /// The tap never skips: the recording waits for its consumers instead. For a session of
    /// its own whose consumers must see every event (counters); with a trace file, the
    /// runtime drops events while the recording waits.
    pub lossless: bool,
    /// More sinks for the runtime's bytes (a ring buffer, a socket).
    pub sinks: Vec<Box<dyn ByteSink + 'a>>,
    /// The worker that takes the consumers' Dump and Snapshot requests (without one they are
    /// dropped; a full worker refuses them): nothing slow runs on the pump's thread, whose
    /// draining the runtime waits on. Stop requests are the pump's own business.
    pub requests: Option<WorkerHandle<Action>>,
    /// The target's exit is a stop trigger: when the target ends the session, that is stored
    /// in the trace (clrspy's `Trigger` event) and the summary ([`Summary::fired`]).
    ///
    /// [`Summary::fired`]: crate::Summary::fired
    pub exit_trigger: bool,
    /// CPU samples from the kernel, opened on the target by the caller (who then leaves the
    /// runtime's sample profiler out of the session): drained at every thread CPU reading
    /// into the trace as clrspy `KernelSample` events. Needs the readings
    /// ([`Recording::thread_cpu`]); without them it is closed unread.
    pub kernel_sampler: Option<clrspy_sampler::Sampler>,
    /// Who samples, when `kernel_sampler` is not given: a kernel sampler asked for is opened
    /// on the target before the session starts (a launched or held program's runtime when it
    /// connects) and the runtime's sampler left out; where the kernel's is not used,
    /// [`Summary::notes`](crate::Summary::notes) says why.
    pub sampler: crate::kernel::SamplerChoice,
    /// Once the live decoding skipped events, stop when the stream has been quiet this long
    /// (a session whose end a consumer watches for, as a heap dump's: the skip may have hidden
    /// that end; the trace file, whole, then tells whether it is complete).
    pub quiet_stop: Option<Duration>,
}

impl std::fmt::Debug for LiveFeeds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveFeeds")
            .field("consumers", &self.consumers.len())
            .field("broadcast", &self.broadcast.is_some())
            .field("lossless", &self.lossless)
            .field("sinks", &self.sinks.len())
            .field("requests", &self.requests.is_some())
            .field("exit_trigger", &self.exit_trigger)
            .field("kernel_sampler", &self.kernel_sampler)
            .field("quiet_stop", &self.quiet_stop)
            .field("sampler", &self.sampler)
            .finish()
    }
}

/// Records a session on a running process's `endpoint` into `rec.out` (and its other outputs),
/// also feeding `live`'s sinks and event consumers.
pub fn record_live(
    endpoint: &Endpoint,
    rec: &Recording<'_>,
    mut live: LiveFeeds<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary> {
    // The file first: an unwritable path fails before the target is touched.
    let file = rec
        .out
        .map(|p| open_output(p, rec.ring, rec.config))
        .transpose()?;
    let (config, refused) = crate::kernel::open_asked(
        endpoint.pid,
        rec.config,
        live.sampler,
        &mut live.kernel_sampler,
    );
    let rec = Recording {
        config: &config,
        ..rec.clone()
    };
    let to: Arc<dyn Connector> = Arc::new(endpoint.clone());
    let session = start_session(to.as_ref(), rec.config, COMMAND_TIMEOUT)?;
    let mut summary = pump(session, to, file, endpoint.pid, &rec, live, on_progress)?;
    summary.notes.extend(refused);
    Ok(summary)
}

/// [`record_live`] through any connector `to` (e.g. a runtime that connected to a reverse
/// diagnostic port and waits at its first instruction) on process `pid` (as seen from here, for
/// its thread CPU readings); `after_start` runs once the session is open and before the pump
/// (e.g. resume the runtime, so nothing it does is missed).
pub fn record_via(
    to: Arc<dyn Connector>,
    pid: u32,
    rec: &Recording<'_>,
    mut live: LiveFeeds<'_>,
    after_start: &mut dyn FnMut() -> Result<()>,
    on_progress: OnProgress<'_>,
) -> Result<Summary> {
    let file = rec
        .out
        .map(|p| open_output(p, rec.ring, rec.config))
        .transpose()?;
    let (config, refused) =
        crate::kernel::open_asked(pid, rec.config, live.sampler, &mut live.kernel_sampler);
    let rec = Recording {
        config: &config,
        ..rec.clone()
    };
    let session = start_session(to.as_ref(), rec.config, COMMAND_TIMEOUT)?;
    after_start()?;
    let mut summary = pump(session, to, file, pid, &rec, live, on_progress)?;
    summary.notes.extend(refused);
    Ok(summary)
}

/// The stop state: why, whether StopTracing was sent, and its answer.
struct Stopping {
    reason: Option<StopReason>,
    detail: Option<String>,
    /// A trigger fired: what, and when to stop.
    fired: Option<(crate::tap::Fired, Instant)>,
    sent: bool,
    /// The sinks were told the stop was sent ([`ByteSink::stopping`]).
    sinks_told: bool,
    complete: bool,
    stopper: Option<std::thread::JoinHandle<diagnostics_client::Result<()>>>,
}

impl Stopping {
    fn new() -> Stopping {
        Stopping {
            reason: None,
            detail: None,
            fired: None,
            sent: false,
            sinks_told: false,
            complete: true,
            stopper: None,
        }
    }

    /// Sends StopTracing from a side thread.
    fn send(&mut self, why: StopReason, to: &Arc<dyn Connector>, id: u64) {
        self.reason = Some(why);
        self.sent = true;
        let to = to.clone();
        self.stopper = Some(std::thread::spawn(move || {
            stop_session(to.as_ref(), id, COMMAND_TIMEOUT)
        }));
    }

    /// Carries out a consumer's action: a Stop sends StopTracing (once), Dump and Snapshot go
    /// to the caller's worker.
    fn act(
        &mut self,
        a: Action,
        requests: &Option<WorkerHandle<Action>>,
        to: &Arc<dyn Connector>,
        id: u64,
    ) {
        match a {
            Action::Stop { reason } if !self.sent => {
                self.detail = Some(reason);
                self.send(StopReason::Triggered, to, id);
            }
            Action::Trigger { fired, after } if !self.sent && self.fired.is_none() => {
                self.fired = Some((fired, Instant::now() + after));
            }
            Action::Continue | Action::Stop { .. } | Action::Trigger { .. } => {}
            other => {
                if let Some(w) = requests {
                    w.submit(other);
                }
            }
        }
    }

    /// True when the pump should stop reading now.
    fn check(
        &mut self,
        rec: &Recording<'_>,
        started: Instant,
        to: &Arc<dyn Connector>,
        id: u64,
    ) -> bool {
        if !self.sent {
            let why = if rec.stop.count() > 0 {
                Some(StopReason::Requested)
            } else if let Some((f, _)) = self.fired.as_ref().filter(|f| Instant::now() >= f.1) {
                self.detail = Some(f.to_string());
                Some(StopReason::Triggered)
            } else if rec.duration.is_some_and(|d| started.elapsed() >= d) {
                Some(StopReason::Duration)
            } else {
                None
            };
            if let Some(why) = why {
                self.send(why, to, id);
            }
            false
        } else if rec.stop.count() > 1 {
            // A second request: stop waiting for the rundown.
            self.complete = false;
            true
        } else if self.stopper.as_ref().is_some_and(|h| h.is_finished()) {
            // The runtime refused or did not answer: keep what arrived.
            let failed = matches!(
                self.stopper.take().map(|h| h.join().unwrap_or(Ok(()))),
                Some(Err(_))
            );
            self.complete &= !failed;
            failed
        } else {
            false
        }
    }
}

/// Splices the clrspy `Trigger` event for `fired` into the sinks that keep a trace.
fn splice_trigger(sinks: &mut [&mut dyn ByteSink], fired: &crate::tap::Fired, after: Duration) {
    let ev = trigger_event(fired, after);
    let ts = monotonic_ns();
    for s in sinks.iter_mut().filter(|s| s.wants_splices()) {
        s.splice(ts, &ev);
    }
}

/// clrspy's `Trigger` event for `fired`, recording `after` more.
fn trigger_event(fired: &crate::tap::Fired, after: Duration) -> Injected {
    Injected::Trigger {
        trigger: fired.trigger.clone(),
        reason: fired.reason.clone(),
        provider: fired.provider.clone(),
        event: fired.event.clone(),
        event_timestamp: u64::try_from(fired.timestamp).unwrap_or(0),
        after_ms: after.as_millis().min(u128::from(u32::MAX)) as u32,
    }
}

/// Finishes the file and the other sinks (all of them, whatever fails); the file's report
/// (an empty one without a file), or the first error.
fn finish_sinks(
    file: Option<&mut Box<dyn ByteSink>>,
    extra: &mut [Box<dyn ByteSink + '_>],
) -> Result<SinkReport> {
    let report = file.map_or(Ok(SinkReport::default()), |f| f.finish());
    let mut first_err = None;
    for s in extra.iter_mut() {
        if let Err(e) = s.finish() {
            first_err.get_or_insert(e);
        }
    }
    let report = report?;
    first_err.map_or(Ok(report), Err)
}

/// Every sink of the stream: the file (when there is one), the others, the tap last.
fn all_sinks<'s>(
    file: &'s mut Option<Box<dyn ByteSink>>,
    extra: &'s mut [Box<dyn ByteSink + '_>],
    tap: &'s mut Tap,
) -> Vec<&'s mut dyn ByteSink> {
    let mut v: Vec<&mut dyn ByteSink> = Vec::with_capacity(extra.len() + 2);
    if let Some(f) = file.as_mut() {
        v.push(&mut **f);
    }
    for s in extra.iter_mut() {
        v.push(&mut **s);
    }
    v.push(tap.sink());
    v
}

/// True when a session names the methods it sees compiled (the runtime provider's JIT keyword):
/// a trace whose frames are worth naming after what they inline.
fn names_methods(config: &diagnostics_client::SessionConfig) -> bool {
    config.providers.iter().any(|p| {
        p.name.eq_ignore_ascii_case(clr_events::RUNTIME_PROVIDER) && p.keywords & 0x10 != 0
    })
}

/// Streams `session` into `file` and `live`'s sinks until a stop condition; `to` opens the
/// connection for StopTracing; `pid` is the target as seen from here (for its thread CPU
/// readings).
pub(crate) fn pump(
    mut session: Session,
    to: Arc<dyn Connector>,
    mut file: Option<Box<dyn ByteSink>>,
    pid: u32,
    rec: &Recording<'_>,
    mut live: LiveFeeds<'_>,
    on_progress: OnProgress<'_>,
) -> Result<Summary> {
    let interval = rec.thread_cpu.filter(|_| cfg!(target_os = "linux"));
    let kernel = live.kernel_sampler.take();
    let tick = match (interval, &kernel) {
        (Some(i), Some(_)) => Some(i.min(KERNEL_DRAIN)),
        (i, _) => i,
    };
    let read_timeout = tick
        .map_or(Duration::from_millis(100), |i| {
            i.min(Duration::from_millis(100))
        })
        .max(Duration::from_millis(1));
    session.set_read_timeout(read_timeout)?;
    let ips = SharedIps::default();
    let osr = crate::osr::SharedOsr::default();
    let kernel_osr = kernel.is_some();
    let kernel = kernel.map(|k| (k, osr.clone()));
    let mut readings = interval.map(|i| CpuReadings::new(pid, i, ips.clone(), kernel));
    if let Some(r) = readings
        .as_mut()
        .filter(|_| file.is_some() && names_methods(rec.config))
    {
        r.follow_inlines(crate::inlines::InlineWatch::start(to.clone()));
    }
    let started = Instant::now();
    let mut consumers = std::mem::take(&mut live.consumers);
    if readings.is_some() {
        consumers.push(Box::new(StackIps(ips)));
        if kernel_osr {
            consumers.push(Box::new(crate::osr::OsrLoads::new(osr)));
        }
    }
    let mut tap = Tap::new(consumers, live.broadcast.take(), live.lossless);
    let mut buf = vec![0u8; 256 * 1024];
    let mut stop = Stopping::new();
    let mut extra = std::mem::take(&mut live.sinks);
    let mut last_data: Option<Instant> = None;
    let result: Result<()> = (|| loop {
        let has_output = file.is_some() || !extra.is_empty();
        let tap_cpu_ns = tap.thread_cpu_ns();
        let mut sinks = all_sinks(&mut file, &mut extra, &mut tap);
        match session.read(&mut buf) {
            Ok(0) => {
                stop.reason.get_or_insert(StopReason::TargetEnded);
                return Ok(());
            }
            Ok(n) => {
                last_data = Some(Instant::now());
                for s in sinks.iter_mut() {
                    s.write(&buf[..n])?;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                // The connection broke (the target died): what arrived is stored.
                stop.reason.get_or_insert(StopReason::TargetEnded);
                stop.complete = false;
                return Ok(());
            }
        }
        if let Some(r) = readings.as_mut() {
            r.tick(&mut sinks, tap_cpu_ns);
        }
        for s in sinks.iter_mut() {
            s.flush()?;
        }
        // The first sink is the file (or the first other output).
        let bytes = if has_output {
            sinks.first().map_or(0, |f| f.bytes())
        } else {
            0
        };
        drop(sinks);
        let (events, dropped_events) = tap.counts();
        on_progress(&Progress {
            elapsed: started.elapsed(),
            bytes,
            tap_lost: tap.loss(),
            events,
            dropped_events,
            stopping_in: stop
                .fired
                .as_ref()
                .map(|f| f.1.saturating_duration_since(Instant::now())),
        });
        while let Some(a) = tap.next_action() {
            if let Action::Trigger { fired, after } = &a {
                if stop.fired.is_none() && !stop.sent {
                    splice_trigger(
                        &mut all_sinks(&mut file, &mut extra, &mut tap),
                        fired,
                        *after,
                    );
                }
            }
            stop.act(a, &live.requests, &to, session.id);
        }
        let quiet = tap.loss().is_some()
            && live
                .quiet_stop
                .zip(last_data)
                .is_some_and(|(q, at)| at.elapsed() >= q);
        if quiet && !stop.sent {
            let reason = "the stream went quiet".to_string();
            stop.act(Action::Stop { reason }, &live.requests, &to, session.id);
        }
        let quit = stop.check(rec, started, &to, session.id);
        if stop.sent && !stop.sinks_told {
            // What follows is the rundown: a ring keeps it beyond its budget.
            stop.sinks_told = true;
            for s in all_sinks(&mut file, &mut extra, &mut tap).iter_mut() {
                s.stopping();
            }
        }
        if quit {
            return Ok(());
        }
    })();
    if live.exit_trigger
        && !stop.sent
        && stop.fired.is_none()
        && stop.reason == Some(StopReason::TargetEnded)
    {
        // The target's exit is the trigger: said in the trace before its end marker.
        let fired = crate::tap::Fired::exit(started.elapsed());
        let mut sinks = all_sinks(&mut file, &mut extra, &mut tap);
        let ev = trigger_event(&fired, Duration::ZERO);
        let ts = monotonic_ns();
        for s in sinks.iter_mut() {
            s.splice_at_end(ts, &ev);
        }
        stop.fired = Some((fired, Instant::now()));
    }
    if let (Ok(()), Some(r)) = (&result, readings.as_mut()) {
        r.last(&mut all_sinks(&mut file, &mut extra, &mut tap));
    }
    // Whatever happened, what arrived is made durable before the error is reported.
    let report = finish_sinks(file.as_mut(), &mut extra);
    result?;
    let report = report?;
    let ((events, dropped_events), tap_lost, rest) = tap.finish();
    for a in rest {
        // The session is over: only requests for the caller are still worth passing on.
        if !matches!(a, Action::Stop { .. }) {
            stop.act(a, &live.requests, &to, session.id);
        }
    }
    Ok(Summary {
        path: report
            .path
            .clone()
            .or_else(|| rec.out.map(Path::to_path_buf)),
        tap_lost,
        bytes: report.bytes,
        events,
        dropped_events,
        reason: stop.reason.unwrap_or(StopReason::TargetEnded),
        trigger: stop.detail,
        fired: stop.fired.map(|f| f.0),
        ring: report.ring,
        complete: stop.complete,
        elapsed: started.elapsed(),
        command_version: session.command_version,
        degraded: session.degraded.clone(),
        notes: Vec::new(),
        spliced_events: report.spliced_events,
        closed_by_clrspy: report.closed_by_clrspy,
    })
}
