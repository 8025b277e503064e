//! clrspy's rules: one file (JSON or TOML, one schema) says which .NET processes get which
//! treatment — a trace, a dump, a support bundle — matched by process name, command line, entry assembly, user
//! and container, with limits (how many actions, how often, how much disk) so a rule left on
//! for a week cannot fill a disk. Mistakes in the file are errors with their line and column
//! before anything runs. Also what the rules are applied with: a process's facts and the
//! matching, a rule's counts and its folder's disk budget, and the decisions log (one JSON
//! line per decision). The watcher that applies them is clrspy-watch, which this crate knows
//! nothing of. Used by `clrspy rules`, `clrspy watch` and the agent; no terminal or HTTP here.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod budget;
mod bundle;
mod doc;
mod facts;
mod log;
mod model;
mod parse;
mod parse_rest;
mod summary;
mod text;
mod values;

pub use budget::{enforce_budget, folder_bytes, RuleState};
pub use bundle::{BundleAction, BundleExtra, BundleLogLevel};
pub use doc::{json_schema, EXAMPLE_JSON, EXAMPLE_TOML};
pub use facts::{uid_of, ProcessFacts};
pub use log::{Decision, DecisionKind, DecisionLog};
pub use model::{
    ContainerMatch, CountersAction, CountersFormat, DumpAction, HeapAction, Limits, Match, Rule,
    SamplerKind, TraceAction,
};
pub use parse::{Diagnostic, LoadError, RuleSet, Syntax};
pub use summary::mistakes_json;
pub use values::{
    Compression, CounterSpecText, Delay, DumpKind, Dur, Glob, Pattern, ProfileName, ProviderText,
    UserSpec,
};
