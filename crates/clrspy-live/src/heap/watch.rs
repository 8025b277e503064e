//! `heap watch`'s loop, once for the CLI and later the agent: a snapshot of a live process every
//! so often into a directory, what grew in each interval (clrspy-analysis' heap diff), until the
//! count is reached, a stop is requested or a snapshot fails. Events tell the caller what to
//! print; the snapshots, the intervals' growth and the last model come back for the summary.

use std::path::Path;
use std::time::{Duration, Instant};

use clrspy_analysis::heap::diff::{diff, TypeDelta};
use clrspy_analysis::heap::growth::WatchShot;
use clrspy_analysis::heap::HeapModel;
use clrspy_collect::StopSignal;
use diagnostics_client::Endpoint;

use super::{take, HeapSnapError, SnapEvent};

/// What to watch and how.
pub struct WatchSpec<'a> {
    /// The process.
    pub endpoint: &'a Endpoint,
    /// Where the `.gcdump` files go (`PID_STAMP_N.gcdump`).
    pub dir: &'a Path,
    /// Time between the starts of two snapshots.
    pub every: Duration,
    /// Snapshots to take.
    pub count: u32,
    /// Each snapshot's timeout.
    pub timeout: Duration,
    /// Ends the watch early (the snapshots taken are kept).
    pub stop: &'a StopSignal,
}

/// What the watch reports, in order.
pub enum WatchEvent<'a> {
    /// Progress of the snapshot under way.
    Snap(SnapEvent),
    /// A snapshot was written.
    Taken {
        /// Its index, from 0.
        index: u32,
        /// The snapshot.
        shot: &'a WatchShot,
    },
    /// What grew between the snapshot `index - 1` and `index`.
    Interval {
        /// The later snapshot's index.
        index: u32,
        /// The growth by type.
        growth: &'a [TypeDelta],
    },
}

/// What a watch left.
pub struct Watched {
    /// The snapshots taken.
    pub shots: Vec<WatchShot>,
    /// Each interval's growth, in order.
    pub intervals: Vec<Vec<TypeDelta>>,
    /// The last snapshot's model.
    pub last: Option<HeapModel>,
    /// True when a stop ended it before the count.
    pub stopped_early: bool,
    /// The snapshot that failed (not one a stop cut short), if one did.
    pub failure: Option<HeapSnapError>,
}

/// Runs the watch; `on_event` hears each step, and an error it returns ends the watch with it.
pub fn watch<E>(
    spec: &WatchSpec<'_>,
    on_event: &mut dyn FnMut(WatchEvent<'_>) -> Result<(), E>,
) -> Result<Watched, E> {
    let stop = spec.stop;
    let stamp = clrspy_values::time::file_stamp(std::time::SystemTime::now());
    let t0 = Instant::now();
    let mut w = Watched {
        shots: Vec::new(),
        intervals: Vec::new(),
        last: None,
        stopped_early: false,
        failure: None,
    };
    for i in 0..spec.count {
        if !wait_until(t0 + spec.every * i, stop) {
            break;
        }
        let pid = spec.endpoint.pid;
        let file = spec.dir.join(format!("{pid}_{stamp}_{}.gcdump", i + 1));
        let mut say = |e| {
            let _ = on_event(WatchEvent::Snap(e));
        };
        let taken = match take(spec.endpoint, &file, spec.timeout, stop, &mut say) {
            Ok(t) => t,
            Err(e) => {
                if stop.count() == 0 {
                    w.failure = Some(e);
                }
                break;
            }
        };
        let at = t0.elapsed();
        let model = HeapModel::new(taken.dump.graph);
        let shot = WatchShot {
            file,
            objects: model.objects(),
            bytes: model.bytes(),
            at,
        };
        on_event(WatchEvent::Taken {
            index: i,
            shot: &shot,
        })?;
        w.shots.push(shot);
        if let Some(p) = &w.last {
            let d = diff(p, &model);
            on_event(WatchEvent::Interval {
                index: i,
                growth: &d,
            })?;
            w.intervals.push(d);
        }
        w.last = Some(model);
        if stop.count() > 0 {
            break;
        }
    }
    w.stopped_early = stop.count() > 0;
    Ok(w)
}

/// Sleeps until `when`; false when a stop was requested first.
fn wait_until(when: Instant, stop: &StopSignal) -> bool {
    while Instant::now() < when {
        if stop.count() > 0 {
            return false;
        }
        std::thread::sleep((when - Instant::now()).min(Duration::from_millis(100)));
    }
    stop.count() == 0
}
