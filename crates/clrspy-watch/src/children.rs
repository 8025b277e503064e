//! Process trees for rules with `children`: the processes such a rule matched (pid and start
//! time, so a reused pid does not count), and the search of a new process's ancestors — by
//! the parent-pid chain in `/proc` — for one the rule matched, or matches now (a script or
//! tool that is not .NET and so was never seen by watch itself).

use std::collections::HashMap;

use clrspy_rules::ProcessFacts;
use clrspy_rules::Rule;
use diagnostics_client::procfs::{parent_pid, start_ticks};

/// At most this many ancestors are looked at.
const MAX_DEPTH: usize = 64;

/// The processes rules with `children` matched: pid → (start ticks, the rules' names).
#[derive(Debug, Default)]
pub(crate) struct Matched(HashMap<u32, (u64, Vec<String>)>);

impl Matched {
    /// Notes that `rule` matched `pid`.
    pub(crate) fn record(&mut self, pid: u32, rule: &str) {
        let ticks = start_ticks(pid).unwrap_or(0);
        let e = self.0.entry(pid).or_insert_with(|| (ticks, Vec::new()));
        if e.0 != ticks {
            *e = (ticks, Vec::new());
        }
        if !e.1.iter().any(|r| r == rule) {
            e.1.push(rule.to_string());
        }
    }

    /// True when `rule` matched the process now running as `pid`.
    fn has(&self, pid: u32, rule: &str) -> bool {
        self.0.get(&pid).is_some_and(|(ticks, rules)| {
            rules.iter().any(|r| r == rule) && start_ticks(pid) == Some(*ticks)
        })
    }

    /// Forgets the processes that ended.
    pub(crate) fn prune(&mut self) {
        self.0
            .retain(|pid, (ticks, _)| start_ticks(*pid) == Some(*ticks));
    }
}

/// The ancestors of `pid`, nearest first, without pid 1 and 0.
pub(crate) fn ancestors(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let mut at = pid;
    while v.len() < MAX_DEPTH {
        match parent_pid(at) {
            Some(p) if p > 1 && p != at && !v.contains(&p) => {
                v.push(p);
                at = p;
            }
            _ => break,
        }
    }
    v
}

/// Why `rule` applies to a process through one of its `ancestors` (nearest first): one the
/// rule matched before, or one it matches now (then recorded). None when no ancestor counts.
pub(crate) fn via_parent(
    matched: &mut Matched,
    rule: &Rule,
    ancestors: &[u32],
    uid_of: &dyn Fn(&str) -> Option<u32>,
) -> Option<String> {
    for &a in ancestors {
        if matched.has(a, &rule.name) {
            return Some(format!("via parent PID {a}, which the rule matched"));
        }
        let facts = ProcessFacts::read(a, None);
        if facts.comm.is_empty() {
            continue;
        }
        if let Some(why) = facts.matches(&rule.matcher, uid_of) {
            matched.record(a, &rule.name);
            return Some(format!(
                "via parent PID {a} ({}): {}",
                facts.file_name(),
                why.join("; ")
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_its_parent_among_its_ancestors_and_a_reused_pid_does_not_count() {
        let me = std::process::id();
        let up = ancestors(me);
        let parent = std::os::unix::process::parent_id();
        if parent > 1 {
            assert_eq!(up.first(), Some(&parent));
        }
        let mut m = Matched::default();
        m.record(me, "r");
        assert!(m.has(me, "r"));
        assert!(!m.has(me, "other"));
        // Another start time: a new process under the same pid.
        m.0.insert(me, (start_ticks(me).unwrap_or(0) + 1, vec!["r".into()]));
        assert!(!m.has(me, "r"));
        m.prune();
        assert!(m.0.is_empty());
    }
}
