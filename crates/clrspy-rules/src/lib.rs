//! clrspy's rules: one file (JSON or TOML, one schema) says which .NET processes get which
//! treatment — a trace, a dump — matched by process name, command line, entry assembly, user
//! and container, with limits (how many actions, how often, how much disk) so a rule left on
//! for a week cannot fill a disk. Mistakes in the file are errors with their line and column
//! before anything runs. The watcher finds every new .NET process (containers too, and
//! processes that connect to its reverse diagnostic port, held at their first instruction),
//! applies the matching rules, and writes one JSON line per decision to a log. Used by
//! `clrspy watch` and by the agent; no terminal or HTTP here.
#![deny(missing_docs)]

mod act;
mod budget;
mod crash;
mod discover;
mod doc;
mod dumps;
mod facts;
mod fatal;
mod gate;
mod holds;
mod log;
mod model;
mod parse;
mod port;
mod tree;
mod values;
mod watch;

pub use budget::{enforce_budget, Admission, RuleState};
pub use clrspy_collect::trigger::TriggerSpec;
pub use doc::{json_schema, EXAMPLE_JSON, EXAMPLE_TOML};
pub use facts::ProcessFacts;
pub use log::{Decision, DecisionLog};
pub use model::{
    ContainerMatch, DumpAction, Limits, Match, Rule, RulesFile, TraceAction, DEFAULT_DISK_MB,
};
pub use parse::{Diagnostic, LoadError, RuleSet, Syntax};
pub use values::{
    parse_duration, Compression, Delay, DumpKind, Dur, Glob, Pattern, ProfileName, ProviderText,
    RuleName, UserSpec,
};
pub use watch::{watch, Say, WatchControl, WatchEnd, WatchError, WatchOptions};
