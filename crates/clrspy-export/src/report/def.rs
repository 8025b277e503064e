//! A report's declaration ([`ReportDef`]): what each report file declares in its
//! `pub const REPORT` and the registry ([`crate::report`]) lists. It names no report and not
//! the registry, so every report can import it.

use clrspy_analysis::Analysis;

use super::needs::{Models, Needs};
use super::sections::{HtmlDef, SummaryDef};
use super::view::{Report, ReportOptions};

/// A report's declaration: its name, what it needs recorded and analysed, its builder (whose
/// object carries its text and JSON views), and what it adds to the summary and the HTML
/// report. Each report file holds its `pub const REPORT`; the `reports!` list in
/// [`crate::report`] registers it, and [`ReportKind`](crate::report::ReportKind) is derived
/// from that list.
#[derive(Clone, Copy)]
pub struct ReportDef {
    /// Its name on the command line and as a JSON key.
    pub name: &'static str,
    /// What it shows, in words.
    pub description: &'static str,
    /// What it needs recorded (`clrspy profile` enables the providers of the reports chosen).
    pub needs: Needs,
    /// The analysis models it reads (`clrspy report NAME` runs only those).
    pub models: Models,
    /// The model of the registry that streams one JSON line per item (a request) to the file
    /// of `--requests-jsonl`, when the report has such a listing.
    pub rows: Option<&'static str>,
    /// Builds the report (options normalized by [`crate::report::build`]).
    pub build: fn(&Analysis, &ReportOptions) -> Report,
    /// Its section of the summary, if it has one.
    pub summary: Option<SummaryDef>,
    /// Its section of the HTML report, if it has one.
    pub html: Option<HtmlDef>,
}

impl std::fmt::Debug for ReportDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportDef")
            .field("name", &self.name)
            .field("models", &self.models)
            .finish()
    }
}
