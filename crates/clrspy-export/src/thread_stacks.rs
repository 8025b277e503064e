//! A stack snapshot ([`StackSnapshot`]: every thread's stack at one moment) as text and as
//! JSON — `clrspy stack`'s two outputs, and what the agent answers with later.
//!
//! Text: one block per thread, `Thread <tid> "<name>"` then its frames innermost first, or
//! `(no managed frames)`; blocks apart by a blank line. A thread whose OS name is not its own
//! (Linux gives a new thread its creator's: every `new Thread()` a request starts is `.NET TP
//! Worker`) is headed by what started it instead, as its frames show
//! ([`clrspy_analysis::thread_names`]): `Thread <tid> (thread started by <method>; OS name
//! "<name>", its creator's)`. JSON: `{"pid", "complete", "threads": [{"thread_id", "name",
//! "label", "pool_worker", "name_inherited", "state", "managed", "sampled", "running_managed",
//! "frames"}], "notes"}`; `name` is the OS name trimmed (whole when Linux cut a known long
//! one), `label` the name to show.

use std::io::{self, Write};

use clrspy_analysis::thread_names::{clean_name, started_by, ThreadFacts};
use clrspy_analysis::thread_stacks::{StackSnapshot, ThreadStack};
use serde_json::{json, Value};

/// What a thread without managed frames shows instead of them.
pub(crate) const NO_MANAGED_FRAMES: &str = "(no managed frames)";

/// What `snap` tells of thread `t` to name it by: its OS name, what its frames start in, the
/// main thread's name (which the threads it starts inherit). The OS keeps no creator and no
/// event of the past is at hand: the frames are all a live stack has.
fn facts(snap: &StackSnapshot, t: &ThreadStack) -> ThreadFacts {
    let main = u64::from(snap.pid);
    let inheritable = snap
        .threads
        .iter()
        .filter(|m| m.thread_id == main && t.thread_id != main)
        .filter_map(|m| m.name.as_deref().map(clean_name))
        .collect();
    ThreadFacts {
        name: t.name.as_deref().map(clean_name),
        started: started_by(&t.frames),
        inheritable,
        ..ThreadFacts::default()
    }
}

/// The thread's heading line: `Thread <tid> "<name>"` (the name quoted as JSON quotes it, so
/// a name with quotes or control bytes stays one line); no name part for a nameless thread;
/// what started it when its name is inherited.
fn heading(t: &ThreadStack, f: &ThreadFacts) -> String {
    match (&f.name, f.display()) {
        (Some(n), Some(label)) if f.name_inherited() => format!(
            "Thread {} ({label}; OS name {}, its creator's)",
            t.thread_id,
            Value::from(n.as_str())
        ),
        (_, Some(label)) => format!("Thread {} {}", t.thread_id, Value::from(label)),
        (_, None) => format!("Thread {}", t.thread_id),
    }
}

/// Writes `snap` as text.
pub fn write_text(snap: &StackSnapshot, out: &mut dyn Write) -> io::Result<()> {
    for (i, t) in snap.threads.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{}", heading(t, &facts(snap, t)))?;
        if t.frames.is_empty() {
            writeln!(out, "  {NO_MANAGED_FRAMES}")?;
        }
        for f in &t.frames {
            writeln!(out, "  {f}")?;
        }
    }
    Ok(())
}

/// `snap` as a JSON value.
pub fn to_json(snap: &StackSnapshot) -> Value {
    let threads: Vec<Value> = snap
        .threads
        .iter()
        .map(|t| {
            let f = facts(snap, t);
            json!({
                "thread_id": t.thread_id,
                "name": f.name,
                "label": f.display(),
                "pool_worker": f.is_pool_worker(),
                "name_inherited": f.name_inherited(),
                "state": t.state.map(String::from),
                "managed": t.managed(),
                "sampled": t.sampled,
                "running_managed": t.running_managed,
                "frames": t.frames,
            })
        })
        .collect();
    json!({
        "pid": snap.pid,
        "complete": snap.complete,
        "threads": threads,
        "notes": snap.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> StackSnapshot {
        StackSnapshot {
            pid: 7,
            threads: vec![
                ThreadStack {
                    thread_id: 7,
                    name: Some("app \"x\"".into()),
                    state: Some('S'),
                    frames: vec!["A.Wait()".into(), "A.Main()".into()],
                    sampled: true,
                    running_managed: false,
                },
                ThreadStack {
                    thread_id: 9,
                    name: Some(".NET SigHandler".into()),
                    state: Some('S'),
                    ..ThreadStack::default()
                },
                ThreadStack {
                    thread_id: 12,
                    ..ThreadStack::default()
                },
                ThreadStack {
                    thread_id: 13,
                    name: Some(".NET TP Worker".into()),
                    frames: vec![
                        "A.Locks.WaitForFirst".into(),
                        "System.Threading.Thread+StartHelper.Callback".into(),
                    ],
                    ..ThreadStack::default()
                },
                ThreadStack {
                    thread_id: 14,
                    name: Some(".NET TP Worker".into()),
                    frames: vec![
                        "A.Locks.WaitForFirst".into(),
                        "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart".into(),
                    ],
                    ..ThreadStack::default()
                },
                ThreadStack {
                    thread_id: 15,
                    name: Some("Console logger ".into()),
                    ..ThreadStack::default()
                },
            ],
            complete: true,
            notes: Vec::new(),
        }
    }

    #[test]
    fn text_lists_every_thread_with_frames_leaf_first() {
        let mut out = Vec::new();
        write_text(&snap(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "Thread 7 \"app \\\"x\\\"\"\n  A.Wait()\n  A.Main()\n\n\
             Thread 9 \".NET SigHandler\"\n  (no managed frames)\n\n\
             Thread 12\n  (no managed frames)\n\n\
             Thread 13 (thread started to run A.Locks.WaitForFirst; OS name \".NET TP Worker\", its creator's)\n\
             \x20 A.Locks.WaitForFirst\n  System.Threading.Thread+StartHelper.Callback\n\n\
             Thread 14 \".NET TP Worker\"\n  A.Locks.WaitForFirst\n\
             \x20 System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart\n\n\
             Thread 15 \"Console logger queue processing thread\"\n  (no managed frames)\n"
        );
    }

    #[test]
    fn json_has_the_threads_with_ids_names_and_frames() {
        let v = to_json(&snap());
        assert_eq!(v["pid"], 7);
        let t = v["threads"].as_array().unwrap();
        assert_eq!(t.len(), 6);
        assert_eq!(t[3]["name"], ".NET TP Worker");
        assert_eq!(t[3]["label"], "thread started to run A.Locks.WaitForFirst");
        assert_eq!(
            (&t[3]["pool_worker"], &t[3]["name_inherited"]),
            (&json!(false), &json!(true))
        );
        assert_eq!(
            (&t[4]["label"], &t[4]["pool_worker"]),
            (&json!(".NET TP Worker"), &json!(true))
        );
        assert_eq!(t[5]["name"], "Console logger queue processing thread");
        assert_eq!(t[0]["thread_id"], 7);
        assert_eq!(t[0]["frames"][0], "A.Wait()");
        assert_eq!(t[0]["managed"], true);
        assert_eq!(t[1]["name"], ".NET SigHandler");
        assert_eq!(t[1]["managed"], false);
        assert_eq!(t[1]["frames"].as_array().map(Vec::len), Some(0));
        assert!(t[2]["name"].is_null());
    }
}
