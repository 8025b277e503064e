//! A rule's bundle action: `clrspy bundle` on a process the rule matches, written as
//! `<process>_<pid>_<UTC stamp>.bundle.zip` into the rule's folder — the trace of a window and
//! its reports, the app's logs, metrics and counters (clrspy-handoff's `gather`). One action
//! under the rule's limits (admitted when the window opens; the zip counts against the
//! folder's disk budget), logged when it starts and ends. With `stop_on` the window waits for
//! a trigger, keeping the newest `ring_mb` of trace, and a window that ends without one
//! leaves nothing and is logged as `watching_ended` (and not counted against `max_actions`).
//! Watch's stop ends a window under way.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use clrspy_analysis::log_stream::LogLevel;
use clrspy_collect::trigger::{Triggers, DEFAULT_AFTER};
use clrspy_collect::{Resolved, StopSignal};
use clrspy_handoff::gather::{gather, BundleOutcome, BundleSpec};
use clrspy_handoff::HandoffError;
use diagnostics_client::Endpoint;

use crate::admission::MIN_FREE;
use crate::limits::{admit_or_skip, file_for, keep_budget, say_disk_full};
use crate::procfs::age_ms;
use crate::state::{track, untrack, WatchState};
use clrspy_collect::disk::free_bytes;
use clrspy_rules::{BundleAction, BundleExtra, BundleLogLevel};
use clrspy_rules::{Decision, DecisionKind, ProcessFacts, Rule};

/// The log's name of the action.
const ACTION: &str = "bundle";

/// The bundle's file's extension after the stamp.
pub(crate) const EXTENSION: &str = "bundle.zip";

/// Carries out `rule`'s bundle action on the process at `ep` (on the caller's thread).
pub(crate) fn act_bundle(shared: &WatchState, rule: &Rule, facts: &ProcessFacts, ep: &Endpoint) {
    let Some(bundle) = &rule.bundle else { return };
    let say = |kind: DecisionKind, file: Option<PathBuf>, bytes: Option<u64>, detail: String| {
        let mut d = Decision::for_process(kind, facts);
        d.rule = Some(rule.name.clone());
        d.action = Some(ACTION);
        d.file = file;
        d.bytes = bytes;
        d.detail = Some(detail);
        if kind == DecisionKind::ActionStarted {
            d.age_ms = age_ms(facts.pid);
        }
        shared.emit(d);
    };
    let Some(dir) = admit_or_skip(shared, rule, ACTION, facts) else {
        return;
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let out = file_for(&dir, facts, EXTENSION);
    say(
        DecisionKind::ActionStarted,
        Some(out.clone()),
        None,
        started_detail(bundle),
    );
    let spec = spec_for(bundle, rule, facts, ep, &out);
    let stop = Arc::new(StopSignal::new());
    track(shared, &stop, &out);
    let outcome = gather(spec, &stop, &mut |_| ());
    if outcome.is_ok() {
        // The zip against the rule's budget while it is still spared: older files go first.
        keep_budget(shared, rule, &dir, 0);
    }
    untrack(shared, &stop, &out);
    match outcome {
        Ok(o) => done(shared, rule, bundle, &dir, o, &say),
        Err(HandoffError::NotTriggered(why)) => {
            give_back(shared, rule);
            let _ = std::fs::remove_file(&out);
            say(
                DecisionKind::WatchingEnded,
                None,
                None,
                format!(
                    "no trigger fired: {why}; no bundle kept (not counted against max_actions)"
                ),
            );
        }
        Err(e) => {
            let _ = std::fs::remove_file(&out);
            shared.failures.fetch_add(1, Ordering::SeqCst);
            say(DecisionKind::ActionFailed, None, None, e.to_string());
            if free_bytes(&shared.out).is_some_and(|f| f < MIN_FREE) {
                shared.disk_full.store(true, Ordering::SeqCst);
                say_disk_full(shared, None);
            }
        }
    }
}

/// Logs a bundle written: its size and contents — or, when the zip alone is over the rule's
/// disk budget, removes it and says so.
fn done(
    shared: &WatchState,
    rule: &Rule,
    bundle: &BundleAction,
    dir: &Path,
    o: BundleOutcome,
    say: &dyn Fn(DecisionKind, Option<PathBuf>, Option<u64>, String),
) {
    let bytes = std::fs::metadata(&o.zip).map(|m| m.len()).ok();
    let budget = rule.limits.disk_bytes();
    if bytes.is_some_and(|b| b > budget) {
        let _ = std::fs::remove_file(&o.zip);
        keep_budget(shared, rule, dir, 0);
        shared.failures.fetch_add(1, Ordering::SeqCst);
        return say(
            DecisionKind::ActionFailed,
            None,
            bytes,
            format!(
                "the bundle alone ({} MB) is over the rule's disk budget of {} MB: removed (a smaller ring_mb or a larger disk_mb keeps it)",
                bytes.unwrap_or(0) >> 20,
                budget >> 20
            ),
        );
    }
    say(
        DecisionKind::ActionDone,
        Some(o.zip),
        bytes,
        done_detail(bundle, &o.manifest),
    );
}

/// The ActionStarted line's detail: what the window waits for and keeps.
fn started_detail(b: &BundleAction) -> String {
    let mut s = if b.stop_on.is_empty() {
        format!("a window of {}", secs(b.window()))
    } else {
        let triggers: Vec<String> = b.stop_on.iter().map(ToString::to_string).collect();
        let most = if b.duration.is_some() {
            format!(" (at most {})", secs(b.window()))
        } else {
            " (until the process ends or watch stops)".into()
        };
        format!("waiting for {}{most}", triggers.join(" or "))
    };
    if let Some(m) = b.ring_mb {
        s.push_str(&format!(", keeping the newest {m} MB of trace"));
    }
    for e in &b.with {
        s.push_str(match e {
            BundleExtra::Heap => "; a heap snapshot after it (a full, blocking GC)",
            BundleExtra::Dump => "; a dump after it",
        });
    }
    if !b.redact {
        s.push_str("; not redacted");
    }
    s
}

/// The ActionDone line's detail: the zip's files and what was redacted.
fn done_detail(b: &BundleAction, m: &clrspy_handoff::Manifest) -> String {
    let fired = if b.stop_on.is_empty() {
        ""
    } else {
        "a stop trigger fired; "
    };
    let redacted = if b.redact {
        format!("{} redactions", m.redacted.len())
    } else {
        "not redacted".into()
    };
    format!("{fired}{} files, {redacted}", m.files.len())
}

/// A duration in seconds, as the log writes them.
fn secs(d: std::time::Duration) -> String {
    format!("{}s", d.as_secs())
}

/// What `gather` is asked for: the rule's bundle attached to the process at `ep`, into `out`.
fn spec_for(
    b: &BundleAction,
    rule: &Rule,
    facts: &ProcessFacts,
    ep: &Endpoint,
    out: &Path,
) -> BundleSpec {
    let triggers = (!b.stop_on.is_empty()).then(|| Triggers {
        specs: b.stop_on.clone(),
        after: b.after_trigger.map_or(DEFAULT_AFTER, |d| d.0),
    });
    BundleSpec {
        target: Resolved::Attach {
            endpoint: ep.clone(),
            label: format!("{} (pid {})", facts.file_name(), facts.pid),
        },
        duration: b.window(),
        output: out.to_path_buf(),
        symptom: None,
        profile: b.profile.as_ref().map(|p| p.0.name.to_string()),
        providers: b.providers_text(),
        ring: b.ring_mb.map(|m| u64::from(m) << 20),
        require_trigger: triggers.is_some(),
        triggers,
        with_heap: b.takes(BundleExtra::Heap),
        with_dump: b.takes(BundleExtra::Dump),
        log_level: log_level(b.log_level),
        log_filter: None,
        log_files: Vec::new(),
        redact: b.redact,
        command_line: command_line(&rule.name),
    }
}

/// The logger's level of a rule's `log_level` (Information when not given).
fn log_level(l: Option<BundleLogLevel>) -> LogLevel {
    match l {
        Some(BundleLogLevel::Trace) => LogLevel::Trace,
        Some(BundleLogLevel::Debug) => LogLevel::Debug,
        None | Some(BundleLogLevel::Information) => LogLevel::Information,
        Some(BundleLogLevel::Warning) => LogLevel::Warning,
        Some(BundleLogLevel::Error) => LogLevel::Error,
        Some(BundleLogLevel::Critical) => LogLevel::Critical,
    }
}

/// The manifest's command: watch's own command line and the rule that acted.
fn command_line(rule: &str) -> Vec<String> {
    let mut argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    argv.push(format!("(rule \"{rule}\")"));
    argv
}

/// A bundle that kept nothing does not count against the rule's `max_actions`.
fn give_back(shared: &WatchState, rule: &Rule) {
    if let Ok(mut s) = shared.states.lock() {
        if let Some(r) = s.get_mut(&rule.name) {
            r.actions = r.actions.saturating_sub(1);
        }
    }
    let _ = shared
        .actions
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_rules::{RuleSet, Syntax};

    fn bundle_rule(bundle: &str) -> RuleSet {
        RuleSet::parse(
            &format!(
                r#"{{"rules":[{{"name":"hand","match":{{"name":"api*"}},"bundle":{bundle}}}]}}"#
            ),
            Syntax::Json,
        )
        .unwrap()
    }

    fn facts() -> ProcessFacts {
        ProcessFacts {
            pid: 4242,
            comm: "api".into(),
            command_line: "api --port 1".into(),
            ..ProcessFacts::default()
        }
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            pid: 4242,
            path: PathBuf::from("/tmp/dotnet-diagnostic-4242-1-socket"),
        }
    }

    #[test]
    fn the_spec_carries_the_rule_s_bundle() {
        let set = bundle_rule(
            r#"{"profile":"cpu","providers":["A:1:4","B"],"ring_mb":16,"stop_on":["gen2"],"after_trigger":"1s","with":["dump"],"log_level":"error","redact":false}"#,
        );
        let rule = &set.rules[0];
        let b = rule.bundle.as_ref().unwrap();
        let out = PathBuf::from("/out/hand/api_4242_x.bundle.zip");
        let s = spec_for(b, rule, &facts(), &endpoint(), &out);
        assert_eq!(
            s.target,
            Resolved::Attach {
                endpoint: endpoint(),
                label: "api (pid 4242)".into()
            }
        );
        assert_eq!(s.output, out);
        assert_eq!(s.profile.as_deref(), Some("cpu"));
        assert_eq!(s.providers.as_deref(), Some("A:1:4,B"));
        assert_eq!(s.ring, Some(16 << 20));
        assert!(s.require_trigger);
        let t = s.triggers.unwrap();
        assert_eq!(t.specs.len(), 1);
        assert_eq!(t.after, std::time::Duration::from_secs(1));
        assert_eq!(s.duration, clrspy_values::MAX_DURATION);
        assert!(s.with_dump && !s.with_heap);
        assert_eq!(s.log_level, LogLevel::Error);
        assert!(!s.redact);
        assert_eq!(s.command_line.last().unwrap(), "(rule \"hand\")");
        assert!(s.command_line.len() >= 2, "{:?}", s.command_line);
    }

    #[test]
    fn without_triggers_the_window_is_fixed_and_a_bundle_is_always_kept() {
        let set = bundle_rule("{}");
        let rule = &set.rules[0];
        let b = rule.bundle.as_ref().unwrap();
        let s = spec_for(b, rule, &facts(), &endpoint(), Path::new("/o/x.bundle.zip"));
        assert!(s.triggers.is_none() && !s.require_trigger);
        assert_eq!(s.duration, std::time::Duration::from_secs(30));
        assert_eq!(s.log_level, LogLevel::Information);
        assert!(s.redact && s.profile.is_none() && s.providers.is_none() && s.ring.is_none());
        assert_eq!(started_detail(b), "a window of 30s");
        let with = bundle_rule(r#"{"stop_on":["gen2"],"after_trigger":"0"}"#);
        let b = with.rules[0].bundle.as_ref().unwrap();
        let s = spec_for(b, &with.rules[0], &facts(), &endpoint(), Path::new("/o/x"));
        assert_eq!(s.triggers.unwrap().after, std::time::Duration::ZERO);
    }

    #[test]
    fn the_log_lines_say_what_the_window_waits_for_and_what_it_left() {
        let set = bundle_rule(
            r#"{"ring_mb":64,"stop_on":[{"exception":"System.TimeoutException"},"gen2"],"duration":"1h","with":["heap"],"redact":false}"#,
        );
        let b = set.rules[0].bundle.as_ref().unwrap();
        let d = started_detail(b);
        assert!(d.starts_with("waiting for "), "{d}");
        assert!(
            d.contains("System.TimeoutException") && d.contains(" or "),
            "{d}"
        );
        assert!(d.contains("(at most 3600s)"), "{d}");
        assert!(d.contains("keeping the newest 64 MB of trace"), "{d}");
        assert!(
            d.contains("heap snapshot") && d.ends_with("not redacted"),
            "{d}"
        );
        let open = bundle_rule(r#"{"stop_on":["gen2"]}"#);
        let d = started_detail(open.rules[0].bundle.as_ref().unwrap());
        assert!(d.contains("until the process ends or watch stops"), "{d}");
        let m = clrspy_handoff::Manifest {
            files: vec![Default::default(); 3],
            redacted: vec![Default::default(); 2],
            ..Default::default()
        };
        assert_eq!(
            done_detail(b, &m),
            "a stop trigger fired; 3 files, not redacted"
        );
        let plain = bundle_rule("{}");
        assert_eq!(
            done_detail(plain.rules[0].bundle.as_ref().unwrap(), &m),
            "3 files, 2 redactions"
        );
    }

    #[test]
    fn a_bundle_that_kept_nothing_is_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let set = bundle_rule("{}");
        let log =
            clrspy_rules::DecisionLog::open(dir.path(), clrspy_collect::private::append_private)
                .unwrap();
        let state = WatchState::new(
            dir.path(),
            bundle_rule("{}"),
            log,
            Box::new(|_| {}),
            None,
            crate::view::WatchView::new(),
        );
        let rule = &set.rules[0];
        state
            .states
            .lock()
            .unwrap()
            .entry(rule.name.clone())
            .or_default()
            .actions = 2;
        state.actions.store(2, Ordering::SeqCst);
        give_back(&state, rule);
        assert_eq!(state.states.lock().unwrap()["hand"].actions, 1);
        assert_eq!(state.actions.load(Ordering::SeqCst), 1);
        state.actions.store(0, Ordering::SeqCst);
        give_back(&state, rule);
        assert_eq!(state.actions.load(Ordering::SeqCst), 0);
    }
}
