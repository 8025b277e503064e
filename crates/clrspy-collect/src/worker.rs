//! One worker pattern for slow actions asked for while recording — dumps, heap snapshots,
//! bundles: a thread of its own that runs one job at a time from a queue, so nothing slow ever
//! runs on the pump's thread (a pump that stops draining makes the runtime drop events) or the
//! tap's (its consumers would fall behind). Askers hold a cheap [`WorkerHandle`]; a full queue
//! refuses at once instead of waiting; [`Worker::finish`] waits for the jobs queued so far.
//! Limits that depend on what is asked (a rule's `max_actions`, a cooldown, free disk) are the
//! asker's gate ([`DumpGate`](crate::DumpGate) for dumps), checked before anything is queued.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Asks a [`Worker`] for jobs; cheap to clone, usable from any thread.
pub struct WorkerHandle<J> {
    tx: Sender<Option<J>>,
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    /// Set once the worker is finishing: asks are refused.
    closed: Arc<Mutex<bool>>,
}

impl<J> Clone for WorkerHandle<J> {
    fn clone(&self) -> Self {
        WorkerHandle {
            tx: self.tx.clone(),
            queued: self.queued.clone(),
            max_queued: self.max_queued,
            closed: self.closed.clone(),
        }
    }
}

impl<J> std::fmt::Debug for WorkerHandle<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("queued", &self.queued.load(Ordering::SeqCst))
            .field("max_queued", &self.max_queued)
            .finish()
    }
}

impl<J: Send + 'static> WorkerHandle<J> {
    /// A handle that refuses every ask (no worker behind it).
    pub fn refusing() -> WorkerHandle<J> {
        let (tx, _) = channel();
        WorkerHandle {
            tx,
            queued: Arc::new(AtomicUsize::new(0)),
            max_queued: 0,
            closed: Arc::new(Mutex::new(true)),
        }
    }

    /// Queues `job`; false (and nothing queued) when the queue is full, the worker is
    /// finishing, or it has no thread.
    pub fn submit(&self, job: J) -> bool {
        let closed = self.closed.lock().unwrap_or_else(|p| p.into_inner());
        if *closed {
            return false;
        }
        let room = self
            .queued
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                (q < self.max_queued).then_some(q + 1)
            });
        if room.is_err() {
            return false;
        }
        if self.tx.send(Some(job)).is_err() {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }
}

/// A thread running jobs one at a time.
pub struct Worker<J> {
    handle: WorkerHandle<J>,
    thread: Option<JoinHandle<()>>,
}

impl<J> std::fmt::Debug for Worker<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("handle", &self.handle)
            .finish()
    }
}

impl<J: Send + 'static> Worker<J> {
    /// Starts thread `name` running `run` on each job, with at most `max_queued` jobs queued
    /// or running (asks beyond are refused). Without a thread every ask is refused.
    pub fn start(name: &str, max_queued: usize, mut run: impl FnMut(J) + Send + 'static) -> Self {
        let (tx, rx) = channel::<Option<J>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let q = queued.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                // None: the end (asks after it are not served).
                for job in rx.iter().map_while(|j| j) {
                    run(job);
                    q.fetch_sub(1, Ordering::SeqCst);
                }
            })
            .ok();
        let handle = WorkerHandle {
            tx,
            queued,
            max_queued: if thread.is_some() { max_queued } else { 0 },
            closed: Arc::new(Mutex::new(thread.is_none())),
        };
        Worker { handle, thread }
    }

    /// A handle for askers.
    pub fn handle(&self) -> WorkerHandle<J> {
        self.handle.clone()
    }

    /// Refuses further asks, runs the jobs queued so far, and waits for the thread.
    pub fn finish(mut self) {
        self.close();
    }

    fn close(&mut self) {
        {
            let mut closed = self.handle.closed.lock().unwrap_or_else(|p| p.into_inner());
            if !*closed {
                *closed = true;
                let _ = self.handle.tx.send(None);
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl<J> Drop for Worker<J> {
    fn drop(&mut self) {
        if let Ok(mut closed) = self.handle.closed.lock() {
            if !*closed {
                *closed = true;
                let _ = self.handle.tx.send(None);
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn jobs_run_in_order_one_at_a_time_and_finish_waits_for_them() {
        let done = Arc::new(Mutex::new(Vec::new()));
        let d = done.clone();
        let w = Worker::start("test-worker", 8, move |n: u32| {
            std::thread::sleep(Duration::from_millis(5));
            d.lock().unwrap().push(n);
        });
        let h = w.handle();
        for n in 0..5 {
            assert!(h.submit(n));
        }
        w.finish();
        assert_eq!(*done.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        assert!(!h.submit(9), "asks after the end are refused");
    }

    #[test]
    fn a_full_queue_refuses_at_once() {
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = Mutex::new(gate);
        let w = Worker::start("test-worker", 2, move |_: u32| {
            let _ = gate.lock().unwrap().recv();
        });
        let h = w.handle();
        assert!(h.submit(1));
        assert!(h.submit(2));
        let asked = std::time::Instant::now();
        assert!(!h.submit(3), "a third job does not fit");
        assert!(asked.elapsed() < Duration::from_millis(100));
        assert_eq!(h.pending(), 2);
        drop(release);
        w.finish();
        assert_eq!(h.pending(), 0);
    }
}
