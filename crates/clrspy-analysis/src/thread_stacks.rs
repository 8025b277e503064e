//! The model of every thread's stack at one moment (`clrspy stack`, and the agent later): one
//! entry per OS thread of the process, with its name, its scheduler state and its frames
//! innermost first; a thread the runtime did not sample, or sampled with no managed frame on
//! it, is kept with no frames (never dropped).

/// One thread of a stack snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadStack {
    /// The OS thread id.
    pub thread_id: u64,
    /// Its name (`/proc/PID/task/TID/comm`: the runtime gives managed threads their name,
    /// cut to 15 bytes; its own threads are `.NET TP Worker`, `.NET SigHandler`, ...).
    pub name: Option<String>,
    /// Its scheduler state when listed (`R` running, `S` sleeping, `D` disk wait, ...).
    pub state: Option<char>,
    /// Frame names, innermost first; empty when no managed frame is on the thread.
    pub frames: Vec<String>,
    /// True when the runtime sampled it (it is a thread the runtime knows).
    pub sampled: bool,
    /// True when the thread ran managed code when sampled (false: it was outside managed
    /// code — waiting, in the runtime or in native code).
    pub running_managed: bool,
}

impl ThreadStack {
    /// True when the thread has managed frames.
    pub fn managed(&self) -> bool {
        !self.frames.is_empty()
    }
}

/// One thread as the OS lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsThread {
    /// The OS thread id.
    pub thread_id: u64,
    /// Its name.
    pub name: String,
    /// Its scheduler state.
    pub state: char,
}

/// Every thread's stack at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackSnapshot {
    /// The process id.
    pub pid: u32,
    /// Every thread: the main thread (its id is the process's) first, then by id.
    pub threads: Vec<ThreadStack>,
    /// False when the snapshot is partial (the session timed out before every thread was
    /// sampled or before its methods were named); [`StackSnapshot::notes`] says what is missing.
    pub complete: bool,
    /// What the user should know about how the snapshot was taken.
    pub notes: Vec<String>,
}

impl StackSnapshot {
    /// The snapshot of process `pid` from the runtime's `sampled` threads and the OS's list
    /// of threads: every thread of either, by id; names and states from the OS list (a
    /// sampled thread that ended since keeps no name).
    pub fn merge(pid: u32, sampled: Vec<ThreadStack>, os: &[OsThread]) -> StackSnapshot {
        let mut threads: std::collections::BTreeMap<u64, ThreadStack> =
            sampled.into_iter().map(|t| (t.thread_id, t)).collect();
        for o in os {
            let t = threads.entry(o.thread_id).or_insert_with(|| ThreadStack {
                thread_id: o.thread_id,
                ..ThreadStack::default()
            });
            t.name = Some(o.name.clone());
            t.state = Some(o.state);
        }
        let mut snap = StackSnapshot {
            pid,
            threads: threads.into_values().collect(),
            complete: true,
            notes: Vec::new(),
        };
        snap.sort();
        snap
    }

    /// Puts the threads in their order: the main thread (its id is the process's) first, then
    /// by id.
    pub fn sort(&mut self) {
        let main = u64::from(self.pid);
        self.threads
            .sort_by_key(|t| (t.thread_id != main, t.thread_id));
    }

    /// The threads with managed frames.
    pub fn managed_threads(&self) -> usize {
        self.threads.iter().filter(|t| t.managed()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampled(tid: u64, frames: &[&str]) -> ThreadStack {
        ThreadStack {
            thread_id: tid,
            frames: frames.iter().map(|f| f.to_string()).collect(),
            sampled: true,
            ..ThreadStack::default()
        }
    }

    fn os(tid: u64, name: &str) -> OsThread {
        OsThread {
            thread_id: tid,
            name: name.into(),
            state: 'S',
        }
    }

    #[test]
    fn merge_keeps_every_thread_of_either_list_by_id() {
        let s = StackSnapshot::merge(
            10,
            vec![
                sampled(12, &["B.Wait", "B.Main"]),
                sampled(99, &["Gone.Run"]),
            ],
            &[
                os(11, ".NET SigHandler"),
                os(10, "app"),
                os(12, "worker"),
                os(3, "wrapped"),
            ],
        );
        let ids: Vec<u64> = s.threads.iter().map(|t| t.thread_id).collect();
        // The main thread first, even when thread ids wrapped around below it.
        assert_eq!(ids, [10, 3, 11, 12, 99]);
        let s = StackSnapshot {
            threads: s.threads[1..].to_vec(),
            ..s
        };
        assert_eq!(s.threads[2].name.as_deref(), Some("worker"));
        assert_eq!(s.threads[2].frames, ["B.Wait", "B.Main"]);
        assert!(s.threads[2].sampled);
        assert!(!s.threads[1].managed());
        assert!(!s.threads[1].sampled);
        assert_eq!(s.threads[1].state, Some('S'));
        // Sampled, then ended before the listing: kept, nameless.
        assert_eq!(s.threads[3].name, None);
        assert_eq!(s.managed_threads(), 2);
        assert!(s.complete);
    }
}
