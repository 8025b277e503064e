//! Blocked threads grouped by where they wait, so that a hang of 300 threads reads as a few
//! lines: `301 threads in System.Threading.Monitor.Enter(Object,bool&) from
//! App.Locks.WaitForFirst, lock 0x…`, with how many of each name and the first thread ids.
//! Each group holds every thread's id (the JSON has them all); the text cuts and says how
//! many more.

use rustc_hash::FxHashMap;
use serde::Serialize;

/// The name counted for threads without one.
pub(super) const NO_NAME: &str = "(no name)";

/// Names in a group: how many threads go by each.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct NameCount {
    /// The name shown ([`clrspy_analysis::Analysis::thread_name`]); threads without one
    /// count under `(no name)`.
    pub name: String,
    /// Threads with it.
    pub threads: usize,
}

/// Threads blocked at one place: the same kind of wait, from the same method, on the same
/// lock (when the runtime said which). The call they wait in is not part of it: the JIT may
/// inline `Monitor.Enter` into the method after a while, and the same wait then shows with
/// a frame less.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct BlockedGroup {
    /// `lock` or `wait`.
    pub(crate) kind: &'static str,
    /// How many threads.
    pub(crate) threads: usize,
    /// The blocking call (the outermost frame of the waiting code), e.g.
    /// `System.Threading.Monitor.Enter(Object,bool&)`: the one most of its threads show.
    pub(crate) blocked_in: String,
    /// The method that waited (the first frame outside the waiting code).
    pub(crate) method: String,
    /// The lock (hex), when the runtime said (lock waits on .NET 8+).
    pub(crate) lock: Option<String>,
    /// The lock's owner thread, when the runtime said.
    pub(crate) owner_thread_id: Option<u64>,
    /// What a handle wait is in (`MonitorWait`, ...).
    pub(crate) source: Option<String>,
    /// The longest wait of the group at the trace's end, ms (null for a hang in progress:
    /// the wait began before the recording).
    pub(crate) longest_waiting_ms: Option<f64>,
    /// How many threads go by each name, most first.
    pub(crate) names: Vec<NameCount>,
    /// Every thread's id, ascending.
    pub(crate) thread_ids: Vec<u64>,
}

/// One blocked thread, as grouped.
pub(super) struct Member<'a> {
    pub(crate) kind: &'static str,
    pub(crate) thread_id: u64,
    pub(crate) name: Option<&'a str>,
    pub(crate) blocked_in: &'a str,
    pub(crate) method: &'a str,
    pub(crate) lock: Option<&'a str>,
    pub(crate) owner_thread_id: Option<u64>,
    pub(crate) source: Option<&'a str>,
    pub(crate) waiting_ms: Option<f64>,
}

/// The groups of `members`: most threads first, then the longest wait, then by method.
pub(super) fn group(members: &[Member<'_>]) -> Vec<BlockedGroup> {
    type Key<'a> = (&'static str, &'a str, Option<&'a str>, Option<u64>, Option<&'a str>);
    type Counts<'a> = FxHashMap<&'a str, usize>;
    let mut by: FxHashMap<Key<'_>, (BlockedGroup, Counts<'_>, Counts<'_>)> =
        FxHashMap::default();
    for m in members {
        let key = (m.kind, m.method, m.lock, m.owner_thread_id, m.source);
        let (g, names, calls) = by.entry(key).or_insert_with(|| {
            let g = BlockedGroup {
                kind: m.kind,
                threads: 0,
                blocked_in: m.blocked_in.to_string(),
                method: m.method.to_string(),
                lock: m.lock.map(str::to_string),
                owner_thread_id: m.owner_thread_id,
                source: m.source.map(str::to_string),
                longest_waiting_ms: None,
                names: Vec::new(),
                thread_ids: Vec::new(),
            };
            (g, FxHashMap::default(), FxHashMap::default())
        });
        g.threads += 1;
        g.thread_ids.push(m.thread_id);
        if let Some(w) = m.waiting_ms {
            g.longest_waiting_ms = Some(g.longest_waiting_ms.map_or(w, |l| l.max(w)));
        }
        *names.entry(m.name.unwrap_or(NO_NAME)).or_default() += 1;
        *calls.entry(m.blocked_in).or_default() += 1;
    }
    let mut groups: Vec<BlockedGroup> = by
        .into_values()
        .map(|(mut g, names, calls)| {
            g.thread_ids.sort_unstable();
            if let Some((call, _)) = calls
                .into_iter()
                .max_by(|x, y| x.1.cmp(&y.1).then_with(|| y.0.cmp(x.0)))
            {
                g.blocked_in = call.to_string();
            }
            let mut names: Vec<NameCount> = names
                .into_iter()
                .map(|(name, threads)| NameCount {
                    name: name.to_string(),
                    threads,
                })
                .collect();
            names.sort_by(|x, y| y.threads.cmp(&x.threads).then_with(|| x.name.cmp(&y.name)));
            g.names = names;
            g
        })
        .collect();
    groups.sort_by(|x, y| {
        y.threads
            .cmp(&x.threads)
            .then_with(|| {
                y.longest_waiting_ms
                    .unwrap_or(0.0)
                    .total_cmp(&x.longest_waiting_ms.unwrap_or(0.0))
            })
            .then_with(|| x.method.cmp(&y.method))
            .then_with(|| x.thread_ids.cmp(&y.thread_ids))
    });
    groups
}

/// The waiting code's outermost frame of a stack (leaf first): the call the method that
/// waited made; the leaf when the whole stack is waiting code.
pub(super) fn blocked_in(frames: &[String], is_wait_internal: impl Fn(&str) -> bool) -> String {
    let outside = frames.iter().position(|f| !is_wait_internal(f));
    match outside {
        Some(0) | None => frames.first().cloned(),
        Some(i) => frames.get(i - 1).cloned(),
    }
    .unwrap_or_else(|| "[no stack]".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: u64, name: &'static str, method: &'static str, lock: Option<&'static str>) -> Member<'static> {
        Member {
            kind: "lock",
            thread_id: id,
            name: Some(name),
            blocked_in: "System.Threading.Monitor.Enter(Object,bool&)",
            method,
            lock,
            owner_thread_id: lock.map(|_| 7),
            source: None,
            waiting_ms: Some(id as f64),
        }
    }

    #[test]
    fn three_hundred_waiters_are_one_group_with_their_names_counted() {
        let mut m: Vec<Member<'static>> = (100..400)
            .map(|i| member(i, "thread started to run A.WaitForFirst", "A.WaitForFirst", Some("0x10")))
            .collect();
        m.push(member(50, ".NET TP Worker", "A.WaitForFirst", Some("0x10")));
        m.push(member(7, "thread started by A.Form", "A.TakeFirstThenSecond", Some("0x20")));
        // The JIT inlined Monitor.Enter for one of them: the same group.
        m.push(Member {
            blocked_in: "System.Threading.Monitor.Enter_Slowpath",
            ..member(51, ".NET TP Worker", "A.WaitForFirst", Some("0x10"))
        });
        // Same method, another lock: another group.
        m.push(member(8, "thread started by A.Form", "A.WaitForFirst", Some("0x20")));
        let g = group(&m);
        assert_eq!(g.len(), 3);
        assert_eq!((g[0].threads, g[0].lock.as_deref()), (302, Some("0x10")));
        assert_eq!(g[0].blocked_in, "System.Threading.Monitor.Enter(Object,bool&)");
        assert_eq!(g[0].thread_ids[..3], [50, 51, 100]);
        assert_eq!(g[0].longest_waiting_ms, Some(399.0));
        assert_eq!(
            g[0].names,
            [
                NameCount { name: "thread started to run A.WaitForFirst".into(), threads: 300 },
                NameCount { name: ".NET TP Worker".into(), threads: 2 },
            ]
        );
        // Equal sizes: the longest wait first.
        assert_eq!(g[1].thread_ids, [8]);
        assert_eq!(g[2].method, "A.TakeFirstThenSecond");
    }

    #[test]
    fn the_call_the_waiter_made() {
        let internal = |f: &str| f.starts_with("System.Threading.");
        let frames: Vec<String> = [
            "System.Threading.Monitor.Enter_Slowpath",
            "System.Threading.Monitor.Enter(Object,bool&)",
            "A.WaitForFirst",
            "System.Threading.Thread+StartHelper.Callback",
        ]
        .iter()
        .map(|f| f.to_string())
        .collect();
        assert_eq!(blocked_in(&frames, internal), "System.Threading.Monitor.Enter(Object,bool&)");
        assert_eq!(blocked_in(&frames[2..], internal), "A.WaitForFirst");
        assert_eq!(blocked_in(&[], internal), "[no stack]");
    }
}
