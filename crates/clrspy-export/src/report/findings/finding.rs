//! What a finding is ([`Finding`], [`Rule`], [`Found`]) and what the rules read ([`Input`]):
//! the analysis and the reports built from it, each built once, on first use, whichever
//! rules ask for it.

use std::cell::OnceCell;

use clrspy_analysis::profile::StackProfile;
use clrspy_analysis::{Analysis, StackFilter};
use serde::Serialize;

use super::super::contention::{self, ContentionReport};
use super::super::exceptions::{self, ExceptionsReport};
use super::super::gc::{self, GcReport};
use super::super::hangs::{self, HangsReport};
use super::super::http::{self, HttpReport};
use super::super::requests::{self, RequestsReport};
use super::super::threads::{self, ThreadsReport};
use super::super::alloc::{self, AllocReport};
use super::super::view::ReportOptions;

/// How much a finding matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Seen, below the thresholds of a problem: worth knowing, nothing to fix now.
    Info,
    /// A mistake that costs the app measurably: fix it.
    Warning,
    /// A mistake that dominates what the app does (most of its CPU, a starved pool).
    Critical,
}

impl Severity {
    /// Its name in the text and the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// A fact of a finding's evidence: a name and its value in words ("requests", "4,210").
#[derive(Clone, Debug, Serialize)]
pub struct Fact {
    /// What it is.
    pub name: String,
    /// Its value, with its unit.
    pub value: String,
}

/// A place the evidence points at (a call site, a throw site, a type, a lock, a host), with
/// its share of what the finding measured.
#[derive(Clone, Debug, Serialize)]
pub struct Site {
    /// Its name: a method (`Namespace.Type.Method`), a type, a lock, a host.
    pub name: String,
    /// What it did, in words ("1.2 s CPU", "812 thrown").
    pub value: String,
    /// Its share of the finding's total, percent.
    pub percent: f64,
}

/// A finding: a known mistake seen in the trace, with its evidence and its fix.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// The rule's stable id (`sync-over-async`).
    pub id: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// The rule's title.
    pub title: &'static str,
    /// What was seen, in one sentence with its figures.
    pub said: String,
    /// The figures behind it.
    pub evidence: Vec<Fact>,
    /// Where: the sites, heaviest first.
    pub sites: Vec<Site>,
    /// A stack that shows it (leaf first), when one does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// The fix, in a sentence or two.
    pub fix: &'static str,
    /// The runtime's or ASP.NET Core's own guidance.
    pub link: &'static str,
}

/// What a rule found: a finding without what the rule declares.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub(crate) severity: Severity,
    pub(crate) said: String,
    pub(crate) evidence: Vec<Fact>,
    pub(crate) sites: Vec<Site>,
    pub(crate) stack: Vec<String>,
}

impl Found {
    /// A finding of `severity` that says `said`.
    pub(crate) fn new(severity: Severity, said: String) -> Found {
        Found {
            severity,
            said,
            evidence: Vec::new(),
            sites: Vec::new(),
            stack: Vec::new(),
        }
    }

    /// With a fact.
    pub(crate) fn fact(mut self, name: &str, value: impl Into<String>) -> Found {
        self.evidence.push(Fact {
            name: name.to_string(),
            value: value.into(),
        });
        self
    }

    /// With sites.
    pub(crate) fn sites(mut self, sites: Vec<Site>) -> Found {
        self.sites = sites;
        self
    }

    /// With a stack (leaf first).
    pub(crate) fn stack(mut self, stack: Vec<String>) -> Found {
        self.stack = stack;
        self
    }
}

/// A rule: its id, title, fix and link, and its check. Each rule is one file of
/// [`super::rules`] holding its `RULE` and its thresholds, listed in that module's list.
#[derive(Clone, Copy)]
pub(crate) struct Rule {
    /// Stable id: a JSON key's value, never renamed.
    pub(crate) id: &'static str,
    /// What the mistake is, in a few words.
    pub(crate) title: &'static str,
    /// The fix.
    pub(crate) fix: &'static str,
    /// The guidance it follows.
    pub(crate) link: &'static str,
    /// Looks for it: `None` when the trace does not show it (or cannot tell).
    pub(crate) check: fn(&Input<'_>) -> Option<Found>,
}

impl Rule {
    /// Runs the check.
    pub(crate) fn run(&self, input: &Input<'_>) -> Option<Finding> {
        (self.check)(input).map(|f| Finding {
            id: self.id,
            severity: f.severity,
            title: self.title,
            said: f.said,
            evidence: f.evidence,
            sites: f.sites,
            stack: f.stack,
            fix: self.fix,
            link: self.link,
        })
    }
}

/// What the rules read: the analysis, and its reports built on first use.
pub(crate) struct Input<'a> {
    /// The analysis.
    pub(crate) a: &'a Analysis,
    /// The options every report is built with (every row: the rules rank themselves).
    o: ReportOptions,
    profile: OnceCell<StackProfile>,
    hangs: OnceCell<HangsReport>,
    exceptions: OnceCell<ExceptionsReport>,
    gc: OnceCell<GcReport>,
    alloc: OnceCell<AllocReport>,
    contention: OnceCell<ContentionReport>,
    requests: OnceCell<RequestsReport>,
    http: OnceCell<HttpReport>,
    threads: OnceCell<ThreadsReport>,
}

impl<'a> Input<'a> {
    /// The input of the rules over `a`.
    pub(crate) fn new(a: &'a Analysis, o: &ReportOptions) -> Input<'a> {
        Input {
            a,
            o: ReportOptions {
                top: 20,
                tree: None,
                callers: None,
                filter: StackFilter::default(),
                ..o.clone()
            },
            profile: OnceCell::new(),
            hangs: OnceCell::new(),
            exceptions: OnceCell::new(),
            gc: OnceCell::new(),
            alloc: OnceCell::new(),
            contention: OnceCell::new(),
            requests: OnceCell::new(),
            http: OnceCell::new(),
            threads: OnceCell::new(),
        }
    }

    /// The analysed window, seconds (0 for an empty trace).
    pub(crate) fn seconds(&self) -> f64 {
        (self.a.duration_ns.max(0) as f64) / 1e9
    }

    /// Requests the app served (finished in the trace), when it served some.
    pub(crate) fn served(&self) -> Option<u64> {
        let n = self.requests().finished;
        (n > 0).then_some(n)
    }

    /// The stack profile of the whole process, no filter.
    pub(crate) fn profile(&self) -> &StackProfile {
        self.profile.get_or_init(|| self.a.profile(&StackFilter::default()))
    }

    /// The hangs report.
    pub(crate) fn hangs(&self) -> &HangsReport {
        self.hangs.get_or_init(|| hangs::build(self.a, &self.o))
    }

    /// The exceptions report.
    pub(crate) fn exceptions(&self) -> &ExceptionsReport {
        self.exceptions
            .get_or_init(|| exceptions::build(self.a, &self.o))
    }

    /// The GC report.
    pub(crate) fn gc(&self) -> &GcReport {
        self.gc.get_or_init(|| gc::build(self.a, &self.o))
    }

    /// The allocations report.
    pub(crate) fn alloc(&self) -> &AllocReport {
        self.alloc.get_or_init(|| alloc::build(self.a, &self.o))
    }

    /// The contention report.
    pub(crate) fn contention(&self) -> &ContentionReport {
        self.contention
            .get_or_init(|| contention::build(self.a, &self.o))
    }

    /// The requests report.
    pub(crate) fn requests(&self) -> &RequestsReport {
        self.requests.get_or_init(|| requests::build(self.a, &self.o))
    }

    /// The outgoing HTTP report.
    pub(crate) fn http(&self) -> &HttpReport {
        self.http.get_or_init(|| http::build(self.a, &self.o))
    }

    /// The threads report.
    pub(crate) fn threads(&self) -> &ThreadsReport {
        self.threads.get_or_init(|| threads::build(self.a, &self.o))
    }

    /// The time a weight of the profile stands for, ms per unit.
    pub(crate) fn ms_per_unit(&self) -> f64 {
        self.profile().interval_ns as f64 / 1e6
    }
}

/// A count in words with thousands separated (`12,400`).
pub(crate) fn count(n: u64) -> String {
    crate::units::group(n)
}

/// `n` with the singular or plural words after it: `1 GC was`, `3 GCs were`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", count(n))
    }
}

/// A rate in words: `1,240/s`, `3.5/s`, `0.42/s`.
pub(crate) fn rate(per_s: f64) -> String {
    if per_s >= 100.0 {
        format!("{}/s", count(per_s.round() as u64))
    } else if per_s >= 1.0 {
        format!("{per_s:.1}/s")
    } else {
        format!("{per_s:.2}/s")
    }
}

/// A duration in words: `840 ms`, `3.2 s`.
pub(crate) fn ms(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else {
        format!("{v:.0} ms")
    }
}

/// The first frame of a leaf-first stack that is none of `inside` (name prefixes) and no
/// group of native work (`[runtime: …]`): the code that called into them.
pub(crate) fn caller_outside<'f>(frames: &'f [String], inside: &[&str]) -> Option<&'f str> {
    frames
        .iter()
        .map(String::as_str)
        .find(|f| !f.starts_with('[') && !inside.iter().any(|p| f.starts_with(p)))
}

/// Sites from named amounts, heaviest first, the first `n`, each with its share of `total`.
pub(crate) fn top_sites(
    mut amounts: Vec<(String, f64)>,
    total: f64,
    n: usize,
    value: impl Fn(f64) -> String,
) -> Vec<Site> {
    amounts.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    amounts
        .into_iter()
        .take(n)
        .map(|(name, v)| Site {
            percent: crate::units::round1(crate::units::percent(v, total)),
            value: value(v),
            name,
        })
        .collect()
}

/// "(1.3 per request)" when the app served requests, else "".
pub(crate) fn per_request(n: f64, served: Option<u64>) -> String {
    match served {
        Some(r) => format!(", {:.2} per request", n / r as f64),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caller_is_the_first_frame_outside() {
        let f: Vec<String> = ["[JIT compiler: libclrjit.so]", "System.Linq.Expressions.Expression`1.Compile", "App.Orders.Get", "Main"]
            .map(String::from)
            .to_vec();
        assert_eq!(caller_outside(&f, &["System.Linq."]), Some("App.Orders.Get"));
        assert_eq!(caller_outside(&f[..2], &["System."]), None);
    }
}
