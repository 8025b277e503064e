//! The `hangs` report's views: its text, its section of the summary (order 66: only when the
//! trace has a deadlock, starvation or a hang in progress) and its HTML table (order 84).

use std::fmt::Write as _;
use std::io::{self, Write};

use super::super::sections::{
    Fact, HtmlInput, HtmlSection, Part, SummaryInput, SummarySection,
};
use super::super::text::TextStyle;
use super::super::view::TextView;
use super::build::{build, is_wait_internal, waiter, HangsReport};
use super::groups::{BlockedGroup, NameCount, NO_NAME};
use crate::html::markup::escape;
use crate::units::fit;

/// Frames of a blocked thread's stack the text view prints.
const STACK_FRAMES: usize = 8;

/// Prints a stack from its first frame outside the waiting code.
fn write_stack(out: &mut dyn Write, stack: &[String], style: &TextStyle) -> io::Result<()> {
    let from = stack.iter().position(|f| !is_wait_internal(f)).unwrap_or(0);
    for f in stack[from..].iter().take(STACK_FRAMES) {
        writeln!(out, "        {}", fit(f, style.room(8)))?;
    }
    if stack.len() > from + STACK_FRAMES {
        writeln!(out, "        … {} more frames (--json for all)", stack.len() - from - STACK_FRAMES)?;
    }
    Ok(())
}

fn thread_label(id: u64, name: &Option<String>) -> String {
    match name {
        Some(n) => format!("thread {id} ({n})"),
        None => format!("thread {id}"),
    }
}

/// `1 thread`, `301 threads`.
fn threads(n: usize) -> String {
    if n == 1 {
        "1 thread".into()
    } else {
        format!("{n} threads")
    }
}

/// The name of a group's name count, None for the nameless.
fn named(n: &NameCount) -> Option<String> {
    Some(n.name.clone()).filter(|_| n.name != NO_NAME)
}

/// Names of a group shown, and thread ids.
const NAMES_SHOWN: usize = 3;
const IDS_SHOWN: usize = 5;

/// `  … N more <what> (--top N or --json for all)` when `total` is over `shown`.
fn write_more(out: &mut dyn Write, total: usize, shown: usize, what: &str) -> io::Result<()> {
    if total > shown {
        writeln!(out, "    … {} more {what} (--top N or --json for all)", total - shown)?;
    }
    Ok(())
}

/// A group of blocked threads: `head`, the method that waited, how many go by each name,
/// and their ids (a group of one: the thread).
fn write_group(
    out: &mut dyn Write,
    style: &TextStyle,
    g: &BlockedGroup,
    head: &str,
) -> io::Result<()> {
    writeln!(out, "    {}", fit(head, style.room(4)))?;
    writeln!(out, "        from {}", fit(&g.method, style.room(13)))?;
    if let ([id], [n]) = (g.thread_ids.as_slice(), g.names.as_slice()) {
        let label = thread_label(*id, &named(n));
        return writeln!(out, "        {}", fit(&label, style.room(8)));
    }
    let mut names: Vec<String> = g
        .names
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("{} × {}", n.threads, n.name))
        .collect();
    if g.names.len() > NAMES_SHOWN {
        names.push(format!("… {} more names", g.names.len() - NAMES_SHOWN));
    }
    writeln!(out, "        {}", fit(&names.join("; "), style.room(8)))?;
    let mut ids: Vec<String> = g
        .thread_ids
        .iter()
        .take(IDS_SHOWN)
        .map(u64::to_string)
        .collect();
    if g.thread_ids.len() > IDS_SHOWN {
        ids.push(format!("… {} more", g.thread_ids.len() - IDS_SHOWN));
    }
    writeln!(out, "        threads {}", ids.join(", "))
}

impl TextView for HangsReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if let Some(m) = &self.missing {
            return writeln!(out, "{m}");
        }
        self.write_deadlocks(out, style)?;
        self.write_in_progress(out, style)?;
        self.write_blocked(out, style)?;
        self.write_starvation(out, style)?;
        self.write_long_waits(out, style)
    }
}

impl HangsReport {
    fn write_deadlocks(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        // A hang older than the trace has no lock wait in it: never "0" then.
        let heading = if self.deadlocks.is_empty() && self.in_progress.is_some() {
            "Deadlocks: none began in the trace (a hang older than it is below: who holds what is in the process)".to_string()
        } else {
            format!("Deadlocks: {}", self.deadlocks.len())
        };
        writeln!(out, "{}", style.heading(&heading))?;
        for (i, c) in self.deadlocks.iter().enumerate() {
            let ring: Vec<String> = c
                .iter()
                .map(|m| thread_label(m.thread_id, &m.thread_name))
                .collect();
            let mut line = format!("cycle {}: {} → back to the first", i + 1, ring.join(" → "));
            if line.chars().count() > style.room(2) {
                // The members below name each thread.
                let ids: Vec<String> = c.iter().map(|m| format!("thread {}", m.thread_id)).collect();
                line = format!("cycle {}: {} → back to the first", i + 1, ids.join(" → "));
            }
            writeln!(out, "  {}", fit(&line, style.room(2)))?;
            for m in c {
                writeln!(
                    out,
                    "    {}, blocked since {:.1} ms",
                    thread_label(m.thread_id, &m.thread_name),
                    m.since_ms
                )?;
                writeln!(
                    out,
                    "      waits for lock {} (object {}), holds lock {}",
                    m.waits_for_lock, m.lock_object, m.holds_lock
                )?;
                write_stack(out, &m.stack, style)?;
            }
        }
        Ok(())
    }

    fn write_in_progress(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let Some(p) = &self.in_progress else {
            return Ok(());
        };
        writeln!(out, "\n{}", style.heading("A hang already in progress"))?;
        writeln!(
            out,
            "  {} blocked in a lock the whole trace, and no lock wait started in it:",
            threads(p.threads.len())
        )?;
        for g in p.groups.iter().take(self.shown) {
            let head = format!("{} in {}", threads(g.threads), g.blocked_in);
            write_group(out, style, g, &head)?;
        }
        write_more(out, p.groups.len(), self.shown, "groups")?;
        writeln!(out, "  a trace sees only the waits that start inside it:")?;
        for (what, c) in ["who holds what now:", "keep the evidence:"]
            .iter()
            .zip(&p.commands)
        {
            writeln!(out, "    {what:<20} {c}")?;
        }
        Ok(())
    }

    /// ` (deadlocked: cycle N)` when thread `t` is in a deadlock cycle.
    fn in_cycle(&self, t: u64) -> String {
        self.deadlocks
            .iter()
            .position(|c| c.iter().any(|m| m.thread_id == t))
            .map(|i| format!(" (deadlocked: cycle {})", i + 1))
            .unwrap_or_default()
    }

    fn write_blocked(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if self.blocked_groups.is_empty() {
            return Ok(());
        }
        let heading = format!(
            "Still blocked at the end (not in a cycle): {}",
            threads(self.blocked_total)
        );
        writeln!(out, "\n{}", style.heading(&heading))?;
        for g in self.blocked_groups.iter().take(self.shown) {
            let what = match (&g.lock, g.owner_thread_id, &g.source) {
                (Some(l), Some(o), _) => format!("lock {l} held by thread {o}{}", self.in_cycle(o)),
                (Some(l), None, _) => format!("lock {l}"),
                (None, _, _) if g.kind == "lock" => "a lock (unnamed before .NET 8)".into(),
                (None, _, Some(s)) => format!("a wait ({s})"),
                _ => "a wait".into(),
            };
            let what = format!("{}, {what}", g.blocked_in);
            let longest = g
                .longest_waiting_ms
                .map(|w| {
                    let up_to = if g.threads > 1 { "up to " } else { "" };
                    format!(", {up_to}{w:.1} ms")
                })
                .unwrap_or_default();
            let head = format!("{} in {what}{longest}", threads(g.threads));
            write_group(out, style, g, &head)?;
        }
        write_more(out, self.blocked_groups.len(), self.shown, "groups")
    }

    fn write_starvation(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let s = &self.starvation;
        let heading = format!(
            "Thread-pool starvation: {}",
            if s.detected { "yes" } else { "no" }
        );
        writeln!(out, "\n{}", style.heading(&heading))?;
        let how = if s.injections_from == "adjustments" {
            "rises of the pool's goal: the trace has no worker starts"
        } else {
            "worker starts that raised the pool's count"
        };
        writeln!(
            out,
            "  threads injected: {} ({how}){}",
            s.injections,
            s.injections_per_s
                .map(|r| format!(", {r:.1} threads/s"))
                .unwrap_or_default()
        )?;
        if s.injections > 0 {
            writeln!(
                out,
                "  workers: {} before, {} at most{}; injected from {:.1} ms to {:.1} ms",
                s.workers_before.map_or("?".into(), |w| w.to_string()),
                s.workers_max,
                s.min_workers
                    .map(|m| format!(" (pool minimum {m})"))
                    .unwrap_or_default(),
                s.first_injection_ms.unwrap_or(0.0),
                s.last_injection_ms.unwrap_or(0.0)
            )?;
        }
        writeln!(
            out,
            "  adjustments: {} Starvation, {} CooperativeBlocking; worker starts: {}",
            s.starvation_adjustments, s.blocking_adjustments, s.worker_starts
        )?;
        if s.enqueued > 0 {
            writeln!(
                out,
                "  work items: {} queued, {} taken, at most {} waiting",
                s.enqueued, s.dequeued, s.max_backlog
            )?;
        }
        if !s.sync_over_async.is_empty() {
            writeln!(out, "  pool workers blocked in sync-over-async:")?;
        }
        for w in &s.sync_over_async {
            let waits = if w.waits > 0 {
                format!("{:>6} waits", w.waits)
            } else {
                format!("{:>12}", "sampled")
            };
            writeln!(
                out,
                "  {:>10.1} ms {waits}  {}",
                w.wait_ms,
                fit(&w.method, style.room(29))
            )?;
            writeln!(out, "                 in {}", fit(&w.blocked_in, style.room(20)))?;
        }
        write_more(out, s.sync_over_async_total, s.sync_over_async.len(), "call sites")?;
        if let Some(note) = &s.sync_over_async_note {
            writeln!(out, "  note: {note}")?;
        }
        Ok(())
    }

    fn write_long_waits(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let heading = "Longest waits, by the method that waited";
        writeln!(out, "\n{}", style.heading(heading))?;
        if self.long_waits.is_empty() {
            writeln!(out, "  none")?;
        }
        for w in &self.long_waits {
            let open = if w.open > 0 {
                format!(", {} open", w.open)
            } else {
                String::new()
            };
            let what = if w.kind == "lock" { "lock waits" } else { "waits" };
            writeln!(
                out,
                "  {:>10.1} ms {:>6} {what:<10} max {:>9.1} ms{open}  {}",
                w.total_ms,
                w.count,
                w.max_ms,
                fit(&waiter(&w.stack), style.room(56 + open.len()))
            )?;
        }
        write_more(out, self.long_waits_total, self.long_waits.len(), "methods")
    }
}

/// The summary's hangs section: only when there is a deadlock, starvation or a hang in
/// progress.
pub(super) struct HangsSection {
    report: Option<HangsReport>,
    next: Vec<String>,
}

impl HangsSection {
    pub(super) fn build(i: &SummaryInput<'_>) -> HangsSection {
        let r = build(i.a, &i.o);
        let any = !r.deadlocks.is_empty() || r.starvation.detected || r.in_progress.is_some();
        let next = any
            .then(|| {
                format!(
                    "clrspy report {} hangs        (deadlocks, blocked threads, starvation)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        HangsSection {
            report: any.then_some(r),
            next,
        }
    }
}

impl SummarySection for HangsSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        match &self.report {
            Some(r) => vec![(
                "hangs",
                serde_json::json!({
                    "deadlocks": r.deadlocks.len(),
                    "starvation": r.starvation.detected,
                    "in_progress": r.in_progress.is_some(),
                }),
            )],
            None => Vec::new(),
        }
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        let Some(r) = &self.report else {
            return Ok(());
        };
        writeln!(out, "\n{}", style.heading("Hangs"))?;
        for c in &r.deadlocks {
            let ring: Vec<String> = c.iter().map(|m| thread_label(m.thread_id, &m.thread_name)).collect();
            writeln!(out, "  deadlock: {}", ring.join(" ⇄ "))?;
        }
        if r.starvation.detected {
            let s = &r.starvation;
            let span = match (s.first_injection_ms, s.last_injection_ms) {
                (Some(f), Some(l)) => format!(" in {:.1} s", (l - f) / 1e3),
                _ => String::new(),
            };
            writeln!(
                out,
                "  thread-pool starvation: {} threads injected{}, {} workers at most",
                s.injections, span, s.workers_max
            )?;
        }
        if let Some(p) = &r.in_progress {
            writeln!(
                out,
                "  {} thread(s) blocked in a lock since before the recording: {}",
                p.threads.len(),
                p.commands.first().map_or("", String::as_str)
            )?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's hangs table: deadlocked and blocked threads, and starvation; nothing
/// when the trace shows none.
pub(super) fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let r = build(i.a, &i.options(20));
    if r.deadlocks.is_empty() && r.blocked.is_empty() && !r.starvation.detected {
        return HtmlSection::default();
    }
    let mut h = String::from(
        "<h2>Hangs</h2><table><tr><th>Thread</th><th>State</th><th class=n>waiting ms</th><th>Where</th></tr>",
    );
    for (n, c) in r.deadlocks.iter().enumerate() {
        for m in c {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>deadlock {}: waits for {}, holds {}</td><td class=n>{:.1}</td><td>{}</td></tr>",
                escape(&thread_label(m.thread_id, &m.thread_name)),
                n + 1,
                m.waits_for_lock,
                m.holds_lock,
                m.waiting_ms,
                escape(&waiter(&m.stack))
            );
        }
    }
    for g in &r.blocked_groups {
        let who = match (g.thread_ids.as_slice(), g.names.as_slice()) {
            ([id], [n]) => thread_label(*id, &named(n)),
            _ => threads(g.threads),
        };
        let lock = g.lock.as_deref().map(|l| format!(", lock {l}")).unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td>{}</td><td>blocked ({}{lock})</td><td class=n>{:.1}</td><td>{} in {}</td></tr>",
            escape(&who),
            g.kind,
            g.longest_waiting_ms.unwrap_or(0.0),
            escape(&g.method),
            escape(&g.blocked_in)
        );
    }
    if r.starvation.detected {
        let _ = write!(
            h,
            "<tr><td>thread pool</td><td>starved: {} threads injected</td><td class=n></td><td>{}</td></tr>",
            r.starvation.injections,
            escape(
                &r.starvation
                    .sync_over_async
                    .first()
                    .map(|s| format!("{} in {}", s.method, s.blocked_in))
                    .unwrap_or_default()
            )
        );
    }
    h.push_str("</table>");
    HtmlSection {
        facts: vec![Fact {
            order: 84,
            label: "deadlocks",
            value: r.deadlocks.len().to_string(),
        }],
        parts: vec![Part { order: 84, html: h }],
    }
}
