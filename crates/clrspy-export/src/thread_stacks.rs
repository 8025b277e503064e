//! A stack snapshot ([`StackSnapshot`]: every thread's stack at one moment) as text and as
//! JSON — `clrspy stack`'s two outputs, and what the agent answers with later.
//!
//! Text: one block per thread, `Thread <tid> "<name>"` then its frames innermost first, or
//! `(no managed frames)`; blocks apart by a blank line. JSON: `{"pid", "complete", "threads":
//! [{"thread_id", "name", "state", "managed", "sampled", "running_managed", "frames"}], "notes"}`.

use std::io::{self, Write};

use clrspy_analysis::thread_stacks::{StackSnapshot, ThreadStack};
use serde_json::{json, Value};

/// What a thread without managed frames shows instead of them.
pub const NO_MANAGED_FRAMES: &str = "(no managed frames)";

/// The thread's heading line: `Thread <tid> "<name>"` (the name quoted as JSON quotes it, so
/// a name with quotes or control bytes stays one line); no name part for a nameless thread.
fn heading(t: &ThreadStack) -> String {
    match &t.name {
        Some(n) => format!("Thread {} {}", t.thread_id, Value::from(n.as_str())),
        None => format!("Thread {}", t.thread_id),
    }
}

/// Writes `snap` as text.
pub fn write_text(snap: &StackSnapshot, out: &mut dyn Write) -> io::Result<()> {
    for (i, t) in snap.threads.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{}", heading(t))?;
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
            json!({
                "thread_id": t.thread_id,
                "name": t.name,
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
             Thread 12\n  (no managed frames)\n"
        );
    }

    #[test]
    fn json_has_the_threads_with_ids_names_and_frames() {
        let v = to_json(&snap());
        assert_eq!(v["pid"], 7);
        let t = v["threads"].as_array().unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0]["thread_id"], 7);
        assert_eq!(t[0]["frames"][0], "A.Wait()");
        assert_eq!(t[0]["managed"], true);
        assert_eq!(t[1]["name"], ".NET SigHandler");
        assert_eq!(t[1]["managed"], false);
        assert_eq!(t[1]["frames"].as_array().map(Vec::len), Some(0));
        assert!(t[2]["name"].is_null());
    }
}
