//! A rule's counters action: the process's counters and meters (clrspy-live's counters
//! session, as `clrspy counters collect` reads them) written to
//! `<process>_<pid>_<UTC stamp>.counters.<jsonl|csv|prom>` in the rule's folder from the match
//! until the process ends, watch stops, or the file alone outgrows the rule's disk budget
//! (older files of the rule make room first). One action under the rule's limits, logged
//! when it starts and when it ends, with why it ended.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_collect::StopSignal;
use clrspy_export::counters::{CounterFile, CounterFormat};
use clrspy_live::counters::{CountersOptions, CountersSession};
use clrspy_rules::{
    folder_bytes, CountersAction, CountersFormat, Decision, DecisionKind, ProcessFacts, Rule,
};
use diagnostics_client::Endpoint;

use crate::limits::{admit_or_skip, file_for, keep_budget};
use crate::state::{track, untrack, WatchState};

/// The log's name of the action.
const ACTION: &str = "counters";

/// Why the collection ended.
enum Ended {
    Process,
    Watch,
    Budget,
}

/// Carries out `rule`'s counters action on the process at `ep` (on the caller's thread, for
/// as long as the process runs).
pub(crate) fn act_counters(shared: &WatchState, rule: &Rule, facts: &ProcessFacts, ep: &Endpoint) {
    let Some(action) = &rule.counters else { return };
    let Some(dir) = admit_or_skip(shared, rule, ACTION, facts) else {
        return;
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let out = file_for(
        &dir,
        facts,
        &format!("counters.{}", action.format.extension()),
    );
    let say = |kind: DecisionKind, detail: String, bytes: Option<u64>| {
        let mut d = Decision::for_process(kind, facts);
        d.rule = Some(rule.name.clone());
        d.action = Some(ACTION);
        d.file = Some(out.clone());
        d.bytes = bytes;
        d.detail = Some(detail);
        shared.emit(d);
    };
    let opts = match options(action) {
        Ok(o) => o,
        Err(e) => {
            shared.failures.fetch_add(1, Ordering::SeqCst);
            return say(DecisionKind::ActionFailed, e, None);
        }
    };
    say(
        DecisionKind::ActionStarted,
        format!(
            "{} every {} s, until the process ends",
            action.counters.as_ref().map_or("System.Runtime", |c| &c.0),
            opts.refresh.as_secs_f64()
        ),
        None,
    );
    let stop = Arc::new(StopSignal::new());
    track(shared, &stop, &out);
    let result = collect(shared, rule, &dir, &out, action.format, &opts, ep, &stop);
    untrack(shared, &stop, &out);
    let bytes = std::fs::metadata(&out).map(|m| m.len()).ok();
    match result {
        Ok((intervals, ended)) => {
            let why = match ended {
                Ended::Process => "the process ended",
                Ended::Watch => "watch stopped",
                Ended::Budget => "stopped: the file alone outgrew the rule's disk budget",
            };
            say(
                DecisionKind::ActionDone,
                format!("{intervals} intervals; {why}"),
                bytes,
            );
            keep_budget(shared, rule, &dir, 0);
        }
        Err(why) => {
            shared.failures.fetch_add(1, Ordering::SeqCst);
            say(DecisionKind::ActionFailed, why, bytes);
        }
    }
}

/// The session's options from the rule's action.
fn options(action: &CountersAction) -> Result<CountersOptions, String> {
    let mut opts = CountersOptions::default();
    if let Some(text) = &action.counters {
        // Checked when the rules were read; a failure here is still said, never a panic.
        opts.spec = text
            .0
            .parse()
            .map_err(|e| format!("counters \"{}\": {e}", text.0))?;
    }
    if let Some(d) = action.refresh_interval {
        opts.refresh = d.0;
    }
    Ok(opts)
}

/// Runs the session into `out` until it ends: the intervals written and why it ended.
#[allow(clippy::too_many_arguments)]
fn collect(
    shared: &WatchState,
    rule: &Rule,
    dir: &Path,
    out: &Path,
    format: CountersFormat,
    opts: &CountersOptions,
    ep: &Endpoint,
    stop: &StopSignal,
) -> Result<(u64, Ended), String> {
    let format = match format {
        CountersFormat::Jsonl => CounterFormat::JsonLines,
        CountersFormat::Csv => CounterFormat::Csv,
        CountersFormat::Prometheus => CounterFormat::Prometheus,
    };
    let mut file =
        CounterFile::create(out, format).map_err(|e| format!("{}: {e}", out.display()))?;
    let session = CountersSession::attach(ep.clone(), opts)
        .map_err(|e| format!("starting the counters session: {e}"))?;
    let budget = rule.limits.disk_bytes();
    let mut next_check = Instant::now();
    let mut ended = Ended::Process;
    let mut intervals = 0u64;
    loop {
        if stop.count() > 0 || shared.stopping.load(Ordering::SeqCst) {
            ended = Ended::Watch;
            session.stop();
        }
        match session.next(Duration::from_millis(500)) {
            Ok(u) => {
                let rows = clrspy_live::counters::rows(&u);
                if !rows.is_empty() {
                    intervals += 1;
                    if let Err(e) = file.write_rows(rows) {
                        session.stop();
                        let _ = session.join();
                        return Err(format!("writing {}: {e}", out.display()));
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        if Instant::now() >= next_check && !matches!(ended, Ended::Budget) {
            next_check = Instant::now() + Duration::from_secs(1);
            if folder_bytes(dir) > budget {
                keep_budget(shared, rule, dir, 0);
                if folder_bytes(dir) > budget {
                    ended = Ended::Budget;
                    session.stop();
                }
            }
        }
    }
    match session.join() {
        Ok(_) => Ok((intervals, ended)),
        // A process that ended took its session with it: what was written stays.
        Err(_) if intervals > 0 => Ok((intervals, ended)),
        Err(e) => Err(format!("the counters session: {e}")),
    }
}
