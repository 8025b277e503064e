//! A rule's dump action: at once when the process is seen, or on its first-chance exceptions
//! of the types named — then a session watches the exceptions (kept as a small trace beside
//! the dumps) and clrspy-collect's dump worker writes each dump, compressed as it streams when
//! asked. Every dump is one action under the rule's limits, admitted by the rule's gate
//! before it is queued (see `gate`); files are renamed to
//! `<process>_<pid>_<UTC stamp>.dmp[.gz|.zst]`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clrspy_collect::{
    DumpNotice, DumpPlan, DumpSpec, DumpsStarted, ErrorKind, ExceptionDumps, ExceptionTrigger,
    LiveFeeds, Progress, Resolved, RunObserver, RunOptions, Started, StopSignal,
};
use diagnostics_client::{Endpoint, SessionConfig};

use crate::admission::MIN_FREE;
use crate::gate::RuleGate;
use crate::limits::{
    admit_or_skip, file_for, keep_budget, say_disk_full, say_dump, BudgetWatch, DUMP_TIMEOUT,
};
use crate::procfs::age_ms;
use crate::state::{track, untrack, WatchState};
use crate::trace::stop_words;
use clrspy_collect::disk::free_bytes;
use clrspy_rules::Compression;
use clrspy_rules::ProcessFacts;
use clrspy_rules::RuleSet;
use clrspy_rules::{Decision, DecisionKind};
use clrspy_rules::{DumpAction, Rule};

/// The dump a rule asks for; the file never outgrows the rule's disk budget.
pub(crate) fn spec(rule: &Rule, dump: &DumpAction) -> DumpSpec {
    DumpSpec {
        kind: dump
            .kind
            .map_or(diagnostics_client::DumpType::Normal, |k| k.0),
        compress: match dump.compress {
            Compression::None => clrspy_collect::Compression::None,
            Compression::Gzip => clrspy_collect::Compression::Gzip,
            Compression::Zstd => clrspy_collect::Compression::Zstd,
        },
        crash_report: false,
        timeout: DUMP_TIMEOUT,
        max_file_bytes: Some(rule.limits.disk_bytes()),
    }
}

/// Carries out rule `i`'s dump action on the process at `ep`: at once, or (on exceptions) on
/// a thread of its own for as long as the process lives.
pub(crate) fn act_dump(
    shared: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    ep: &Endpoint,
) {
    let rule = &rules.rules[i];
    let Some(dump) = &rule.dump else { return };
    if dump.on_crash {
        crate::crash::watch_crash(shared, rules, i, facts, Some(ep), Some(ep));
    }
    if dump.on_exception.is_empty() {
        if dump.on_crash {
            return;
        }
        return at_once(shared, rule, dump, facts, ep);
    }
    if shared.held_by_hook(facts.pid, &rule.name) {
        return;
    }
    let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
    shared.spawn(format!("clrspy-dumps-{}", facts.pid), move |s| {
        on_exceptions(s, &rules, i, &facts, ep)
    });
}

/// Says a dump failed (and that the disk is full, when it is).
fn failed(shared: &WatchState, rule: &Rule, facts: &ProcessFacts, why: String, full: bool) {
    shared.failures.fetch_add(1, Ordering::SeqCst);
    say_dump(shared, rule, facts, DecisionKind::ActionFailed, why);
    if full || free_bytes(&shared.out).is_some_and(|f| f < MIN_FREE) {
        shared.disk_full.store(true, Ordering::SeqCst);
        say_disk_full(shared, None);
    }
}

/// A dump now.
fn at_once(
    shared: &WatchState,
    rule: &Rule,
    dump: &DumpAction,
    facts: &ProcessFacts,
    ep: &Endpoint,
) {
    let Some(dir) = admit_or_skip(shared, rule, "dump", facts) else {
        return;
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let spec = spec(rule, dump);
    let out = file_for(&dir, facts, spec.compress.extension());
    let mut d = Decision::for_process(DecisionKind::ActionStarted, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.file = Some(out.clone());
    d.age_ms = age_ms(facts.pid);
    shared.emit(d);
    match clrspy_collect::write_dump_file(ep, facts.pid, &out, &spec) {
        Ok(report) => {
            let mut d = Decision::for_process(DecisionKind::ActionDone, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("dump");
            d.file = Some(report.path.clone());
            d.bytes = Some(report.file_bytes);
            d.detail = Some(format!("{} MB raw", report.raw_bytes >> 20));
            shared.emit(d);
            if dump.analyze {
                crate::analysis::analyze(shared, rule, facts, &report.path);
            }
            keep_budget(shared, rule, &dir, 0);
        }
        Err(e) => failed(
            shared,
            rule,
            facts,
            e.to_string(),
            e.kind() == ErrorKind::DiskFull,
        ),
    }
}

/// Dumps left under the rule's `max_actions` (all of them without one).
pub(crate) fn dumps_left(shared: &WatchState, rule: &Rule) -> u32 {
    let taken = shared
        .states
        .lock()
        .map(|s| s.get(&rule.name).map_or(0, |r| r.actions))
        .unwrap_or(0);
    rule.limits
        .max_actions
        .map_or(u32::MAX, |m| m.saturating_sub(taken))
}

/// Stops the exceptions session once every dump allowed was taken and written.
struct UntilDone<'a> {
    budget: BudgetWatch<'a>,
    dumps: &'a ExceptionDumps,
    writing: Arc<Mutex<u32>>,
    /// The session was stopped because the rule may dump no more.
    used_up: bool,
}

impl RunObserver for UntilDone<'_> {
    fn started(&mut self, what: Started<'_>) {
        self.budget.started(what);
    }

    fn progress(&mut self, p: &Progress) {
        self.budget.progress(p);
        let idle = self.writing.lock().map(|n| *n == 0).unwrap_or(true);
        if self.dumps.exhausted() && idle && self.budget.stop.count() == 0 {
            self.used_up = true;
            self.budget.stop.request();
        }
    }
}

/// Watches the process's first-chance exceptions and dumps on those named, until the process
/// ends, watch stops, or the rule may dump no more.
fn on_exceptions(
    shared: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    ep: Endpoint,
) {
    let rule = &rules.rules[i];
    if rule.dump.is_none() {
        return;
    }
    let max = dumps_left(shared, rule);
    if max == 0 {
        return skip_max(shared, rule, facts);
    }
    if shared.stopping.load(Ordering::SeqCst) {
        return;
    }
    let dir = shared.out.join(&rule.name);
    if let Err(e) = clrspy_collect::private::create_private_dir(&dir) {
        return failed(
            shared,
            rule,
            facts,
            format!("cannot create {}: {e}", dir.display()),
            false,
        );
    }
    // The rule's gate holds the limits, shared with its other processes.
    let Some(set) = RuleDumps::new(shared, rules, i, facts, &dir, u32::MAX) else {
        return;
    };
    let RuleDumps {
        mut dumps,
        gate,
        writing,
        on_dump,
        patterns,
    } = set;
    let trigger = match dumps.start(Some(facts.pid), on_dump) {
        Ok(DumpsStarted::Trigger(t)) => t,
        Ok(DumpsStarted::Hold(_)) => return,
        Err(e) => return failed(shared, rule, facts, e.to_string(), false),
    };
    let config = exceptions_session(&dumps);
    let out = file_for(&dir, facts, "exceptions.nettrace");
    let stop = Arc::new(StopSignal::new());
    track(shared, &stop, &out);
    say_watching(shared, rule, facts, &out, &patterns, max);
    let opts = RunOptions {
        config: &config,
        output: Some(out.clone()),
        duration: None,
        thread_cpu: None,
        stop: &stop,
        extra_runtimes: Default::default(),
        child_stdout: Default::default(),
        ring: None,
        child_env: Vec::new(),
    };
    let mut observer = UntilDone {
        budget: BudgetWatch {
            shared,
            rule,
            dir: &dir,
            stop: &stop,
            next: Instant::now(),
            over: false,
        },
        dumps: &dumps,
        writing,
        used_up: false,
    };
    let result = watch_session(ep, facts, &opts, trigger, &mut observer);
    let (used_up, over_budget) = (observer.used_up, observer.budget.over);
    drop(observer);
    // The dump being written is finished before the session's end is told.
    let _ = dumps.finish();
    let skipped = gate.finish();
    untrack(shared, &stop, &out);
    let why = if used_up {
        Some(format!(
            "max_actions ({}) reached: the rule takes no more dumps",
            rule.limits.max_actions.unwrap_or(0)
        ))
    } else if over_budget {
        Some("stopped: the rule's disk budget is reached".to_string())
    } else {
        None
    };
    say_watched(shared, rule, facts, out, result, skipped, why);
}

/// The session watching a process's exceptions.
/// Rule `i`'s exception dumps, set up once for the usual watch and the hold hook: the plan
/// (files in `dir`, at most `max`), the rule's gate over them, and the notices that log each.
pub(crate) struct RuleDumps {
    /// The exception dumps, gated by the rule.
    pub(crate) dumps: ExceptionDumps,
    /// The rule's gate (its `finish` tells what it refused).
    pub(crate) gate: Arc<RuleGate>,
    /// How many dumps are being written now.
    pub(crate) writing: Arc<Mutex<u32>>,
    /// What the dump worker says, logged.
    pub(crate) on_dump: clrspy_collect::OnDump,
    /// The exception type patterns, as the rule names them.
    pub(crate) patterns: Vec<String>,
}

impl RuleDumps {
    /// None when the rule has no dump action or names no exception.
    pub(crate) fn new(
        shared: &Arc<WatchState>,
        rules: &Arc<RuleSet>,
        i: usize,
        facts: &ProcessFacts,
        dir: &Path,
        max: u32,
    ) -> Option<RuleDumps> {
        let dump = rules.rules[i].dump.as_ref()?;
        let spec = spec(&rules.rules[i], dump);
        let plan = DumpPlan {
            dir: dir.to_path_buf(),
            stem: facts.file_name(),
            spec,
            max,
        };
        let patterns: Vec<String> = dump
            .on_exception
            .iter()
            .map(|g| g.as_str().to_string())
            .collect();
        let dumps = ExceptionDumps::new(patterns.clone(), plan)?;
        let gate = Arc::new(RuleGate::new(shared, rules, i, facts));
        let writing = Arc::new(Mutex::new(0u32));
        let on_dump = notices(shared, rules, i, facts, dir, spec, writing.clone());
        Some(RuleDumps {
            dumps: dumps.gated(gate.clone()),
            gate,
            writing,
            on_dump,
            patterns,
        })
    }
}

fn exceptions_session(dumps: &ExceptionDumps) -> SessionConfig {
    dumps.session_config(&SessionConfig {
        circular_buffer_mb: 64,
        rundown_keyword: diagnostics_client::DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: true,
        providers: Vec::new(),
    })
}

/// Runs the exceptions session on the process at `ep` with `trigger` asking for the dumps.
fn watch_session(
    endpoint: Endpoint,
    facts: &ProcessFacts,
    opts: &RunOptions<'_>,
    trigger: ExceptionTrigger,
    observer: &mut UntilDone<'_>,
) -> clrspy_collect::Result<clrspy_collect::RunOutcome> {
    let label = format!("{} (pid {})", facts.file_name(), facts.pid);
    let live = LiveFeeds {
        consumers: vec![Box::new(trigger)],
        ..LiveFeeds::default()
    };
    clrspy_collect::run(Resolved::Attach { endpoint, label }, opts, live, observer)
}

/// Says a process's exceptions are watched.
fn say_watching(
    shared: &WatchState,
    rule: &Rule,
    facts: &ProcessFacts,
    out: &Path,
    patterns: &[String],
    max: u32,
) {
    let mut d = Decision::for_process(DecisionKind::Watching, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.file = Some(out.to_path_buf());
    let most = if max == u32::MAX {
        "any".to_string()
    } else {
        max.to_string()
    };
    d.detail = Some(format!(
        "first-chance exceptions {}; at most {most} dump(s)",
        patterns.join(", ")
    ));
    shared.emit(d);
}

/// Says the watch of a process's exceptions ended, and how.
fn say_watched(
    shared: &WatchState,
    rule: &Rule,
    facts: &ProcessFacts,
    out: PathBuf,
    result: clrspy_collect::Result<clrspy_collect::RunOutcome>,
    skipped: u32,
    why: Option<String>,
) {
    let mut d = Decision::for_process(DecisionKind::WatchingEnded, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.file = Some(out);
    let how = match result {
        Ok(o) => {
            d.bytes = Some(o.summary.bytes);
            // watch's own stop request, when a limit made it, says which.
            match why {
                Some(why) if o.summary.reason == clrspy_collect::StopReason::Requested => why,
                _ => stop_words(&o.summary),
            }
        }
        Err(e) => e.to_string(),
    };
    d.detail = Some(match skipped {
        0 => how,
        n => format!("{how}; {n} matching exception(s) skipped by the rule's limits"),
    });
    shared.emit(d);
}

/// Says the rule may dump no more.
fn skip_max(shared: &WatchState, rule: &Rule, facts: &ProcessFacts) {
    let mut d = Decision::for_process(DecisionKind::Skipped, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.detail = Some(format!(
        "max_actions ({}) reached",
        rule.limits.max_actions.unwrap_or(0)
    ));
    shared.emit(d);
}

/// What the dump worker says, logged: each dump is counted as one action, and its file renamed
/// to the watch's pattern once written.
pub(crate) fn notices(
    shared: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    dir: &Path,
    spec: DumpSpec,
    writing: Arc<Mutex<u32>>,
) -> clrspy_collect::OnDump {
    // The worker runs on a thread of its own: it gets its own handles on what it logs.
    let (shared, rules) = (shared.clone(), rules.clone());
    let (facts, dir) = (facts.clone(), dir.to_path_buf());
    // The worker's file → the name the log gave it when it started (renamed to it when done).
    let mut names: HashMap<PathBuf, PathBuf> = HashMap::new();
    Box::new(move |n: &DumpNotice<'_>| {
        let rule = &rules.rules[i];
        let rule_name = &rule.name;
        match n {
            DumpNotice::Started {
                request,
                path,
                delay,
                ..
            } => {
                if let Ok(mut w) = writing.lock() {
                    *w += 1;
                }
                // The log names the file the dump will have, not the worker's own name.
                let name = final_name(&dir, &facts, spec, names.values());
                names.insert(path.to_path_buf(), name.clone());
                let mut d = Decision::for_process(DecisionKind::ActionStarted, &facts);
                d.rule = Some(rule_name.clone());
                d.action = Some("dump");
                d.file = Some(name);
                d.age_ms = age_ms(facts.pid);
                d.detail = Some(format!(
                    "{}{}",
                    request.reason,
                    delay
                        .map(|d| format!(", {} ms after the throw", d.as_millis()))
                        .unwrap_or_default(),
                ));
                shared.actions.fetch_add(1, Ordering::SeqCst);
                shared.emit(d);
            }
            DumpNotice::Done(o) => {
                if let Ok(mut w) = writing.lock() {
                    *w = w.saturating_sub(1);
                }
                match &o.result {
                    Ok(report) => {
                        let to = names.remove(&report.path);
                        let named = renamed(&report.path, to, &dir, &facts, spec);
                        if let Some(dac) = &report.dac {
                            let _ = std::fs::rename(dac, clrspy_collect::dac_sidecar(&named));
                        }
                        let mut d = Decision::for_process(DecisionKind::ActionDone, &facts);
                        d.rule = Some(rule_name.clone());
                        d.action = Some("dump");
                        d.file = Some(named.clone());
                        d.bytes = Some(report.file_bytes);
                        d.detail = Some(o.request.reason.clone());
                        shared.emit(d);
                        if rule.dump.as_ref().is_some_and(|a| a.analyze) {
                            crate::analysis::analyze(&shared, rule, &facts, &named);
                        }
                        keep_budget(&shared, rule, &dir, 0);
                    }
                    Err(e) => {
                        names.retain(|_, to| to.exists());
                        let (why, full) = (e.to_string(), e.kind() == ErrorKind::DiskFull);
                        failed(&shared, rule, &facts, why, full);
                    }
                }
            }
        }
    })
}

/// The name a dump gets: `<process>_<pid>_<UTC stamp>.<ext>`, with `.2`, `.3` ... before the
/// extension when two dumps fall within a second (on disk or still being written).
fn final_name<'a>(
    dir: &Path,
    facts: &ProcessFacts,
    spec: DumpSpec,
    taken: impl Iterator<Item = &'a PathBuf> + Clone,
) -> PathBuf {
    let ext = spec.compress.extension();
    let mut to = file_for(dir, facts, ext);
    let mut k = 2;
    while (to.exists() || taken.clone().any(|t| *t == to)) && k < 100 {
        to = file_for(dir, facts, &format!("{k}.{ext}"));
        k += 1;
    }
    to
}

/// Renames a dump the worker wrote (`<stem>_<pid>_<n>.<ext>`) to the name the log gave it
/// when it started (else a new one, see [`final_name`]); the old name when the rename fails.
fn renamed(
    path: &Path,
    to: Option<PathBuf>,
    dir: &Path,
    facts: &ProcessFacts,
    spec: DumpSpec,
) -> PathBuf {
    let to = to
        .filter(|t| !t.exists())
        .unwrap_or_else(|| final_name(dir, facts, spec, std::iter::empty()));
    match std::fs::rename(path, &to) {
        Ok(()) => to,
        Err(_) => path.to_path_buf(),
    }
}
