//! Dispatch: from a process found to the actions its rules ask for. Matching a process to
//! the rules (each match logged with why, a process none matches logged as seen; a rule with
//! `children` also matches through an ancestor it matched) and choosing each rule's actions
//! — the dump here; the heap snapshot, counters, bundle and trace on threads of their own.
//! The choosing is pure ([`match_rules`], [`actions_of`], [`seen_detail`]); the rest reads
//! `/proc` and logs.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use diagnostics_client::{procfs, Endpoint};

use crate::bundle::act_bundle;
use crate::children::{ancestors, via_parent};
use crate::counters::act_counters;
use crate::dumps::act_dump;
use crate::heap::act_heap;
use crate::procfs::age_ms;
use crate::state::WatchState;
use crate::trace::{trace, TraceRoute};
use clrspy_rules::Rule;
use clrspy_rules::RuleSet;
use clrspy_rules::{uid_of, ProcessFacts};
use clrspy_rules::{Decision, DecisionKind};

/// At most this many bytes of a command line go into a `seen` line.
const SEEN_COMMAND_LINE: usize = 200;

/// One of a rule's actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// A dump (at once, on exceptions, or on a crash: the dump module decides).
    Dump,
    /// A heap snapshot (`.gcdump`), on a thread of its own.
    Heap,
    /// Counters to a file while the process runs, on a thread of its own.
    Counters,
    /// A support bundle, on a thread of its own.
    Bundle,
    /// A trace.
    Trace,
}

/// The actions `rule` asks for, in the order they are carried out: the dump first (a dump
/// at once must not wait for a trace's session), then the heap snapshot, the counters, the
/// bundle, the trace only when
/// `with_trace` (a runtime held at the listen port gets its trace from the first instruction
/// instead).
pub(crate) fn actions_of(rule: &Rule, with_trace: bool) -> Vec<Action> {
    let mut v = Vec::new();
    if rule.dump.is_some() {
        v.push(Action::Dump);
    }
    if rule.heap.is_some() {
        v.push(Action::Heap);
    }
    if rule.counters.is_some() {
        v.push(Action::Counters);
    }
    if rule.bundle.is_some() {
        v.push(Action::Bundle);
    }
    if with_trace && rule.trace.is_some() {
        v.push(Action::Trace);
    }
    v
}

/// The rules (index, why) `facts` matches. `uid_of` resolves user names; `through_ancestor`
/// is asked for a rule with `children` the process itself does not match.
pub(crate) fn match_rules(
    rules: &RuleSet,
    facts: &ProcessFacts,
    uid_of: &dyn Fn(&str) -> Option<u32>,
    through_ancestor: &mut dyn FnMut(&Rule) -> Option<String>,
) -> Vec<(usize, String)> {
    let mut hits = Vec::new();
    for (i, r) in rules.rules.iter().enumerate() {
        let why = match facts.matches(&r.matcher, uid_of) {
            Some(why) => Some(why.join("; ")),
            None if r.children => through_ancestor(r),
            None => None,
        };
        if let Some(why) = why {
            hits.push((i, why));
        }
    }
    hits
}

/// The detail of a `seen` line: no rule matches, with the command line (cut after 200 bytes,
/// at a character's boundary).
pub(crate) fn seen_detail(command_line: &str) -> String {
    let mut cmd = command_line.to_string();
    if cmd.len() > SEEN_COMMAND_LINE {
        let mut cut = SEEN_COMMAND_LINE;
        while !cmd.is_char_boundary(cut) {
            cut -= 1;
        }
        cmd.truncate(cut);
        cmd.push_str("...");
    }
    format!("no rule matches (command line: {cmd})")
}

/// The rules `facts` matches (indices), each logged with why; a process none matches is
/// logged as seen. A process a rule with `children` matched is remembered for its
/// descendants.
pub(crate) fn matching_rules(
    state: &WatchState,
    rules: &RuleSet,
    facts: &ProcessFacts,
) -> Vec<usize> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let uid_of = |n: &str| uid_of(&passwd, n);
    let age = age_ms(facts.pid);
    let up = if rules.rules.iter().any(|r| r.children) {
        ancestors(facts.pid)
    } else {
        Vec::new()
    };
    let mut through_ancestor = |r: &Rule| {
        state
            .matched
            .lock()
            .ok()
            .and_then(|mut m| via_parent(&mut m, r, &up, &uid_of))
    };
    let hits = match_rules(rules, facts, &uid_of, &mut through_ancestor);
    for (i, r) in rules.rules.iter().enumerate() {
        if !hits.iter().any(|(h, _)| *h == i) {
            state.view.not_matched(r, facts, age);
        }
    }
    for (i, why) in &hits {
        let r = &rules.rules[*i];
        if r.children {
            if let Ok(mut m) = state.matched.lock() {
                m.record(facts.pid, &r.name);
            }
        }
        let mut d = Decision::for_process(DecisionKind::Matched, facts);
        d.rule = Some(r.name.clone());
        d.age_ms = age;
        d.detail = Some(why.clone());
        state.emit(d);
    }
    if hits.is_empty() {
        let mut d = Decision::for_process(DecisionKind::Seen, facts);
        d.age_ms = age;
        d.detail = Some(seen_detail(&facts.command_line));
        state.emit(d);
    }
    hits.into_iter().map(|(i, _)| i).collect()
}

/// A process found by its diagnostic socket: match, then act.
pub(crate) fn on_new_process(state: &Arc<WatchState>, ep: Endpoint) {
    if state.stopping.load(Ordering::SeqCst) {
        return;
    }
    let info = diagnostics_client::process_info(&ep, Duration::from_millis(1500)).ok();
    let facts = ProcessFacts::read(ep.pid, info.and_then(|i| i.entrypoint_assembly));
    if facts.comm.is_empty() && !procfs::alive(ep.pid) {
        let mut d = Decision::new(DecisionKind::Gone);
        d.pid = Some(ep.pid);
        d.detail = Some("the process ended before its rules could be applied".into());
        state.emit(d);
        return;
    }
    let rules = state.rules();
    for i in matching_rules(state, &rules, &facts) {
        act_attached(state, &rules, i, &facts, &ep, true);
    }
}

/// Carries out rule `i`'s actions on a running process reached at `ep`: the dump here, the
/// trace (when `with_trace`) on a thread of its own.
pub(crate) fn act_attached(
    state: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    ep: &Endpoint,
    with_trace: bool,
) {
    for action in actions_of(&rules.rules[i], with_trace) {
        match action {
            Action::Dump => act_dump(state, rules, i, facts, ep),
            Action::Heap => {
                let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
                state.spawn(format!("clrspy-heap-{}", facts.pid), move |s| {
                    act_heap(s, &rules.rules[i], &facts, &ep)
                });
            }
            Action::Counters => {
                let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
                state.spawn(format!("clrspy-counters-{}", facts.pid), move |s| {
                    act_counters(s, &rules.rules[i], &facts, &ep)
                });
            }
            Action::Bundle => {
                let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
                state.spawn(format!("clrspy-bundle-{}", facts.pid), move |s| {
                    act_bundle(s, &rules.rules[i], &facts, &ep)
                });
            }
            Action::Trace => {
                let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
                state.spawn(format!("clrspy-trace-{}", facts.pid), move |s| {
                    let rule = &rules.rules[i];
                    if let Some(t) = &rule.trace {
                        trace(s, rule, t, &facts, TraceRoute::Attach(ep));
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_rules::Syntax;

    fn rules(json: &str) -> RuleSet {
        RuleSet::parse(json, Syntax::Json).unwrap()
    }

    fn process(comm: &str, command_line: &str) -> ProcessFacts {
        ProcessFacts {
            pid: 4242,
            comm: comm.into(),
            command_line: command_line.into(),
            uid: Some(1000),
            ..ProcessFacts::default()
        }
    }

    const SET: &str = r#"{"rules":[
        {"name":"web-dump","match":{"name":"web"},"dump":{}},
        {"name":"web-trace","match":{"name":"web"},"trace":{"profile":"cpu"}},
        {"name":"kids","match":{"name":"launcher"},"children":true,"dump":{}},
        {"name":"other","match":{"name":"other"},"dump":{},"trace":{}},
        {"name":"all","match":{"name":"all"},"trace":{},"heap":{},"dump":{}},
        {"name":"hand","match":{"name":"hand"},"trace":{},"bundle":{},"counters":{}}
    ]}"#;

    #[test]
    fn every_matching_rule_is_chosen_in_file_order_with_why() {
        let set = rules(SET);
        let mut asked = Vec::new();
        let mut ancestor = |r: &Rule| {
            asked.push(r.name.clone());
            None
        };
        let hits = match_rules(
            &set,
            &process("web", "web --port 1"),
            &|_| None,
            &mut ancestor,
        );
        let idx: Vec<usize> = hits.iter().map(|h| h.0).collect();
        assert_eq!(idx, [0, 1]);
        assert!(hits[0].1.contains("web"), "{:?}", hits[0]);
        assert_eq!(asked, ["kids"], "only a children rule asks the ancestors");
    }

    #[test]
    fn a_children_rule_matches_through_an_ancestor_and_no_other_rule_does() {
        let set = rules(SET);
        let mut ancestor = |r: &Rule| {
            assert!(r.children, "{}", r.name);
            Some("via parent PID 7, which the rule matched".to_string())
        };
        let hits = match_rules(&set, &process("worker", "worker"), &|_| None, &mut ancestor);
        assert_eq!(
            hits,
            [(2, "via parent PID 7, which the rule matched".into())]
        );
        let none = match_rules(&set, &process("worker", "worker"), &|_| None, &mut |_| None);
        assert!(none.is_empty());
    }

    #[test]
    fn actions_dump_first_and_a_trace_only_when_asked() {
        let set = rules(SET);
        let both = &set.rules[3];
        assert_eq!(actions_of(both, true), [Action::Dump, Action::Trace]);
        assert_eq!(actions_of(both, false), [Action::Dump]);
        assert_eq!(actions_of(&set.rules[1], true), [Action::Trace]);
        assert!(actions_of(&set.rules[1], false).is_empty());
        assert_eq!(actions_of(&set.rules[0], true), [Action::Dump]);
        let all = &set.rules[4];
        assert_eq!(
            actions_of(all, true),
            [Action::Dump, Action::Heap, Action::Trace]
        );
        assert_eq!(actions_of(all, false), [Action::Dump, Action::Heap]);
        let hand = &set.rules[5];
        assert_eq!(
            actions_of(hand, true),
            [Action::Counters, Action::Bundle, Action::Trace]
        );
        assert_eq!(actions_of(hand, false), [Action::Counters, Action::Bundle]);
    }

    #[test]
    fn a_seen_line_cuts_a_long_command_line_at_a_character() {
        assert_eq!(
            seen_detail("dotnet app.dll"),
            "no rule matches (command line: dotnet app.dll)"
        );
        let long = format!("{}é{}", "a".repeat(199), "b".repeat(50));
        let d = seen_detail(&long);
        assert_eq!(
            d,
            format!("no rule matches (command line: {}...)", "a".repeat(199))
        );
        let exact = "c".repeat(200);
        assert_eq!(
            seen_detail(&exact),
            format!("no rule matches (command line: {exact})")
        );
    }

    #[test]
    fn matching_logs_each_match_with_why_or_one_seen_line_and_remembers_children_rules() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        let set = rules(SET);
        let log =
            clrspy_rules::DecisionLog::open(out, clrspy_collect::private::append_private).unwrap();
        let state = WatchState::new(
            out,
            rules(SET),
            log,
            Box::new(|_| {}),
            None,
            crate::view::WatchView::new(),
        );
        // A pid no process has: no ancestors, no age.
        let pid = u32::MAX - 7;
        let mut web = process("web", "web --port 1");
        web.pid = pid;
        assert_eq!(matching_rules(&state, &set, &web), [0, 1]);
        let mut launcher = process("launcher", "launcher");
        launcher.pid = pid - 1;
        assert_eq!(matching_rules(&state, &set, &launcher), [2]);
        let mut none = process("nothing", &"x".repeat(300));
        none.pid = pid - 2;
        assert!(matching_rules(&state, &set, &none).is_empty());
        let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("decisions.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kinds: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["event"].as_str().unwrap(),
                    l["rule"].as_str().unwrap_or("-"),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("matched", "web-dump"),
                ("matched", "web-trace"),
                ("matched", "kids"),
                ("seen", "-")
            ]
        );
        assert_eq!(lines[0]["pid"], pid);
        assert_eq!(lines[0]["process"], "web");
        assert!(lines[3]["detail"].as_str().unwrap().ends_with("...)"));
        // The children rule's match is remembered (under the pid's start time: none here).
        let m = state.matched.lock().unwrap();
        assert!(format!("{m:?}").contains(&format!("{}", pid - 1)), "{m:?}");
    }
}
