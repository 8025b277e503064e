//! clrspy's rules: one file (JSON or TOML, one schema) says which .NET processes get which
//! treatment — a trace, a dump — matched by process name, command line, entry assembly, user
//! and container, with limits (how many actions, how often, how much disk) so a rule left on
//! for a week cannot fill a disk. Mistakes in the file are errors with their line and column
//! before anything runs. The watcher finds every new .NET process (containers too, and
//! processes that connect to its reverse diagnostic port, held at their first instruction),
//! applies the matching rules, and writes one JSON line per decision to a log. Used by
//! `clrspy watch` and by the agent; no terminal or HTTP here.
#![deny(missing_docs)]

// The rules file proper.
mod budget;
mod doc;
mod facts;
mod log;
mod model;
mod parse;
mod values;

// The watcher (its layers in `watch`), and the crash-dump pieces it uses.
mod coremem;
mod crash_files;
mod fatal;
mod watch;

pub use budget::{enforce_budget, RuleState};
pub use clrspy_collect::trigger::TriggerSpec;
pub use doc::{json_schema, EXAMPLE_JSON, EXAMPLE_TOML};
pub use facts::ProcessFacts;
pub use log::{Decision, DecisionKind, DecisionLog};
pub use model::{
    ContainerMatch, DumpAction, Limits, Match, Rule, RulesFile, TraceAction, DEFAULT_DISK_MB,
};
pub use parse::{Diagnostic, LoadError, RuleSet, Syntax};
pub use values::{
    parse_duration, Compression, Delay, DumpKind, Dur, Glob, Pattern, ProfileName, ProviderText,
    RuleName, UserSpec,
};
pub use watch::{
    admission, admit, disk_full, watch, Admission, AdmissionInput, DecisionPrinter, WatchControl,
    WatchEnd, WatchError, WatchOptions, MIN_FREE,
};
