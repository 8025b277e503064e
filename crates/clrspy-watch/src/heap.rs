//! A rule's heap action: a heap snapshot of the process when the rule matches it, written as
//! `<process>_<pid>_<UTC stamp>.gcdump` into the rule's folder. One action under the rule's
//! limits (admitted like a dump), logged when it starts and ends; the snapshot is
//! clrspy-live's `heap::take`. Watch's stop ends a snapshot under way.
//! With `when`, a small session of the trigger's providers (no file; the trigger consumer of
//! `record --stop-on` and of the trace action's `stop_on`) watches the process first, and the
//! snapshot is taken once, when it fires.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clr_events::trigger_spec::TriggerSpec;
use clrspy_collect::trigger::Triggers;
use clrspy_collect::{record_live, LiveFeeds, Recording, StopReason, StopSignal};
use clrspy_live::heap::{take, HeapSnapError};
use diagnostics_client::{Endpoint, SessionConfig};
use std::time::Duration;

use crate::admission::MIN_FREE;
use crate::limits::{admit_or_skip, file_for, keep_budget, say_disk_full};
use crate::procfs::age_ms;
use crate::state::{track, untrack, WatchState};
use clrspy_collect::disk::free_bytes;
use clrspy_rules::{Decision, DecisionKind, HeapAction, ProcessFacts, Rule};

/// The log's name of the action.
const ACTION: &str = "heap";

/// Carries out `rule`'s heap action on the process at `ep` (on the caller's thread): at once,
/// or when its trigger fires.
pub(crate) fn act_heap(shared: &WatchState, rule: &Rule, facts: &ProcessFacts, ep: &Endpoint) {
    let Some(heap) = &rule.heap else { return };
    let mut why = String::from("at match");
    if let Some(when) = &heap.when {
        let say = |kind: DecisionKind, detail: String| {
            let mut d = Decision::for_process(kind, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some(ACTION);
            d.detail = Some(detail);
            shared.emit(d);
        };
        say(
            DecisionKind::Watching,
            format!("for a heap snapshot when {when} fires"),
        );
        match wait_for_trigger(shared, when, ep) {
            Ok(Ok(fired)) => why = fired,
            Ok(Err(ended)) => {
                return say(
                    DecisionKind::WatchingEnded,
                    format!("{when} did not fire: {ended}"),
                );
            }
            Err(e) => {
                shared.failures.fetch_add(1, Ordering::SeqCst);
                return say(
                    DecisionKind::ActionFailed,
                    format!("watching for {when}: {e}"),
                );
            }
        }
    }
    let Some(dir) = admit_or_skip(shared, rule, ACTION, facts) else {
        return;
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let out = file_for(&dir, facts, "gcdump");
    let mut d = Decision::for_process(DecisionKind::ActionStarted, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some(ACTION);
    d.file = Some(out.clone());
    d.age_ms = age_ms(facts.pid);
    d.detail = Some(format!(
        "{why}; a full, blocking GC in the process while its heap is walked"
    ));
    shared.emit(d);
    let stop = Arc::new(StopSignal::new());
    track(shared, &stop, &out);
    let result = snapshot(ep, &out, heap, &stop);
    untrack(shared, &stop, &out);
    match result {
        Ok((objects, bytes)) => {
            let mut d = Decision::for_process(DecisionKind::ActionDone, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some(ACTION);
            d.file = Some(out);
            d.bytes = Some(bytes);
            d.detail = Some(format!("{objects} objects"));
            shared.emit(d);
            keep_budget(shared, rule, &dir, 0);
        }
        Err(why) => {
            let _ = std::fs::remove_file(&out);
            shared.failures.fetch_add(1, Ordering::SeqCst);
            let mut d = Decision::for_process(DecisionKind::ActionFailed, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some(ACTION);
            d.detail = Some(why);
            shared.emit(d);
            if free_bytes(&shared.out).is_some_and(|f| f < MIN_FREE) {
                shared.disk_full.store(true, Ordering::SeqCst);
                say_disk_full(shared, None);
            }
        }
    }
}

/// Watches the process at `ep` until `when` fires: what fired, in words, or why it ended
/// first (the process ended, watch stopped).
fn wait_for_trigger(
    shared: &WatchState,
    when: &TriggerSpec,
    ep: &Endpoint,
) -> Result<Result<String, String>, String> {
    let triggers = Triggers {
        specs: vec![when.clone()],
        after: Duration::ZERO,
    };
    let mut config = SessionConfig {
        circular_buffer_mb: 16,
        rundown_keyword: 0,
        stackwalk: false,
        providers: Vec::new(),
    };
    triggers.apply(&mut config);
    let stop = Arc::new(StopSignal::new());
    if let Ok(mut v) = shared.traces.lock() {
        v.push(stop.clone());
    }
    let rec = Recording {
        config: &config,
        out: None,
        duration: None,
        stop: &stop,
        thread_cpu: None,
        ring: None,
    };
    let live = LiveFeeds {
        consumers: triggers.consumer().into_iter().collect(),
        lossless: true,
        ..LiveFeeds::default()
    };
    let result = record_live(ep, &rec, live, &mut |_| ());
    if let Ok(mut v) = shared.traces.lock() {
        v.retain(|s| !Arc::ptr_eq(s, &stop));
    }
    let summary = result.map_err(|e| e.to_string())?;
    Ok(match summary.reason {
        StopReason::Triggered => Ok(summary.trigger.unwrap_or_else(|| format!("{when} fired"))),
        StopReason::Requested => Err("watch stopped".into()),
        StopReason::TargetEnded => Err("the process ended".into()),
        _ => Err("the session ended".into()),
    })
}

/// Takes the heap snapshot of `ep` into `out` (clrspy-live's `heap::take`): the snapshot's
/// objects and the file's size, or why not.
fn snapshot(
    ep: &Endpoint,
    out: &Path,
    heap: &HeapAction,
    stop: &StopSignal,
) -> Result<(u64, u64), String> {
    match take(ep, out, heap.timeout(), stop, &mut |_| ()) {
        Ok(t) => Ok((t.dump.graph.object_count(), t.file_bytes)),
        Err(HeapSnapError::Record(e)) => Err(format!("recording the heap dump: {e}")),
        Err(HeapSnapError::Open(e)) => Err(format!("reading the heap dump: {e}")),
        Err(HeapSnapError::Graph { source, .. }) => Err(format!("no heap snapshot: {source}")),
        Err(e) => Err(e.to_string()),
    }
}
