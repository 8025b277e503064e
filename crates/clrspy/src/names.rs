//! Events by the names users know (`--provider`, `--event`): the names come from
//! clrspy-analysis' inventory, the patterns' grammar from clrspy-values.

pub use clrspy_analysis::inventory::event_name;
