//! A read-only public view of a running watch, for callers that show it (the agent's
//! `/rules`): per rule its actions, its state (`running`, `acting`, `throttled`,
//! `finished`), its counts, why it has not acted when it has not, and its recent decisions in
//! a bounded ring. Fed by the watcher's decisions as they are logged, by the admissions its
//! limits decide and by the rules a process did not match (those go to the view only, never
//! to the decisions log, which stays as `clrspy watch` writes it).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::admission::Admission;
use clrspy_rules::{Decision, DecisionKind, ProcessFacts, Rule, RuleSet};

/// How many decisions each rule keeps for its log.
pub const RULE_LOG_LEN: usize = 200;

/// What a rule is doing now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleStatus {
    /// Armed: watching for processes its match holds for.
    Running,
    /// An action of it is under way (a trace recording, a dump being written, counters
    /// collected while the process runs).
    Acting,
    /// Its limits or the disk refuse actions for now.
    Throttled,
    /// Its `max_actions` are spent: it will not act again while the watch runs.
    Finished,
}

impl RuleStatus {
    /// The name the view's JSON uses.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleStatus::Running => "running",
            RuleStatus::Acting => "acting",
            RuleStatus::Throttled => "throttled",
            RuleStatus::Finished => "finished",
        }
    }
}

/// One rule as the view sees it at a moment.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleSnapshot {
    /// The rule's name.
    pub name: String,
    /// Its action kinds: `trace`, `dump`, `heap`, `counters`, `bundle`.
    pub actions: Vec<&'static str>,
    /// What it is doing.
    pub status: RuleStatus,
    /// Why, in words (for a rule that has not acted: what it is waiting for).
    pub reason: String,
    /// How long its limits refuse actions still, when throttled by its cooldown.
    pub throttled_for: Option<Duration>,
    /// Processes it was applied to (matched or not).
    pub looked_at: u64,
    /// Processes its match held for.
    pub matched: u64,
    /// Actions its limits let go.
    pub admitted: u32,
    /// Its `max_actions`, when it has one.
    pub max_actions: Option<u32>,
    /// Actions started.
    pub started: u64,
    /// Actions finished.
    pub done: u64,
    /// Actions failed.
    pub failed: u64,
    /// Actions its limits or the disk refused.
    pub refused: u64,
    /// Actions under way.
    pub under_way: u64,
    /// Its last decision.
    pub last: Option<Decision>,
}

impl RuleSnapshot {
    /// The JSON object `/rules` answers for the rule.
    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "actions": self.actions,
            "state": self.status.as_str(),
            "reason": self.reason,
            "throttled_for_s": self.throttled_for.map(|d| (d.as_secs_f64() * 10.0).ceil() / 10.0),
            "max_actions": self.max_actions,
            "counts": {
                "looked_at": self.looked_at,
                "matched": self.matched,
                "admitted": self.admitted,
                "started": self.started,
                "done": self.done,
                "failed": self.failed,
                "refused": self.refused,
                "under_way": self.under_way,
            },
            "last_decision": self.last.as_ref().map(Decision::to_json),
        })
    }
}

/// The watch as a whole, as the view sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchSummary {
    /// The watch has started and not stopped.
    pub watching: bool,
    /// It is stopping (finishing its open traces).
    pub stopping: bool,
    /// The output disk is full.
    pub disk_full: bool,
    /// Processes no rule matched.
    pub unmatched: u64,
    /// The last reload's failure, while the previous rules stay in force.
    pub reload_failed: Option<String>,
}

/// Per rule, what the view keeps.
#[derive(Debug, Default)]
struct Entry {
    actions: Vec<&'static str>,
    max_actions: Option<u32>,
    looked_at: u64,
    matched: u64,
    admitted: u32,
    started: u64,
    done: u64,
    failed: u64,
    refused: u64,
    /// Actions under way, by (pid, action).
    under_way: HashMap<(Option<u32>, &'static str), u64>,
    /// The cooldown's end, from the last refusal.
    cooldown_until: Option<Instant>,
    /// The last refusal in words.
    refusal: Option<String>,
    log: VecDeque<Decision>,
}

impl Entry {
    fn push(&mut self, d: Decision) {
        if self.log.len() == RULE_LOG_LEN {
            self.log.pop_front();
        }
        self.log.push_back(d);
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// The rules' names in the rules file's order.
    order: Vec<String>,
    rules: HashMap<String, Entry>,
    summary: WatchSummary,
}

/// The view of a running watch: made by the caller (an `Arc`, given in
/// [`WatchOptions`](crate::WatchOptions)), read while the watch runs and after.
#[derive(Debug, Default)]
pub struct WatchView {
    inner: Mutex<Inner>,
}

/// The action kinds `rule` has, as the decisions log names them.
fn action_kinds(rule: &Rule) -> Vec<&'static str> {
    let mut v = Vec::new();
    if rule.trace.is_some() {
        v.push("trace");
    }
    if rule.dump.is_some() {
        v.push("dump");
    }
    if rule.heap.is_some() {
        v.push("heap");
    }
    if rule.counters.is_some() {
        v.push("counters");
    }
    if rule.bundle.is_some() {
        v.push("bundle");
    }
    v
}

impl WatchView {
    /// An empty view, to hand to a watch.
    pub fn new() -> Arc<WatchView> {
        Arc::new(WatchView::default())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The rules in force now (at the start and on each good reload): a rule kept by name
    /// keeps its counts and log, as the watcher keeps its limits' state.
    pub(crate) fn set_rules(&self, rules: &RuleSet) {
        let mut inner = self.lock();
        let mut old = std::mem::take(&mut inner.rules);
        inner.order = rules.rules.iter().map(|r| r.name.clone()).collect();
        for r in &rules.rules {
            let mut e = old.remove(&r.name).unwrap_or_default();
            e.actions = action_kinds(r);
            e.max_actions = r.limits.max_actions;
            inner.rules.insert(r.name.clone(), e);
        }
        inner.summary.reload_failed = None;
    }

    /// A decision the watcher logged.
    pub(crate) fn record(&self, d: &Decision) {
        let mut inner = self.lock();
        let s = &mut inner.summary;
        match d.event {
            DecisionKind::Started => s.watching = true,
            DecisionKind::Stopping => s.stopping = true,
            DecisionKind::Stopped => {
                s.watching = false;
                s.stopping = false;
            }
            DecisionKind::Seen => s.unmatched += 1,
            DecisionKind::DiskFull => s.disk_full = true,
            DecisionKind::DiskOk => s.disk_full = false,
            DecisionKind::ReloadFailed => s.reload_failed = d.detail.clone(),
            _ => {}
        }
        let Some(e) = d.rule.as_ref().and_then(|r| inner.rules.get_mut(r)) else {
            return;
        };
        let key = (d.pid, d.action.unwrap_or(""));
        match d.event {
            DecisionKind::Matched => {
                e.matched += 1;
                e.looked_at += 1;
            }
            DecisionKind::Skipped => {
                e.refused += 1;
                e.refusal = d.detail.clone();
            }
            DecisionKind::ActionStarted => {
                e.started += 1;
                *e.under_way.entry(key).or_default() += 1;
            }
            DecisionKind::ActionDone | DecisionKind::ActionFailed => {
                if d.event == DecisionKind::ActionDone {
                    e.done += 1;
                } else {
                    e.failed += 1;
                }
                if let Some(n) = e.under_way.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        e.under_way.remove(&key);
                    }
                }
            }
            _ => {}
        }
        e.push(d.clone());
    }

    /// A process the rule `rule` was applied to and its match did not hold for (kept in the
    /// rule's log as a `seen` line naming the rule; never written to the decisions log).
    pub(crate) fn not_matched(&self, rule: &Rule, facts: &ProcessFacts, age_ms: Option<u64>) {
        let mut d = Decision::for_process(DecisionKind::Seen, facts);
        d.rule = Some(rule.name.clone());
        d.age_ms = age_ms;
        d.detail = Some(format!(
            "the rule's match does not hold for this process (name {:?}, entry assembly {:?})",
            facts.comm,
            facts.entry_assembly.as_deref().unwrap_or("unknown")
        ));
        let mut inner = self.lock();
        if let Some(e) = inner.rules.get_mut(&rule.name) {
            e.looked_at += 1;
            e.push(d);
        }
    }

    /// What the rule's limits decided on one of its actions at `now` (`actions`: the rule's
    /// actions admitted so far, this one counted).
    pub(crate) fn admission(&self, rule: &str, verdict: &Admission, actions: u32, now: Instant) {
        let mut inner = self.lock();
        let Some(e) = inner.rules.get_mut(rule) else {
            return;
        };
        e.admitted = actions;
        e.cooldown_until = match verdict {
            Admission::Cooldown(left) => Some(now + *left),
            Admission::Go => None,
            _ => e.cooldown_until,
        };
    }

    /// The watch as a whole.
    pub fn summary(&self) -> WatchSummary {
        self.lock().summary.clone()
    }

    /// Every rule in the rules file's order.
    pub fn rules(&self) -> Vec<RuleSnapshot> {
        self.rules_at(Instant::now())
    }

    /// The rule named `name`, if the rules in force have it.
    pub fn rule(&self, name: &str) -> Option<RuleSnapshot> {
        let inner = self.lock();
        let e = inner.rules.get(name)?;
        Some(snapshot(name, e, &inner.summary, Instant::now()))
    }

    /// The rule's last `limit` decisions, oldest first (`None`: no such rule).
    pub fn log(&self, name: &str, limit: usize) -> Option<Vec<Decision>> {
        let inner = self.lock();
        let e = inner.rules.get(name)?;
        let skip = e.log.len().saturating_sub(limit);
        Some(e.log.iter().skip(skip).cloned().collect())
    }

    fn rules_at(&self, now: Instant) -> Vec<RuleSnapshot> {
        let inner = self.lock();
        inner
            .order
            .iter()
            .filter_map(|n| {
                inner
                    .rules
                    .get(n)
                    .map(|e| snapshot(n, e, &inner.summary, now))
            })
            .collect()
    }
}

/// A rule's state at `now`, with why.
fn snapshot(name: &str, e: &Entry, s: &WatchSummary, now: Instant) -> RuleSnapshot {
    let under_way: u64 = e.under_way.values().sum();
    let spent = e.max_actions.is_some_and(|m| e.admitted >= m);
    let cooling = e
        .cooldown_until
        .map(|t| t.saturating_duration_since(now))
        .filter(|d| !d.is_zero());
    let (status, reason) = if under_way > 0 {
        (
            RuleStatus::Acting,
            format!("{under_way} action(s) under way"),
        )
    } else if spent {
        (
            RuleStatus::Finished,
            format!(
                "max_actions ({}) reached: it acts no more while the watch runs",
                e.max_actions.unwrap_or_default()
            ),
        )
    } else if s.disk_full {
        (
            RuleStatus::Throttled,
            "the output disk is full: actions are skipped until there is room".to_string(),
        )
    } else if let Some(left) = cooling {
        (
            RuleStatus::Throttled,
            format!("cooldown: {:.1} s left", left.as_secs_f64()),
        )
    } else {
        (RuleStatus::Running, running_reason(e, s))
    };
    RuleSnapshot {
        name: name.to_string(),
        actions: e.actions.clone(),
        status,
        reason,
        throttled_for: if status == RuleStatus::Throttled {
            cooling
        } else {
            None
        },
        looked_at: e.looked_at,
        matched: e.matched,
        admitted: e.admitted,
        max_actions: e.max_actions,
        started: e.started,
        done: e.done,
        failed: e.failed,
        refused: e.refused,
        under_way,
        last: e.log.back().cloned(),
    }
}

/// Why a running rule is where it is.
fn running_reason(e: &Entry, s: &WatchSummary) -> String {
    if !s.watching {
        return "the watch is not running".into();
    }
    if e.matched == 0 {
        return if e.looked_at == 0 {
            "armed: no .NET process seen yet".into()
        } else {
            format!(
                "armed: no process matched its match ({} process(es) looked at; see its log)",
                e.looked_at
            )
        };
    }
    match &e.refusal {
        Some(why) if e.refused > 0 && e.started == 0 => {
            format!("armed: its actions were refused ({why})")
        }
        _ => format!(
            "armed: {} process(es) matched, {} action(s) taken",
            e.matched, e.started
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_rules::Syntax;

    fn rules(text: &str) -> RuleSet {
        RuleSet::parse(text, Syntax::Json).unwrap()
    }

    fn event(kind: DecisionKind, rule: &str, pid: u32, action: Option<&'static str>) -> Decision {
        let mut d = Decision::new(kind);
        d.rule = Some(rule.into());
        d.pid = Some(pid);
        d.action = action;
        d
    }

    fn facts(pid: u32, comm: &str) -> ProcessFacts {
        ProcessFacts {
            pid,
            comm: comm.into(),
            ..ProcessFacts::default()
        }
    }

    #[test]
    fn running_then_acting_then_finished() {
        let v = WatchView::new();
        v.set_rules(&rules(
            r#"{"rules":[{"name":"t","match":{"name":"app"},"trace":{"duration":"1s"},"limits":{"max_actions":1}},
                         {"name":"d","match":{"name":"nothing"},"dump":{}}]}"#,
        ));
        let s = v.rules();
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[1].name.as_str()), ("t", "d"));
        assert_eq!(s[0].status, RuleStatus::Running);
        assert!(s[0].reason.contains("not running"), "{}", s[0].reason);
        v.record(&Decision::new(DecisionKind::Started));
        assert!(v.rule("t").unwrap().reason.contains("no .NET process seen"));
        v.not_matched(&rules_one("d"), &facts(7, "app"), None);
        v.record(&event(DecisionKind::Matched, "t", 7, None));
        let now = Instant::now();
        v.admission("t", &Admission::Go, 1, now);
        v.record(&event(DecisionKind::ActionStarted, "t", 7, Some("trace")));
        let t = v.rule("t").unwrap();
        assert_eq!(t.status, RuleStatus::Acting);
        assert_eq!((t.matched, t.started, t.under_way), (1, 1, 1));
        v.record(&event(DecisionKind::ActionDone, "t", 7, Some("trace")));
        let t = v.rule("t").unwrap();
        assert_eq!(t.status, RuleStatus::Finished, "{}", t.reason);
        assert_eq!((t.done, t.under_way, t.admitted), (1, 0, 1));
        assert_eq!(t.last.unwrap().event, DecisionKind::ActionDone);
        // The rule nothing matched: running, with why, and its log names the process.
        let d = v.rule("d").unwrap();
        assert_eq!(d.status, RuleStatus::Running);
        assert_eq!((d.matched, d.looked_at), (0, 1));
        assert!(d.reason.contains("no process matched"), "{}", d.reason);
        let log = v.log("d", 10).unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].pid, Some(7));
        assert!(log[0].detail.as_deref().unwrap().contains("does not hold"));
        assert!(v.log("nope", 10).is_none() && v.rule("nope").is_none());
        let j = v.rule("t").unwrap().to_json();
        assert_eq!(j["state"], "finished");
        assert_eq!(j["counts"]["done"], 1);
        assert_eq!(j["actions"][0], "trace");
    }

    fn rules_one(name: &str) -> Rule {
        rules(&format!(
            r#"{{"rules":[{{"name":"{name}","match":{{"name":"x"}},"dump":{{}}}}]}}"#
        ))
        .rules
        .remove(0)
    }

    #[test]
    fn throttled_by_the_cooldown_until_it_passes_and_by_a_full_disk() {
        let v = WatchView::new();
        v.set_rules(&rules(
            r#"{"rules":[{"name":"c","match":{"name":"app"},"dump":{},"limits":{"cooldown":"60s"}}]}"#,
        ));
        v.record(&Decision::new(DecisionKind::Started));
        let now = Instant::now();
        v.admission("c", &Admission::Go, 1, now);
        v.record(&event(DecisionKind::ActionStarted, "c", 1, Some("dump")));
        v.record(&event(DecisionKind::ActionFailed, "c", 1, Some("dump")));
        v.admission("c", &Admission::Cooldown(Duration::from_secs(30)), 1, now);
        let mut skip = event(DecisionKind::Skipped, "c", 2, Some("dump"));
        skip.detail = Some("cooldown: 30.0 s left".into());
        v.record(&skip);
        let c = v.rule("c").unwrap();
        assert_eq!(c.status, RuleStatus::Throttled, "{}", c.reason);
        assert_eq!((c.failed, c.refused), (1, 1));
        let left = c.throttled_for.unwrap();
        assert!(left > Duration::from_secs(29) && left <= Duration::from_secs(30));
        assert!(c.to_json()["throttled_for_s"].as_f64().unwrap() > 29.0);
        // Later than the cooldown: running again.
        let later = v.rules_at(now + Duration::from_secs(31));
        assert_eq!(later[0].status, RuleStatus::Running);
        assert_eq!(later[0].throttled_for, None);
        // A full disk throttles until it has room.
        v.record(&Decision::new(DecisionKind::DiskFull));
        let later = v.rules_at(now + Duration::from_secs(31));
        assert_eq!(later[0].status, RuleStatus::Throttled);
        assert!(later[0].reason.contains("disk is full"));
        v.record(&Decision::new(DecisionKind::DiskOk));
        assert_eq!(
            v.rules_at(now + Duration::from_secs(31))[0].status,
            RuleStatus::Running
        );
    }

    #[test]
    fn the_log_is_bounded_and_a_reload_keeps_counts_by_name() {
        let v = WatchView::new();
        v.set_rules(&rules(
            r#"{"rules":[{"name":"a","match":{"name":"x"},"dump":{}}]}"#,
        ));
        for pid in 0..(RULE_LOG_LEN as u32 + 50) {
            v.record(&event(DecisionKind::Matched, "a", pid + 1, None));
        }
        let log = v.log("a", usize::MAX).unwrap();
        assert_eq!(log.len(), RULE_LOG_LEN);
        assert_eq!(log.last().unwrap().pid, Some(RULE_LOG_LEN as u32 + 50));
        assert_eq!(v.log("a", 3).unwrap().len(), 3);
        v.set_rules(&rules(
            r#"{"rules":[{"name":"b","match":{"name":"x"},"heap":{}},{"name":"a","match":{"name":"x"},"dump":{}}]}"#,
        ));
        let s = v.rules();
        assert_eq!(s[0].name, "b");
        assert_eq!(s[1].matched, RULE_LOG_LEN as u64 + 50);
        assert_eq!(s[0].actions, vec!["heap"]);
    }
}
