//! The diff's result: two traces' facts, the compared rows and tables, their verdicts (its
//! JSON is its serialization; keys in docs/diff.md).

use std::collections::BTreeMap;

use serde::Serialize;

use super::limits::Class;

/// A trace's facts in the diff.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SideFacts {
    /// Its label (path).
    pub(crate) label: String,
    /// The analysed window, seconds.
    pub(crate) seconds: f64,
    /// Requests the app finished.
    pub(crate) requests: u64,
    /// Its units of work (requests, seconds or events).
    pub(crate) units: f64,
}

/// What a row's figures did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Verdict {
    /// Grew beyond the noise and the threshold.
    Regression,
    /// Shrank beyond the noise and the threshold.
    Improvement,
    /// Moved beyond the noise and the threshold, in a direction that is neither (a route's
    /// share of the requests).
    Changed,
    /// Moved beyond the noise but less than the threshold, or the row is too small to judge.
    BelowThreshold,
    /// Within what sampling explains.
    Noise,
}

impl Verdict {
    /// Its name in text.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::Changed => "changed",
            Verdict::BelowThreshold => "below-threshold",
            Verdict::Noise => "noise",
        }
    }

    pub(crate) fn judged(self) -> bool {
        matches!(
            self,
            Verdict::Regression | Verdict::Improvement | Verdict::Changed
        )
    }
}

/// Whether a row is in both traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Presence {
    /// In both.
    Both,
    /// Only in the new trace.
    New,
    /// Only in the base trace.
    Gone,
}

/// One compared row.
#[derive(Clone, Debug, Serialize)]
pub struct DiffRow {
    /// The method, type, site, route or host.
    pub(crate) name: String,
    /// Which figure of it (`""` in a table of one figure; `p99`, `errors`, `count`).
    pub(crate) measure: &'static str,
    /// Its threshold class.
    pub(crate) class: Class,
    /// `ms`, `bytes`, `count` or `percent`.
    pub(crate) unit: &'static str,
    /// The base trace's total (a percentile: the percentile; a percentage: the count).
    pub(crate) base: f64,
    /// The new trace's.
    pub(crate) new: f64,
    /// The base trace's figure per unit of work (a percentile or a percentage as it is).
    pub(crate) base_per: f64,
    /// The new trace's.
    pub(crate) new_per: f64,
    /// `new_per - base_per`.
    pub(crate) delta: f64,
    /// The change in percent of `base_per` (`None` when the base is 0).
    pub(crate) delta_percent: Option<f64>,
    /// The interval of the change sampling alone explains, percent (`None` for an end
    /// with no bound, or when nothing was counted).
    pub(crate) interval_percent: Option<[Option<f64>; 2]>,
    /// In both traces, or only one.
    pub(crate) presence: Presence,
    /// What it did.
    pub(crate) verdict: Verdict,
}

/// One compared table.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DiffTable {
    /// Stable id (`cpu.exclusive`).
    pub(crate) id: &'static str,
    /// Heading.
    pub(crate) title: &'static str,
    /// What a row names (`method`, `type`, `route`).
    pub(crate) key: &'static str,
    /// The rows shown: every row judged changed, then the largest changes (`--top`).
    pub(crate) rows: Vec<DiffRow>,
    /// Rows left out.
    pub(crate) rows_more: usize,
}

/// Two traces compared.
#[derive(Clone, Debug, Serialize)]
pub struct TraceDiff {
    /// The base trace.
    pub(crate) base: SideFacts,
    /// The new trace.
    pub(crate) new: SideFacts,
    /// The unit of work (`request`, `second`, `EVENT event`).
    pub(crate) per: String,
    /// Why that unit.
    pub(crate) per_reason: String,
    /// How the intervals are computed.
    pub(crate) interval: &'static str,
    /// The threshold of each class, percent.
    pub(crate) thresholds: BTreeMap<&'static str, f64>,
    /// `regressed`, `improved` or `unchanged`.
    pub(crate) verdict: &'static str,
    /// What makes this diff less steady or less complete than it could be (an app still
    /// compiling; tables neither trace can fill, with how to record them).
    pub(crate) notes: Vec<String>,
    /// Rows judged regressions, across tables: (table id, row).
    pub(crate) regressions: Vec<(&'static str, DiffRow)>,
    /// Rows that crossed `--fail-if` (the command exits 1 when there are any).
    pub failed: Vec<(&'static str, DiffRow)>,
    /// The tables.
    pub(crate) tables: Vec<DiffTable>,
}
