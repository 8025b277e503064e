//! The analysis as text: the summary (the deadlocks first: they are the answer when there is
//! one), and one view per question — threads and their stacks (`clrstack -all`), monitors
//! (`syncblk`), exceptions (`pe`), the heap by type (`dumpheap -stat`), modules.

use std::io::{self, Write};

use crate::model::*;

/// Frames of each member's stack a deadlock shows.
const CYCLE_FRAMES: usize = 6;

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
}

fn thread_label(os_id: u32, managed_id: u32) -> String {
    format!("thread {os_id} ({os_id:#x}, managed {managed_id})")
}

/// A thread's label with its name, where it has one.
fn named_label(os_id: u32, managed_id: u32, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{} \"{n}\"", thread_label(os_id, managed_id)),
        None => thread_label(os_id, managed_id),
    }
}

/// The name of the thread `os_id` of the analysis.
fn name_of(a: &Analysis, os_id: u32) -> Option<&str> {
    a.threads
        .iter()
        .find(|t| t.os_id == os_id && os_id != 0)
        .and_then(|t| t.name.as_deref())
}

/// The dump's facts, two lines.
pub(crate) fn write_header(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    let d = &a.dump;
    writeln!(
        out,
        "Dump: {} ({}): process {} ({}), {}, {} threads, {} of memory",
        d.path,
        d.packing,
        d.pid,
        d.command,
        d.machine,
        d.os_threads,
        mb(d.memory_bytes)
    )?;
    writeln!(out, "Runtime: {}; read with {}", d.runtime, d.dac)
}

/// The deadlocks, named.
pub(crate) fn write_deadlocks(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    writeln!(out, "Deadlocks: {}", a.deadlocks.len())?;
    for (i, c) in a.deadlocks.iter().enumerate() {
        let ring: Vec<String> = c
            .members
            .iter()
            .map(|m| format!("thread {}", m.os_id))
            .collect();
        writeln!(
            out,
            "  cycle {}: {} → back to the first",
            i + 1,
            ring.join(" → ")
        )?;
        for m in &c.members {
            writeln!(
                out,
                "    {}",
                named_label(m.os_id, m.managed_id, m.name.as_deref())
            )?;
            let holds = if m.holds.is_empty() {
                "nothing".to_string()
            } else {
                m.holds.join(", ")
            };
            writeln!(
                out,
                "      waits for the monitor of {} {} ({} thread(s) wait for it); holds {}",
                m.waits_for_type, m.waits_for, m.waiters_behind, holds
            )?;
            for f in m.stack.iter().take(CYCLE_FRAMES) {
                writeln!(out, "        {f}")?;
            }
        }
    }
    Ok(())
}

/// A hang as `report hangs -p` shows it: the deadlocks, then the monitors most waited for
/// and who holds them, and how many threads are blocked entering one.
pub fn write_hangs(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_deadlocks(out, a)?;
    let blocked = a.threads.iter().filter(|t| t.entering_monitor).count();
    writeln!(
        out,
        "\nBlocked entering a monitor: {blocked} of {} managed threads",
        a.threads.len()
    )?;
    write_held(out, a, 10)?;
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// The monitors held, most waited for first (`top` of them).
fn write_held(out: &mut dyn Write, a: &Analysis, top: usize) -> io::Result<()> {
    let waiting: u32 = a.locks.iter().map(|l| l.waiters).sum();
    writeln!(
        out,
        "Monitors held: {} ({} thread(s) waiting to enter them)",
        a.locks.len(),
        waiting
    )?;
    let mut locks: Vec<&Lock> = a.locks.iter().collect();
    locks.sort_by_key(|l| std::cmp::Reverse(l.waiters));
    for l in locks.iter().take(top) {
        let owner = a
            .threads
            .iter()
            .find(|t| t.os_id == l.owner_os_id && l.owner_os_id != 0);
        let at = owner
            .and_then(|t| {
                t.frames
                    .iter()
                    .find(|f| !f.method.starts_with("System.Threading."))
            })
            .map(|f| format!(", in {}", f.method))
            .unwrap_or_default();
        writeln!(
            out,
            "  {} {} held by {}{at}; {} waiting",
            l.object_type,
            l.object,
            named_label(l.owner_os_id, l.owner_managed_id, name_of(a, l.owner_os_id)),
            l.waiters
        )?;
    }
    Ok(())
}

/// The summary: facts, deadlocks, monitors, threads, exceptions, and what to ask next.
pub fn write_summary(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    writeln!(out)?;
    write_deadlocks(out, a)?;
    writeln!(out)?;
    write_held(out, a, 5)?;
    let count = |k: &str| {
        a.threads
            .iter()
            .filter(|t| t.kinds.iter().any(|x| x == k))
            .count()
    };
    let blocked = a.threads.iter().filter(|t| t.entering_monitor).count();
    writeln!(
        out,
        "\nManaged threads: {} ({} threadpool workers, {} dead); {} blocked entering a monitor",
        a.threads.len(),
        count("threadpool worker"),
        count("dead"),
        blocked
    )?;
    writeln!(out, "Exceptions held by threads: {}", a.exceptions.len())?;
    for e in a.exceptions.iter().take(5) {
        writeln!(
            out,
            "  thread {}: {}: {}",
            e.thread_os_id,
            e.type_name,
            e.message.as_deref().unwrap_or("")
        )?;
    }
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    writeln!(
        out,
        "\nMore: clrspy dump analyze {} threads | locks | exceptions | heap | modules | gcroot",
        a.dump.path
    )
}

/// Every managed thread with its stack.
pub fn write_threads(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    writeln!(out, "Managed threads: {}", a.threads.len())?;
    for t in &a.threads {
        let mut line = format!(
            "\n{}",
            named_label(t.os_id, t.managed_id, t.name.as_deref())
        );
        if !t.kinds.is_empty() {
            line.push_str(&format!(" [{}]", t.kinds.join(", ")));
        }
        let holds: Vec<&str> = a
            .locks
            .iter()
            .filter(|l| l.owner_os_id == t.os_id && t.os_id != 0)
            .map(|l| l.object.as_str())
            .collect();
        if !holds.is_empty() {
            line.push_str(&format!(" holds {}", holds.join(", ")));
        }
        if let Some(w) = &t.waits_for {
            line.push_str(&format!(" waits for {w}"));
        }
        if let Some(e) = &t.exception {
            line.push_str(&format!(" exception {e}"));
        }
        writeln!(out, "{line}")?;
        if let Some(m) = &t.runtime_frame {
            writeln!(out, "  {:>16} {:>16} [runtime] {m}", "", "")?;
        }
        if t.frames.is_empty() {
            writeln!(out, "  (no managed frames)")?;
        }
        for f in &t.frames {
            writeln!(out, "  {:>16} {:>16} {}", f.sp, f.ip, f.method)?;
        }
    }
    Ok(())
}

/// The monitors held, as `syncblk` lists them, then the deadlocks.
pub fn write_locks(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    writeln!(out, "Monitors held: {}", a.locks.len())?;
    if !a.locks.is_empty() {
        writeln!(
            out,
            "{:>6}  {:>16}  {:>9}  {:>8}  {:>9}  {:>7}  type",
            "index", "object", "owner", "managed", "recursion", "waiters"
        )?;
    }
    for l in &a.locks {
        writeln!(
            out,
            "{:>6}  {:>16}  {:>9}  {:>8}  {:>9}  {:>7}  {}",
            l.index,
            l.object,
            l.owner_os_id,
            l.owner_managed_id,
            l.recursion,
            l.waiters,
            l.object_type
        )?;
        if !l.waiting_threads.is_empty() {
            let ids: Vec<String> = l.waiting_threads.iter().map(u32::to_string).collect();
            writeln!(
                out,
                "{:>8}waiting (from their stacks): {}",
                "",
                ids.join(", ")
            )?;
        }
    }
    writeln!(out)?;
    write_deadlocks(out, a)
}

fn write_exception(out: &mut dyn Write, e: &ExceptionInfo, indent: usize) -> io::Result<()> {
    let pad = " ".repeat(indent);
    writeln!(
        out,
        "{pad}{} {} (HResult {})",
        e.type_name, e.address, e.hresult
    )?;
    if let Some(m) = &e.message {
        writeln!(out, "{pad}  message: {m}")?;
    }
    if let Some(s) = &e.stack_trace {
        for l in s.lines() {
            writeln!(out, "{pad}  {}", l.trim_end())?;
        }
    }
    Ok(())
}

/// The exceptions threads hold, with their inner chains.
pub fn write_exceptions(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    writeln!(out, "Exceptions held by threads: {}", a.exceptions.len())?;
    for e in &a.exceptions {
        writeln!(out, "\nthread {} ({:#x}):", e.thread_os_id, e.thread_os_id)?;
        write_exception(out, e, 2)?;
        for (i, inner) in e.inner.iter().enumerate() {
            writeln!(out, "  inner exception {}:", i + 1)?;
            write_exception(out, inner, 4)?;
        }
    }
    Ok(())
}

/// The heap by type, largest first (`top` rows; 0 for all).
pub fn write_heap(out: &mut dyn Write, a: &Analysis, top: usize) -> io::Result<()> {
    write_header(out, a)?;
    let Some(h) = &a.heap else {
        return writeln!(out, "The heap was not read.");
    };
    writeln!(
        out,
        "Heap: {} objects, {} bytes ({}), {} segments or regions",
        h.objects,
        h.bytes,
        mb(h.bytes),
        h.segments
    )?;
    writeln!(
        out,
        "{:>16}  {:>10}  {:>14}  type",
        "method table", "count", "bytes"
    )?;
    let shown = if top == 0 { h.types.len() } else { top };
    for t in h.types.iter().take(shown) {
        writeln!(
            out,
            "{:>16}  {:>10}  {:>14}  {}",
            t.method_table, t.count, t.bytes, t.name
        )?;
    }
    if h.types.len() > shown {
        writeln!(
            out,
            "  ... {} more types (--top 0 lists all)",
            h.types.len() - shown
        )?;
    }
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// The images the process had mapped.
pub fn write_modules(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    let managed = a.modules.iter().filter(|m| m.managed).count();
    writeln!(out, "Modules: {} ({} managed)", a.modules.len(), managed)?;
    for m in &a.modules {
        writeln!(
            out,
            "  {:>16}  {:7}  {}",
            m.base,
            if m.managed { "managed" } else { "native" },
            m.path
        )?;
    }
    Ok(())
}

/// The paths from the roots to the objects asked for.
pub fn write_gcroots(out: &mut dyn Write, a: &Analysis) -> io::Result<()> {
    write_header(out, a)?;
    for r in &a.gcroots {
        writeln!(out, "\n{} {}", r.type_name, r.target)?;
        match &r.path {
            Some(p) => {
                writeln!(out, "  held by {}:", p.root)?;
                for n in &p.chain {
                    writeln!(out, "    -> {} {}", n.address, n.type_name)?;
                }
            }
            None if r.searched_all => {
                writeln!(out, "  no root holds it: it is garbage the next GC frees")?
            }
            None => writeln!(
                out,
                "  no path found within the search's bound (the heap is larger than it)"
            )?,
        }
    }
    for w in &a.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}
