//! The format registry: every file format clrspy converts a trace into, with its file
//! extension and MIME type, and the one entry, [`export`], that writes any of them.
//!
//! Adding a format is one [`Format`] variant (name, extension, MIME type, description) and one
//! file with its writer, called from [`export`].

use std::io::{self, Write};

use clrspy_analysis::{Analysis, Metric, StackFilter};
use nettrace::{ByteSource, Reader};

use crate::{chromium, flamegraph, folded, html, pprof, speedscope, thread_label, weighted_stacks};

/// A file format for a viewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// speedscope's JSON (one sampled profile per thread, and all threads).
    Speedscope,
    /// The Chromium trace event format: Perfetto UI, chrome://tracing, DevTools.
    Chromium,
    /// Folded stacks, one line per stack (flamegraph.pl, inferno).
    Folded,
    /// An interactive flame graph SVG.
    Flamegraph,
    /// pprof's profile.proto, gzip-compressed (go tool pprof, Pyroscope, Parca).
    Pprof,
    /// One self-contained HTML report.
    Html,
}

impl Format {
    /// Every format, in the order they are listed.
    pub const ALL: [Format; 6] = [
        Format::Speedscope,
        Format::Chromium,
        Format::Folded,
        Format::Flamegraph,
        Format::Pprof,
        Format::Html,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Speedscope => "speedscope",
            Format::Chromium => "chromium",
            Format::Folded => "folded",
            Format::Flamegraph => "flamegraph",
            Format::Pprof => "pprof",
            Format::Html => "html",
        }
    }

    /// The file extension (after the trace's stem and a dot).
    pub fn extension(self) -> &'static str {
        match self {
            Format::Speedscope => "speedscope.json",
            Format::Folded => "folded.txt",
            Format::Flamegraph => "svg",
            Format::Pprof => "pb.gz",
            Format::Chromium => "chromium.json",
            Format::Html => "html",
        }
    }

    /// What it is, in words.
    pub fn description(self) -> &'static str {
        match self {
            Format::Speedscope => "speedscope (www.speedscope.app, or `npx speedscope FILE`)",
            Format::Chromium => "Chromium trace event JSON (Perfetto UI, chrome://tracing)",
            Format::Folded => "folded stacks (flamegraph.pl, inferno)",
            Format::Flamegraph => "interactive flame graph SVG (opens in a browser)",
            Format::Pprof => "pprof profile.proto, gzip (go tool pprof, Pyroscope, Parca)",
            Format::Html => "one self-contained HTML report (opens offline)",
        }
    }

    /// True for the formats that hold only weighted stacks (empty without them); the HTML
    /// report and the Chromium timeline hold more.
    pub fn is_stacks_only(self) -> bool {
        !matches!(self, Format::Chromium | Format::Html)
    }

    /// The metrics it can weigh (Chromium's timeline shows every sample, whatever the metric).
    pub fn metrics(self) -> &'static [Metric] {
        match self {
            Format::Chromium => &[Metric::Cpu],
            _ => &Metric::ALL,
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown format '{s}'"))
    }
}

/// How to export.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// What the stacks weigh.
    pub metric: Metric,
    /// Which stacks (a thread).
    pub filter: StackFilter,
    /// A title for viewers that show one.
    pub title: String,
    /// The session's start (Unix ns), for formats that record it (pprof).
    pub start_unix_ns: Option<i64>,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            metric: Metric::Cpu,
            filter: StackFilter::default(),
            title: "clrspy".into(),
            start_unix_ns: None,
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exported {
    /// Distinct (thread, stack) rows the metric has (0: the view is empty).
    pub stacks: usize,
    /// Why a second pass over the trace stopped early, when it did.
    pub stopped_early: Option<String>,
}

/// Writes `a` in `format` to `out`. `again` opens the same trace from its start, for formats
/// that read it a second time (Chromium's, in time order); it is not called otherwise.
pub fn export<S: ByteSource>(
    format: Format,
    a: &Analysis,
    options: &ExportOptions,
    again: impl FnOnce() -> io::Result<Reader<S>>,
    out: &mut dyn Write,
) -> io::Result<Exported> {
    let metric = options.metric;
    let stacks = weighted_stacks(a, metric, &options.filter);
    let mut done = Exported {
        stacks: stacks.len(),
        stopped_early: None,
    };
    let label = |t: u64| thread_label(a, t);
    match format {
        Format::Speedscope => speedscope::write(out, &stacks, metric, &options.title, &label)?,
        Format::Folded => folded::write(out, &stacks, metric, &label, true)?,
        Format::Flamegraph => flamegraph::write(out, &stacks, metric, &options.title, &label)?,
        Format::Pprof => {
            let o = pprof::Options {
                filter: options.filter.clone(),
                start_unix_ns: options.start_unix_ns,
            };
            pprof::write_with(a, metric, &o, out)?;
        }
        Format::Html => html::write_with(a, &options.title, metric, &options.filter, out)?,
        Format::Chromium => {
            let mut reader = again()?;
            let group = options.filter.just_my_code.as_ref();
            done.stopped_early =
                chromium::write_grouped(a, &mut reader, group, options.filter.native, out)?;
        }
    }
    Ok(done)
}
