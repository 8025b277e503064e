//! `"analyze": true` on a rule's dump action: the dump just written read at once (the
//! runtime's own data access library, in a child process), what it says written beside it.

use std::path::Path;

use clrspy_rules::{Decision, DecisionKind, ProcessFacts, Rule};

use crate::state::WatchState;

/// `"analyze": true`: reads the dump just written (in a child process) and writes what it says
/// beside it; logged as the rule's `analysis` action.
pub(crate) fn analyze(shared: &WatchState, rule: &Rule, facts: &ProcessFacts, dump: &Path) {
    let mut d = Decision::for_process(DecisionKind::ActionDone, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("analysis");
    match clrspy_collect::analyze_dump(dump, false) {
        Ok(a) => match clrspy_collect::write_analysis(dump, &a) {
            Ok(path) => {
                d.file = Some(path);
                d.detail = Some(clrspy_collect::analysis_line(&a));
            }
            Err(e) => {
                d.event = DecisionKind::ActionFailed;
                d.detail = Some(format!(
                    "the analysis of {} could not be written: {e}",
                    dump.display()
                ));
            }
        },
        Err(e) => {
            d.event = DecisionKind::ActionFailed;
            d.detail = Some(format!("the analysis of {} failed: {e}", dump.display()));
        }
    }
    shared.emit(d);
}
