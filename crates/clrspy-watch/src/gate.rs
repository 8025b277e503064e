//! A rule's gate for its dumps on exceptions: every matching exception asks the rule's limits
//! (max_actions and cooldown, shared by all the processes the rule matched, and the output
//! disk) before a dump is queued, so a refused dump is never started. Refusals are logged as
//! `skipped` lines, at most one a second per process: the skips in between are counted into
//! the next line, the rest into a last line when the process's watch ends.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clrspy_collect::{DumpGate, DumpRequest};

use crate::limits::may_act;
use crate::state::WatchState;
use clrspy_rules::ProcessFacts;
use clrspy_rules::RuleSet;
use clrspy_rules::{Decision, DecisionKind};

/// At most one `skipped` line per process this often.
const SKIP_LINE_EVERY: Duration = Duration::from_secs(1);

/// The skips of one process's watch, and what is left to say about them.
#[derive(Debug, Default)]
struct Skips {
    /// When the last line was written.
    said: Option<Instant>,
    /// Skips since that line, not in a line yet.
    unsaid: u32,
    /// The last skip's reason and the dump's.
    last: String,
    /// Every skip.
    total: u32,
}

impl Skips {
    /// Counts a skip at `now` for `why` (the limit) of a dump asked for `reason`; the line to
    /// write, when one is due.
    fn note(&mut self, now: Instant, why: &str, reason: &str) -> Option<String> {
        self.total += 1;
        let due = self
            .said
            .is_none_or(|t| now.saturating_duration_since(t) >= SKIP_LINE_EVERY);
        if !due {
            self.unsaid += 1;
            self.last = format!("{why}, {reason}");
            return None;
        }
        let more = match self.unsaid {
            0 => String::new(),
            n => format!("; {n} more skipped since the last line"),
        };
        self.said = Some(now);
        self.unsaid = 0;
        Some(format!("{why} ({reason}{more})"))
    }

    /// The last line, when skips are left unsaid.
    fn flush(&mut self) -> Option<String> {
        let n = std::mem::take(&mut self.unsaid);
        (n > 0).then(|| {
            format!(
                "{n} more skipped since the last line (the last: {})",
                self.last
            )
        })
    }
}

/// The gate of rule `i` for one process.
pub(crate) struct RuleGate {
    shared: Arc<WatchState>,
    rules: Arc<RuleSet>,
    i: usize,
    facts: ProcessFacts,
    skips: Mutex<Skips>,
}

impl RuleGate {
    /// The gate of rule `i` for the process `facts` describes.
    pub(crate) fn new(
        shared: &Arc<WatchState>,
        rules: &Arc<RuleSet>,
        i: usize,
        facts: &ProcessFacts,
    ) -> RuleGate {
        RuleGate {
            shared: shared.clone(),
            rules: rules.clone(),
            i,
            facts: facts.clone(),
            skips: Mutex::new(Skips::default()),
        }
    }

    /// Writes a `skipped` line.
    fn say(&self, detail: String) {
        let mut d = Decision::for_process(DecisionKind::Skipped, &self.facts);
        d.rule = Some(self.rules.rules[self.i].name.clone());
        d.action = Some("dump");
        d.detail = Some(detail);
        self.shared.emit(d);
    }

    /// Writes the line of the skips not said yet; how many dumps were skipped in all.
    pub(crate) fn finish(&self) -> u32 {
        let (line, total) = match self.skips.lock() {
            Ok(mut s) => (s.flush(), s.total),
            Err(_) => (None, 0),
        };
        if let Some(l) = line {
            self.say(l);
        }
        total
    }
}

impl DumpGate for RuleGate {
    fn admit(&self, request: &DumpRequest) -> bool {
        let rule = &self.rules.rules[self.i];
        let why = match may_act(&self.shared, rule) {
            Ok(_) => return true,
            Err(why) => why,
        };
        let line = self
            .skips
            .lock()
            .ok()
            .and_then(|mut s| s.note(Instant::now(), &why, &request.reason));
        if let Some(l) = line {
            self.say(l);
        }
        false
    }

    fn closed(&self) -> bool {
        let rule = &self.rules.rules[self.i];
        let Some(max) = rule.limits.max_actions else {
            return false;
        };
        self.shared
            .states
            .lock()
            .map(|s| s.get(&rule.name).is_some_and(|r| r.actions >= max))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_and_the_rest_counted() {
        let mut s = Skips::default();
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let why = "cooldown: 3599.0 s left";
        let r = "first-chance System.InvalidCastException";
        assert_eq!(
            s.note(ms(0), why, r).as_deref(),
            Some("cooldown: 3599.0 s left (first-chance System.InvalidCastException)")
        );
        assert_eq!(s.note(ms(300), why, r), None);
        assert_eq!(s.note(ms(600), why, r), None);
        assert_eq!(
            s.note(ms(1000), why, r).as_deref(),
            Some("cooldown: 3599.0 s left (first-chance System.InvalidCastException; 2 more skipped since the last line)")
        );
        assert_eq!(s.note(ms(1300), "max_actions (5) reached", r), None);
        assert_eq!(
            s.flush().as_deref(),
            Some("1 more skipped since the last line (the last: max_actions (5) reached, first-chance System.InvalidCastException)")
        );
        assert_eq!(s.flush(), None);
        assert_eq!(s.total, 5);
    }

    /// A watch's state writing to `out`, with `rules` (JSON).
    fn shared(out: &std::path::Path, rules: &str) -> Arc<WatchState> {
        let rules = RuleSet::parse(rules, clrspy_rules::Syntax::Json).unwrap();
        let log =
            clrspy_rules::DecisionLog::open(out, clrspy_collect::private::append_private).unwrap();
        Arc::new(WatchState::new(
            out,
            rules,
            log,
            Box::new(|_| {}),
            None,
            crate::view::WatchView::new(),
        ))
    }

    fn lines(out: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(out.join("decisions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn ask() -> DumpRequest {
        DumpRequest {
            reason: "first-chance System.InvalidCastException".into(),
            pid: None,
            event_ns: None,
        }
    }

    /// Two processes of one rule.
    fn two(s: &Arc<WatchState>) -> (RuleGate, RuleGate) {
        let rules = s.rules();
        let a = ProcessFacts::read(std::process::id(), None);
        let mut b = a.clone();
        b.pid = a.pid.wrapping_add(1);
        (
            RuleGate::new(s, &rules, 0, &a),
            RuleGate::new(s, &rules, 0, &b),
        )
    }

    #[test]
    fn a_cooldown_admits_one_dump_for_all_the_processes_of_its_rule() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(
            dir.path(),
            r#"{"rules":[{"name":"casts","match":{"name":"x"},
                "dump":{"on_exception":["*.InvalidCastException"]},
                "limits":{"max_actions":5,"cooldown":"1h"}}]}"#,
        );
        let (a, b) = two(&s);
        assert!(a.admit(&ask()));
        for _ in 0..4 {
            assert!(!a.admit(&ask()));
        }
        assert!(!b.admit(&ask()), "the other process shares the cooldown");
        assert!(!a.closed() && !b.closed());
        assert_eq!((a.finish(), b.finish()), (4, 1));
        let log = lines(dir.path());
        let skipped: Vec<&str> = log
            .iter()
            .filter(|l| l["event"] == "skipped")
            .map(|l| l["detail"].as_str().unwrap())
            .collect();
        // Per process: the first skip at once, the other three within the second in a last line.
        assert_eq!(skipped.len(), 3, "{log:#?}");
        assert!(
            skipped.iter().all(|d| d.contains("cooldown: 3")),
            "{skipped:?}"
        );
        assert!(
            skipped.iter().any(|d| d.starts_with("3 more skipped")),
            "{skipped:?}"
        );
        assert_eq!(s.states.lock().unwrap()["casts"].actions, 1);
    }

    #[test]
    fn max_actions_is_shared_and_closes_the_gates() {
        let dir = tempfile::tempdir().unwrap();
        let s = shared(
            dir.path(),
            r#"{"rules":[{"name":"casts","match":{"name":"x"},
                "dump":{"on_exception":["*"]},"limits":{"max_actions":2}}]}"#,
        );
        let (a, b) = two(&s);
        assert!(a.admit(&ask()));
        assert!(!a.closed());
        assert!(b.admit(&ask()));
        assert!(a.closed() && b.closed());
        assert!(!a.admit(&ask()));
        assert_eq!(a.finish(), 1);
        let log = lines(dir.path());
        assert!(
            log.iter().any(|l| l["event"] == "skipped"
                && l["pid"] == std::process::id()
                && l["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("max_actions (2) reached")),
            "{log:#?}"
        );
    }
}
