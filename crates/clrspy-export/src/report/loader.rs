//! The `loader` report: assemblies loaded per load context (version, file, when), every failed
//! load with the stages it went through, the resolving handlers that ran and the files probed,
//! and assemblies loaded twice (in more than one context, or at more than one version).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use clr_events::loader::ResolutionResult;
use clrspy_analysis::sources::loader::{Attempt, FailureStats, LoaderModel};
use clrspy_analysis::Analysis;
use serde::Serialize;

use super::def::ReportDef;
use super::needs::{Models, Needs};
use super::sections::{
    Fact, HtmlDef, HtmlInput, HtmlSection, Part, SummaryDef, SummaryInput, SummarySection,
};
use super::text::TextStyle;
use super::view::{to_json, ReportOptions, TextView};
use crate::html::markup::escape;
use crate::units::fit;

/// The runtime's `AssemblyLoader` keyword.
const ASSEMBLY_LOADER: u64 = 0x4;
/// The runtime's `Loader` keyword.
const LOADER: u64 = 0x8;

/// The `loader` report.
pub(crate) const REPORT: ReportDef = ReportDef {
    name: "loader",
    description: "Assembly loads per load context, failed loads with their probed paths, assemblies loaded twice",
    needs: Needs::runtime(ASSEMBLY_LOADER | LOADER, 4).with_profile("loader"),
    models: Models::Named(&["loader"]),
    rows: None,
    build: |a, o| Box::new(build(a, o)),
    summary: Some(SummaryDef {
        order: 68,
        build: |i| Box::new(LoaderSection::build(i)),
    }),
    html: Some(HtmlDef { build: html }),
};

/// Loads of one assembly into one load context from one file.
#[derive(Clone, Debug, Serialize)]
pub struct LoadRow {
    /// The assembly's full name.
    pub assembly: String,
    /// Its simple name.
    pub name: String,
    /// Its version (empty when the name has none).
    pub version: String,
    /// The load context (`Default`, or `"name" Type` without the instance number; empty when
    /// the trace has no `AssemblyLoader` events).
    pub context: String,
    /// The file (empty for an assembly loaded from memory).
    pub path: String,
    /// Times it was loaded.
    pub count: u64,
    /// Times a load was answered with it already loaded (cached, found in the context, or
    /// returned by a resolving handler).
    pub reused: u64,
    /// The first load's time, ms since the trace started.
    pub(crate) first_ms: f64,
    /// The loads' total time, start to stop, ms.
    pub duration_ms: f64,
    /// The assembly that asked first (empty when unknown).
    pub requested_by: String,
    /// The resolving handler that returned it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// Instances of the context it was loaded into (at least; 64 are told apart).
    pub(crate) context_instances: u64,
}

/// One resolution stage a failed load went through.
#[derive(Clone, Debug, Serialize)]
pub struct AttemptRow {
    /// The stage (the runtime's name).
    pub stage: String,
    /// The load context it ran in.
    pub context: String,
    /// Its result.
    pub result: String,
    /// The runtime's message.
    pub message: String,
}

/// Failed loads of one assembly name into one context.
#[derive(Clone, Debug, Serialize)]
pub struct FailureRow {
    /// The name asked for.
    pub assembly: String,
    /// The load context.
    pub context: String,
    /// Why it failed, in words.
    pub reason: String,
    /// The stage that decided it.
    pub stage: String,
    /// The files looked for (the first failure's), in order.
    pub probed: Vec<String>,
    /// Times it failed.
    pub count: u64,
    /// The first failure's time, ms since the trace started.
    pub(crate) first_ms: f64,
    /// The assembly that asked.
    pub requested_by: String,
    /// The path asked for (loads by path).
    pub requested_path: String,
    /// The stages the first failure went through, in order.
    pub attempts: Vec<AttemptRow>,
    /// The resolving handlers that ran, and what they returned.
    pub handlers: Vec<String>,
}

/// An assembly loaded in more than one context or at more than one version.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DuplicateRow {
    /// Its simple name.
    pub(crate) assembly: String,
    /// Its versions, lowest first.
    pub(crate) versions: Vec<String>,
    /// The contexts it was loaded into.
    pub(crate) contexts: Vec<String>,
    /// Loads of it, all contexts.
    pub(crate) loads: u64,
}

/// One load context.
#[derive(Clone, Debug, Serialize)]
pub struct ContextRow {
    /// Its name (`Default`, or `"name" Type` without the instance number).
    pub context: String,
    /// Assemblies loaded into it.
    pub assemblies: u64,
    /// Loads into it.
    pub loads: u64,
}

/// Assembly loading.
#[derive(Clone, Debug, Serialize)]
pub struct LoaderReport {
    /// Loads asked for (`AssemblyLoader/Start`).
    pub requested: u64,
    /// Loads that loaded an assembly.
    pub loaded: u64,
    /// Loads answered with an assembly already loaded.
    pub reused: u64,
    /// Loads that failed.
    pub failed: u64,
    /// Files the binder probed (`AssemblyLoader/KnownPathProbed`).
    pub probes: u64,
    /// The load contexts, most loads first.
    pub contexts: Vec<ContextRow>,
    /// Every assembly loaded, by context (the default first), then time.
    pub loads: Vec<LoadRow>,
    /// Every failed load, first first.
    pub failures: Vec<FailureRow>,
    /// Assemblies loaded twice.
    pub(crate) duplicates: Vec<DuplicateRow>,
    /// What the trace lacks, when it has no assembly-load events (or only the `Loader`
    /// keyword's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// Rows of each context the text shows (`--top`; the JSON has every load).
    #[serde(skip)]
    pub top: usize,
}

fn ms(ns: i64) -> f64 {
    crate::units::round3(ns as f64 / 1e6)
}

/// The simple name and the version of a full assembly name.
fn name_and_version(full: &str) -> (String, String) {
    let mut parts = full.split(',').map(str::trim);
    let name = parts.next().unwrap_or_default().to_string();
    let version = parts
        .find_map(|p| p.strip_prefix("Version="))
        .unwrap_or_default()
        .to_string();
    (name, version)
}

fn attempt_row(t: &Attempt) -> AttemptRow {
    AttemptRow {
        stage: t.stage.to_string(),
        context: t.context.clone(),
        result: t.result.to_string(),
        message: t.message.clone(),
    }
}

/// Why a load failed: the first stage that found something wrong (a wrong version or name, an
/// error), else the last stage's not-found; and that stage.
fn reason(f: &FailureStats) -> (String, String) {
    let telling = f.attempts.iter().find(|t| {
        !matches!(
            t.result,
            ResolutionResult::Success | ResolutionResult::AssemblyNotFound
        )
    });
    match telling.or(f.attempts.last()) {
        Some(t) if t.result == ResolutionResult::AssemblyNotFound => (
            format!("not found in any stage ({})", t.message),
            t.stage.to_string(),
        ),
        Some(t) => (format!("{}: {}", t.result, t.message), t.stage.to_string()),
        None => (
            "failed (its resolution stages were not recorded)".into(),
            String::new(),
        ),
    }
}

fn failure_row(context: &str, assembly: &str, f: &FailureStats) -> FailureRow {
    let (reason, stage) = reason(f);
    FailureRow {
        assembly: assembly.to_string(),
        context: context.to_string(),
        reason,
        stage,
        probed: f.probed.iter().map(|p| p.path.clone()).collect(),
        count: f.count,
        first_ms: ms(f.first_ns),
        requested_by: f.requested_by.clone(),
        requested_path: f.requested_path.clone(),
        attempts: f.attempts.iter().map(attempt_row).collect(),
        handlers: f.handlers.clone(),
    }
}

/// The loads of the `Loader` keyword alone (no context, no timing).
fn module_loads(m: &LoaderModel) -> Vec<LoadRow> {
    m.modules
        .iter()
        .map(|((full, path), s)| {
            let (name, version) = name_and_version(full);
            LoadRow {
                assembly: full.clone(),
                name,
                version,
                context: String::new(),
                path: path.clone(),
                count: s.count,
                reused: 0,
                first_ms: ms(s.first_ns),
                duration_ms: 0.0,
                requested_by: String::new(),
                handler: None,
                context_instances: 0,
            }
        })
        .collect()
}

/// Assemblies loaded (not only found already loaded) in more than one context or at more than
/// one version. A context whose load was answered with another context's assembly (MSBuild's
/// plugin contexts hand `Microsoft.Build` back from the default one) holds no copy of its own.
fn duplicates(loads: &[LoadRow]) -> Vec<DuplicateRow> {
    let mut by_name: BTreeMap<&str, DuplicateRow> = BTreeMap::new();
    for l in loads.iter().filter(|l| l.count > 0) {
        let d = by_name.entry(&l.name).or_insert_with(|| DuplicateRow {
            assembly: l.name.clone(),
            versions: Vec::new(),
            contexts: Vec::new(),
            loads: 0,
        });
        if !d.versions.contains(&l.version) {
            d.versions.push(l.version.clone());
        }
        if !d.contexts.contains(&l.context) {
            d.contexts.push(l.context.clone());
        }
        d.loads += l.count;
    }
    by_name
        .into_values()
        .filter(|d| d.versions.len() > 1 || d.contexts.len() > 1)
        .map(|mut d| {
            d.versions.sort();
            d
        })
        .collect()
}

/// Builds the loader report.
pub fn build(a: &Analysis, o: &ReportOptions) -> LoaderReport {
    let Some(m) = a.model::<LoaderModel>() else {
        return empty(Some(REPORT.needs.missing_line("assembly-load events")), o.top);
    };
    if m.starts == 0 && m.stops == 0 {
        let mut r = empty(
            Some(if m.modules.is_empty() {
            REPORT.needs.missing_line("assembly-load events")
        } else {
            REPORT.needs.missing_line(
                "load contexts or failed loads (only the Loader keyword's assembly loads)",
            )
        }),
            o.top,
        );
        r.loads = module_loads(m);
        r.loaded = r.loads.iter().map(|l| l.count).sum();
        return r;
    }
    let mut loads: Vec<LoadRow> = m
        .loads
        .iter()
        .map(|((context, full, path), l)| {
            let (name, version) = name_and_version(full);
            LoadRow {
                assembly: full.clone(),
                name,
                version,
                context: context.clone(),
                path: path.clone(),
                count: l.count,
                reused: l.reused,
                first_ms: ms(l.first_ns),
                duration_ms: ms(l.total_ns),
                requested_by: l.requested_by.clone(),
                handler: l.handler.clone(),
                context_instances: l.instances.len() as u64 + u64::from(l.more_instances),
            }
        })
        .collect();
    loads.sort_by(|x, y| {
        (x.context != "Default")
            .cmp(&(y.context != "Default"))
            .then_with(|| x.context.cmp(&y.context))
            .then_with(|| x.first_ms.total_cmp(&y.first_ms))
            .then_with(|| x.assembly.cmp(&y.assembly))
    });
    let mut contexts: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for l in &loads {
        let c = contexts.entry(&l.context).or_default();
        c.0 += 1;
        c.1 += l.count;
    }
    let mut contexts: Vec<ContextRow> = contexts
        .into_iter()
        .map(|(c, (assemblies, loads))| ContextRow {
            context: c.to_string(),
            assemblies,
            loads,
        })
        .collect();
    contexts.sort_by(|x, y| y.loads.cmp(&x.loads).then_with(|| x.context.cmp(&y.context)));
    let mut failures: Vec<FailureRow> = m
        .failures
        .iter()
        .map(|((c, n), f)| failure_row(c, n, f))
        .collect();
    failures.sort_by(|x, y| x.first_ms.total_cmp(&y.first_ms));
    LoaderReport {
        requested: m.starts,
        loaded: loads.iter().map(|l| l.count).sum(),
        reused: loads.iter().map(|l| l.reused).sum(),
        failed: failures.iter().map(|f| f.count).sum(),
        probes: m.probes,
        contexts,
        duplicates: duplicates(&loads),
        loads,
        failures,
        missing: None,
        top: o.top,
    }
}

fn empty(missing: Option<String>, top: usize) -> LoaderReport {
    LoaderReport {
        requested: 0,
        loaded: 0,
        reused: 0,
        failed: 0,
        probes: 0,
        contexts: Vec::new(),
        loads: Vec::new(),
        failures: Vec::new(),
        duplicates: Vec::new(),
        missing,
        top,
    }
}

/// Stages and probed files shown per failure in the text (the JSON has them all).
const SHOWN: usize = 8;

fn write_failure(out: &mut dyn Write, f: &FailureRow, style: &TextStyle) -> io::Result<()> {
    writeln!(out, "\n  {}", fit(&f.assembly, style.room(2)))?;
    let times = if f.count == 1 {
        "once".to_string()
    } else {
        format!("{} times", f.count)
    };
    let asker = name_and_version(&f.requested_by).0;
    let asked = if asker.is_empty() {
        String::new()
    } else {
        format!(", asked by {asker}")
    };
    writeln!(
        out,
        "    {}",
        fit(
            &format!(
                "in {}{asked}, {times}, first at {:.1} ms",
                f.context, f.first_ms
            ),
            style.room(4)
        )
    )?;
    writeln!(out, "    reason: {}", fit(&f.reason, style.room(12)))?;
    for t in f.attempts.iter().take(SHOWN) {
        let line = format!("{} in {}: {}", t.stage, t.context, t.result);
        writeln!(out, "      stage  {}", fit(&line, style.room(13)))?;
    }
    for h in &f.handlers {
        writeln!(out, "      handler  {}", fit(h, style.room(15)))?;
    }
    if f.probed.is_empty() {
        writeln!(
            out,
            "    probed: no file (an app's own assemblies are a list the host gives, not searched on disk)"
        )?;
    }
    for p in f.probed.iter().take(SHOWN) {
        writeln!(out, "    probed: {}", fit(p, style.room(12)))?;
    }
    if f.probed.len() > SHOWN {
        writeln!(out, "    … {} more probed (--json)", f.probed.len() - SHOWN)?;
    }
    Ok(())
}

impl TextView for LoaderReport {
    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        writeln!(out, "{}", style.heading("Assembly loading"))?;
        if let Some(m) = &self.missing {
            writeln!(out, "  {m}")?;
        }
        if self.requested > 0 {
            writeln!(
                out,
                "  {} loads: {} loaded, {} found already loaded, {} failed; {} context{}, {} files probed",
                self.requested,
                self.loaded,
                self.reused,
                self.failed,
                self.contexts.len(),
                if self.contexts.len() == 1 { "" } else { "s" },
                self.probes
            )?;
        }
        if !self.failures.is_empty() {
            writeln!(out, "\n{}", style.heading("Failed loads"))?;
            for f in &self.failures {
                write_failure(out, f, style)?;
            }
        }
        if !self.duplicates.is_empty() {
            writeln!(
                out,
                "\n{}",
                style.heading("Loaded twice (in more than one context or version)")
            )?;
            for d in &self.duplicates {
                writeln!(
                    out,
                    "  {}  {} loads, versions {}",
                    fit(&d.assembly, style.room(40)),
                    d.loads,
                    d.versions.join(", ")
                )?;
                for c in &d.contexts {
                    writeln!(out, "      in {}", fit(c, style.room(9)))?;
                }
            }
        }
        let mut context: Option<&str> = None;
        let mut shown = 0;
        for (k, l) in self.loads.iter().enumerate() {
            if context != Some(l.context.as_str()) {
                context = Some(&l.context);
                shown = 0;
                let (n, k) = self
                    .contexts
                    .iter()
                    .find(|c| c.context == l.context)
                    .map_or((0, 0), |c| (c.assemblies, c.loads));
                let title = if l.context.is_empty() {
                    "Assemblies loaded (no contexts recorded)".to_string()
                } else {
                    format!("Loaded in {}: {n} assemblies, {k} loads", l.context)
                };
                writeln!(out, "\n{}", style.heading(&title))?;
                writeln!(out, "  {:>9}  {:>5}  {:<12}  assembly, file", "first ms", "loads", "version")?;
            }
            shown += 1;
            if shown > self.top {
                if shown == self.top + 1 {
                    let left = self.loads[k..]
                        .iter()
                        .take_while(|x| x.context == l.context)
                        .count();
                    writeln!(out, "  … {left} more (--top N, or --json for all)")?;
                }
                continue;
            }
            let file = if l.path.is_empty() {
                "(from memory)".to_string()
            } else {
                l.path.clone()
            };
            writeln!(
                out,
                "  {:>9.1}  {:>5}  {:<12}  {}",
                l.first_ms,
                l.count,
                l.version,
                fit(&format!("{}  {file}", l.name), style.room(35))
            )?;
        }
        Ok(())
    }
}

/// The summary's loader section: failed loads and assemblies loaded twice, when there are.
struct LoaderSection {
    report: LoaderReport,
    next: Vec<String>,
}

impl LoaderSection {
    fn build(i: &SummaryInput<'_>) -> LoaderSection {
        let report = build(i.a, &i.o);
        let next = (!report.failures.is_empty() || !report.duplicates.is_empty())
            .then(|| {
                format!(
                    "clrspy report {} loader   (failed loads with their probed paths, assemblies loaded twice)",
                    i.o.trace
                )
            })
            .into_iter()
            .collect();
        LoaderSection { report, next }
    }

    fn says_something(&self) -> bool {
        !self.report.failures.is_empty() || !self.report.duplicates.is_empty()
    }
}

/// The summary's `loader` key: the failures and duplicates (top 5 each).
#[derive(Serialize)]
struct LoaderSummary<'a> {
    failed: u64,
    failures: &'a [FailureRow],
    duplicates: &'a [DuplicateRow],
}

impl SummarySection for LoaderSection {
    fn json(&self) -> Vec<(&'static str, serde_json::Value)> {
        if !self.says_something() {
            return Vec::new();
        }
        let r = &self.report;
        let s = LoaderSummary {
            failed: r.failed,
            failures: &r.failures[..r.failures.len().min(5)],
            duplicates: &r.duplicates[..r.duplicates.len().min(5)],
        };
        vec![("loader", to_json(&s))]
    }

    fn write_text(&self, out: &mut dyn Write, style: &TextStyle) -> io::Result<()> {
        if !self.says_something() {
            return Ok(());
        }
        let r = &self.report;
        writeln!(
            out,
            "\n{}",
            style.heading(&format!(
                "Assembly loading: {} failed, {} loaded twice",
                r.failed,
                r.duplicates.len()
            ))
        )?;
        for f in r.failures.iter().take(3) {
            writeln!(out, "  failed  {}", fit(&f.assembly, style.room(10)))?;
        }
        for d in r.duplicates.iter().take(3) {
            let line = format!(
                "{} ({} contexts, versions {})",
                d.assembly,
                d.contexts.len(),
                d.versions.join(", ")
            );
            writeln!(out, "  twice   {}", fit(&line, style.room(10)))?;
        }
        Ok(())
    }

    fn next(&self) -> &[String] {
        &self.next
    }
}

/// The HTML report's loader table: failed loads and assemblies loaded twice, when the trace
/// has any (a trace without leaves the page as it was).
fn html(i: &HtmlInput<'_>) -> HtmlSection {
    let r = build(i.a, &i.options(20));
    if r.failures.is_empty() && r.duplicates.is_empty() {
        return HtmlSection::default();
    }
    let mut h = String::from("<h2>Assembly loading</h2><table><tr><th>Assembly</th><th>Context</th><th>What</th><th>Files probed</th></tr>");
    for f in &r.failures {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>failed ×{}: {}</td><td>{}</td></tr>",
            escape(&f.assembly),
            escape(&f.context),
            f.count,
            escape(&f.reason),
            escape(&f.probed.join(", "))
        );
    }
    for d in &r.duplicates {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>loaded {} times, versions {}</td><td></td></tr>",
            escape(&d.assembly),
            escape(&d.contexts.join(", ")),
            d.loads,
            escape(&d.versions.join(", "))
        );
    }
    h.push_str("</table>");
    HtmlSection {
        facts: vec![Fact {
            order: 86,
            label: "failed assembly loads",
            value: r.failed.to_string(),
        }],
        parts: vec![Part { order: 86, html: h }],
    }
}

#[cfg(test)]
mod duplicate_tests {
    use super::*;

    fn row(context: &str, version: &str, count: u64, reused: u64) -> LoadRow {
        LoadRow {
            assembly: format!("A, Version={version}"),
            name: "A".into(),
            version: version.into(),
            context: context.into(),
            path: "/a.dll".into(),
            count,
            reused,
            first_ms: 0.0,
            duration_ms: 0.0,
            requested_by: String::new(),
            handler: None,
            context_instances: 1,
        }
    }

    #[test]
    fn an_assembly_handed_back_from_another_context_is_no_duplicate() {
        let shared = [row("Default", "1.0", 1, 0), row("plugin", "1.0", 0, 3)];
        assert!(duplicates(&shared).is_empty());
        let twice = [row("Default", "1.0", 1, 0), row("plugin", "1.0", 1, 0)];
        assert_eq!(duplicates(&twice)[0].contexts, ["Default", "plugin"]);
        let versions = [row("Default", "1.0", 1, 0), row("Default", "2.0", 1, 0)];
        assert_eq!(duplicates(&versions)[0].versions, ["1.0", "2.0"]);
    }
}
