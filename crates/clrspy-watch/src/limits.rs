//! A rule's limits applied to the watcher's actions: asks [admission](crate::admission) with
//! the output disk's free bytes read now (saying when the disk fills or has room again), logs
//! a refusal as `skipped`, makes the rule's folder and keeps it within its disk budget, also
//! while a trace grows; names the files written there; and logs a dump action's outcome.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clrspy_collect::{Progress, RunObserver, Started, StopSignal};

use crate::admission::{admission, admit, disk_full, Admission, AdmissionInput};
use crate::state::WatchState;
use clrspy_collect::disk::free_bytes;
use clrspy_rules::ProcessFacts;
use clrspy_rules::{enforce_budget, folder_bytes, RuleState};
use clrspy_rules::{Decision, DecisionKind};
use clrspy_rules::{Limits, Rule};

/// How long the runtime may take to write a dump.
pub(crate) const DUMP_TIMEOUT: Duration = Duration::from_secs(120);

/// Asks the rule's limits and the disk whether an action may go; logs a refusal. The rule's
/// folder on a yes.
pub(crate) fn admit_or_skip(
    state: &WatchState,
    rule: &Rule,
    action: &'static str,
    facts: &ProcessFacts,
) -> Option<PathBuf> {
    match may_act(state, rule) {
        Ok(dir) => Some(dir),
        Err(why) => {
            let mut d = Decision::for_process(DecisionKind::Skipped, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some(action);
            d.detail = Some(why);
            state.emit(d);
            None
        }
    }
}

/// Whether rule `rule` may act now: watch is not stopping, the output disk has room, the
/// rule's limits (max_actions, cooldown; a yes is counted) and its folder (made, kept within
/// its budget). The folder, or why not.
pub(crate) fn may_act(state: &WatchState, rule: &Rule) -> Result<PathBuf, String> {
    may_act_paced(state, rule, true)
}

/// [`may_act`], the rule's cooldown asked only when `paced`.
pub(crate) fn may_act_paced(
    state: &WatchState,
    rule: &Rule,
    paced: bool,
) -> Result<PathBuf, String> {
    let stopping = state.stopping.load(Ordering::SeqCst);
    let input = AdmissionInput {
        now: Instant::now(),
        free_bytes: if stopping { None } else { observe_disk(state) },
        stopping,
        paced,
    };
    let (verdict, actions) = state
        .states
        .lock()
        .map(|mut s| {
            let st = s.entry(rule.name.clone()).or_default();
            (admit(st, &rule.limits, &input), st.actions)
        })
        .unwrap_or_else(|_| {
            let none = RuleState::default();
            (admission(&none, &Limits::default(), &input), 0)
        });
    state
        .view
        .admission(&rule.name, &verdict, actions, input.now);
    if verdict != Admission::Go {
        return Err(verdict.why(&state.out));
    }
    let dir = state.out.join(&rule.name);
    if let Err(e) = clrspy_collect::private::create_private_dir(&dir) {
        return Err(format!("cannot create {}: {e}", dir.display()));
    }
    keep_budget(state, rule, &dir, 0);
    Ok(dir)
}

/// The output disk's free bytes; says when it fills or has room again.
fn observe_disk(state: &WatchState) -> Option<u64> {
    let free = free_bytes(&state.out);
    let full = disk_full(free);
    let was = state.disk_full.swap(full, Ordering::SeqCst);
    if was && !full {
        let mut d = Decision::new(DecisionKind::DiskOk);
        d.detail = Some(format!("{} has room again", state.out.display()));
        state.emit(d);
    } else if full && !was {
        say_disk_full(state, None);
    }
    free
}

/// Says the output disk is full (once per time it fills).
pub(crate) fn say_disk_full(state: &WatchState, file: Option<&Path>) {
    let mut d = Decision::new(DecisionKind::DiskFull);
    d.file = file.map(Path::to_path_buf);
    d.detail = Some(format!(
        "the output disk of {} is full: writing stops, new actions are skipped until there is room; watching goes on",
        state.out.display()
    ));
    state.emit(d);
}

/// Keeps the rule's folder within its budget with `reserve` bytes to come; logs removals.
pub(crate) fn keep_budget(state: &WatchState, rule: &Rule, dir: &Path, reserve: u64) {
    let open = state
        .open_files
        .lock()
        .map(|o| o.clone())
        .unwrap_or_default();
    match enforce_budget(dir, rule.limits.disk_bytes(), reserve, &open) {
        Ok(removed) => {
            for (path, bytes) in removed {
                let mut d = Decision::new(DecisionKind::Removed);
                d.rule = Some(rule.name.clone());
                d.file = Some(path);
                d.bytes = Some(bytes);
                d.detail = Some(format!(
                    "disk budget of {} MB: oldest first",
                    rule.limits.disk_bytes() >> 20
                ));
                state.emit(d);
            }
        }
        Err(e) => {
            let mut d = Decision::new(DecisionKind::Error);
            d.rule = Some(rule.name.clone());
            d.detail = Some(format!("keeping the disk budget of {}: {e}", dir.display()));
            state.emit(d);
        }
    }
}

/// `dir/<process>_<pid>_<stamp>.<ext>`.
pub(crate) fn file_for(dir: &Path, facts: &ProcessFacts, ext: &str) -> PathBuf {
    dir.join(format!(
        "{}_{}_{}.{ext}",
        facts.file_name(),
        facts.pid,
        clrspy_values::time::file_stamp(std::time::SystemTime::now())
    ))
}

/// Watches a trace's size against its rule's budget: older files make room first; a trace
/// that alone outgrows the budget is stopped.
pub(crate) struct BudgetWatch<'a> {
    pub(crate) shared: &'a WatchState,
    pub(crate) rule: &'a Rule,
    pub(crate) dir: &'a Path,
    pub(crate) stop: &'a StopSignal,
    pub(crate) next: Instant,
    pub(crate) over: bool,
}

impl RunObserver for BudgetWatch<'_> {
    fn started(&mut self, _what: Started<'_>) {}

    fn progress(&mut self, p: &Progress) {
        if Instant::now() < self.next || self.over {
            return;
        }
        self.next = Instant::now() + Duration::from_secs(1);
        let budget = self.rule.limits.disk_bytes();
        if folder_bytes(self.dir) <= budget {
            return;
        }
        keep_budget(self.shared, self.rule, self.dir, 0);
        if folder_bytes(self.dir) > budget && p.bytes > 0 {
            self.over = true;
            self.stop.request();
        }
    }
}

/// Logs `event` for rule `rule`'s dump action on the process `facts`, with `why`.
pub(crate) fn say_dump(
    shared: &WatchState,
    rule: &Rule,
    facts: &ProcessFacts,
    event: DecisionKind,
    why: String,
) {
    let mut d = Decision::for_process(event, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.detail = Some(why);
    shared.emit(d);
}
