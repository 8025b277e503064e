//! The view registry: every view clrspy prints, keyed by name, with what it shows, the input
//! it takes (a trace's [`Analysis`], a heap snapshot, two snapshots to compare), what it
//! needs recorded, and its builder. The trace reports of [`crate::report`] are entries of
//! it beside the heap views of [`heap`]. A new kind of input (issue 28's counters series) is
//! one [`Input`] variant, one [`InputKind`] variant and its views' entries.
//!
//! The files a heap input converts to are entries too ([`FileDef`], [`file`]): a snapshot's
//! root paths weighted by retained bytes as folded stacks, a flame graph or speedscope, and
//! the HTML heap page; two snapshots' HTML diff page. A trace's files are the format
//! registry's ([`crate::format::export`]).

pub mod heap;
mod view;

use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

use clrspy_analysis::heap::retention::RetentionTree;
use clrspy_analysis::heap::HeapModel;
use clrspy_analysis::Analysis;

use crate::format::Format;
use crate::report::{self, Needs, ReportKind, ReportOptions};
use crate::stack_unit::StackUnit;
use crate::{flamegraph, folded, heap_stacks, html, speedscope};

pub use view::{View, ViewError};

/// What a view is built from.
pub enum Input<'a> {
    /// A trace's analysis.
    Trace(&'a Analysis),
    /// One heap snapshot.
    Heap(&'a HeapModel),
    /// Two heap snapshots, the older first.
    HeapDiff(&'a HeapModel, &'a HeapModel),
}

/// The kind of [`Input`] a view takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A trace's analysis.
    Trace,
    /// One heap snapshot.
    Heap,
    /// Two heap snapshots.
    HeapDiff,
}

impl Input<'_> {
    /// Its kind.
    pub fn kind(&self) -> InputKind {
        match self {
            Input::Trace(_) => InputKind::Trace,
            Input::Heap(_) => InputKind::Heap,
            Input::HeapDiff(..) => InputKind::HeapDiff,
        }
    }
}

/// What every view is built with: the reports' options and the heap views' own.
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// The reports' options; the heap views use its `top`.
    pub report: ReportOptions,
    /// The heap type asked for (`clrspy heap --type`).
    pub type_name: Option<String>,
    /// How long loading the input took, when the view says so.
    pub elapsed: Option<Duration>,
}

/// A built view, borrowing its input.
pub type Built<'a> = Box<dyn View + 'a>;

type Builder = for<'a> fn(&Input<'a>, &ViewOptions) -> Result<Built<'a>, ViewError>;

/// One entry of the registry.
#[derive(Clone, Copy)]
pub struct ViewDef {
    /// Its name on the command line.
    pub name: &'static str,
    /// What it shows, in words.
    pub description: &'static str,
    /// The input it takes.
    pub input: InputKind,
    /// What it needs recorded, for the views of a trace.
    pub needs: Option<Needs>,
    build: Build,
}

/// How an entry is built: a trace report through [`report::build`], or its own builder.
#[derive(Clone, Copy)]
enum Build {
    Report(ReportKind),
    Fn(Builder),
}

impl std::fmt::Debug for ViewDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewDef")
            .field("name", &self.name)
            .field("input", &self.input)
            .finish()
    }
}

impl ViewDef {
    /// Builds the view from `input`; an error when the input is not the kind it takes.
    pub fn build<'a>(&self, input: &Input<'a>, o: &ViewOptions) -> Result<Built<'a>, ViewError> {
        if input.kind() != self.input {
            return Err(ViewError {
                message: format!(
                    "the view '{}' is built from {:?}, not {:?}",
                    self.name,
                    self.input,
                    input.kind()
                ),
                hint: None,
            });
        }
        match self.build {
            Build::Report(k) => build_report(k, input, o),
            Build::Fn(f) => f(input, o),
        }
    }

    /// The trace report it is, for the views of a trace.
    pub fn report(&self) -> Option<ReportKind> {
        match self.build {
            Build::Report(k) => Some(k),
            Build::Fn(_) => None,
        }
    }
}

/// The heap views.
const HEAP_VIEWS: [ViewDef; 3] = [
    ViewDef {
        name: "heap",
        description: "What a heap snapshot holds: types by retained and shallow bytes, and roots",
        input: InputKind::Heap,
        needs: None,
        build: Build::Fn(build_heap),
    },
    ViewDef {
        name: "heap-type",
        description: "One type of a heap snapshot and the shortest paths from the roots to it",
        input: InputKind::Heap,
        needs: None,
        build: Build::Fn(build_heap_type),
    },
    ViewDef {
        name: "heap-diff",
        description: "What changed between two heap snapshots, by type",
        input: InputKind::HeapDiff,
        needs: None,
        build: Build::Fn(build_heap_diff),
    },
];

/// Every view: the trace reports in [`ReportKind::ALL`]'s order, then the heap views.
pub(crate) fn all() -> Vec<ViewDef> {
    ReportKind::ALL
        .into_iter()
        .map(trace_view)
        .chain(HEAP_VIEWS)
        .collect()
}

/// The view called `name` (any case).
pub fn find(name: &str) -> Option<ViewDef> {
    all()
        .into_iter()
        .find(|v| v.name.eq_ignore_ascii_case(name))
}

fn trace_view(k: ReportKind) -> ViewDef {
    ViewDef {
        name: k.name(),
        description: k.description(),
        input: InputKind::Trace,
        needs: Some(k.needs()),
        build: Build::Report(k),
    }
}

fn wrong_input(name: &str) -> ViewError {
    ViewError {
        message: format!("the view '{name}' got another input than it takes"),
        hint: None,
    }
}

/// Builds a trace report through the registry's entry for it.
fn build_report<'a>(
    k: ReportKind,
    input: &Input<'a>,
    o: &ViewOptions,
) -> Result<Built<'a>, ViewError> {
    let Input::Trace(a) = input else {
        return Err(wrong_input(k.name()));
    };
    Ok(Box::new(report::build(k, a, &o.report)))
}

fn build_heap<'a>(input: &Input<'a>, o: &ViewOptions) -> Result<Built<'a>, ViewError> {
    let Input::Heap(m) = input else {
        return Err(wrong_input("heap"));
    };
    Ok(Box::new(heap::summary(
        m,
        o.report.top,
        o.elapsed,
        o.type_name.as_deref(),
    )))
}

fn build_heap_type<'a>(input: &Input<'a>, o: &ViewOptions) -> Result<Built<'a>, ViewError> {
    let Input::Heap(m) = input else {
        return Err(wrong_input("heap-type"));
    };
    let t = o.type_name.as_deref().unwrap_or_default();
    Ok(Box::new(heap::type_view(m, t)?))
}

fn build_heap_diff<'a>(input: &Input<'a>, o: &ViewOptions) -> Result<Built<'a>, ViewError> {
    let Input::HeapDiff(old, new) = input else {
        return Err(wrong_input("heap-diff"));
    };
    Ok(Box::new(heap::diff_view(old, new, o.report.top)))
}

/// What a file of a heap input is written with.
#[derive(Clone, Debug)]
pub struct FileOptions {
    /// The title viewers show.
    pub title: String,
    /// What the HTML pages show.
    pub html: html::heap::Options,
}

type FileWriter = fn(&Input, &FileOptions, &mut dyn Write) -> io::Result<usize>;

/// A file format a heap input converts to.
#[derive(Clone, Copy)]
pub struct FileDef {
    /// The format.
    pub format: Format,
    /// The input it is written from.
    pub input: InputKind,
    /// What it holds, in words.
    pub description: &'static str,
    write: FileWriter,
}

impl std::fmt::Debug for FileDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileDef")
            .field("format", &self.format)
            .field("input", &self.input)
            .finish()
    }
}

impl FileDef {
    /// Writes `input` (of the kind it takes; else an error) to `out`; returns the stacks
    /// written (0 when the format is not one of stacks).
    pub fn write(&self, input: &Input, o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
        if input.kind() != self.input {
            return Err(io::Error::other(format!(
                "{} of {:?} got {:?}",
                self.format.name(),
                self.input,
                input.kind()
            )));
        }
        (self.write)(input, o, out)
    }

    /// Writes `input` to the file `path` (`-`: stdout), flushed; returns the stacks written.
    /// The file is its owner's only (0600, an existing file's mode narrowed): it holds the
    /// process's data. The error says which file and whether it could not be created or
    /// written.
    pub fn write_file(&self, input: &Input, o: &FileOptions, path: &Path) -> io::Result<usize> {
        let context = |what: &str, e: io::Error| {
            io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
        };
        let mut sink: Box<dyn Write> = if path == Path::new("-") {
            Box::new(io::stdout().lock())
        } else {
            let f = crate::owner_only::create(path).map_err(|e| context("cannot write", e))?;
            Box::new(io::BufWriter::new(f))
        };
        self.write(input, o, &mut sink)
            .and_then(|n| sink.flush().map(|_| n))
            .map_err(|e| context("writing", e))
    }
}

/// The files of the heap inputs.
const HEAP_FILES: [FileDef; 5] = [
    FileDef {
        format: Format::Folded,
        input: InputKind::Heap,
        description: "root paths along the dominator tree, weighted by retained bytes",
        write: write_heap_folded,
    },
    FileDef {
        format: Format::Flamegraph,
        input: InputKind::Heap,
        description: "flame graph of retained bytes along the dominator tree",
        write: write_heap_flamegraph,
    },
    FileDef {
        format: Format::Speedscope,
        input: InputKind::Heap,
        description: "speedscope profile of retained bytes along the dominator tree",
        write: write_heap_speedscope,
    },
    FileDef {
        format: Format::Html,
        input: InputKind::Heap,
        description: "HTML heap page: types, roots, paths, icicle of retained bytes",
        write: write_heap_html,
    },
    FileDef {
        format: Format::Html,
        input: InputKind::HeapDiff,
        description: "HTML page of two snapshots compared by type",
        write: write_heap_diff_html,
    },
];

/// The formats an input of `kind` converts to.
pub(crate) fn formats(kind: InputKind) -> Vec<Format> {
    match kind {
        InputKind::Trace => Format::ALL.to_vec(),
        _ => HEAP_FILES
            .iter()
            .filter(|f| f.input == kind)
            .map(|f| f.format)
            .collect(),
    }
}

/// The file entry writing a heap input of `kind` in `format`; an error naming the formats it
/// has when there is none.
pub fn file(format: Format, kind: InputKind) -> Result<FileDef, ViewError> {
    if let Some(f) = HEAP_FILES
        .iter()
        .find(|f| f.format == format && f.input == kind)
    {
        return Ok(*f);
    }
    let what = match kind {
        InputKind::Trace => "a trace",
        InputKind::Heap => "a heap snapshot",
        InputKind::HeapDiff => "two heap snapshots",
    };
    let names: Vec<&str> = formats(kind).iter().map(|f| f.name()).collect();
    Err(ViewError {
        message: format!(
            "{what} does not convert to {}: it converts to {}",
            format.name(),
            names.join(", ")
        ),
        hint: (kind != InputKind::Trace && formats(InputKind::Trace).contains(&format))
            .then(|| format!("{} is a view of a trace's events", format.name())),
    })
}

fn one_heap<'a>(input: &Input<'a>) -> io::Result<&'a HeapModel> {
    match input {
        Input::Heap(m) => Ok(m),
        _ => Err(io::Error::other("not one heap snapshot")),
    }
}

/// Paths of a heap's folded stacks and speedscope profile at most ([`heap_stacks::stacks`]).
pub(crate) const HEAP_STACKS: usize = 100_000;
/// Paths of a heap's flame graph at most (what is narrower than a pixel is not drawn anyway).
pub(crate) const HEAP_FLAME_PATHS: usize = 10_000;

fn write_heap_folded(input: &Input, _o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
    let stacks = heap_stacks::stacks(&RetentionTree::new(one_heap(input)?), HEAP_STACKS);
    folded::write(
        out,
        &stacks,
        StackUnit::RetainedBytes,
        &|_| String::new(),
        false,
    )?;
    Ok(stacks.len())
}

fn write_heap_flamegraph(input: &Input, o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
    let stacks = heap_stacks::stacks(&RetentionTree::new(one_heap(input)?), HEAP_FLAME_PATHS);
    flamegraph::write(out, &stacks, StackUnit::RetainedBytes, &o.title, &|_| {
        String::new()
    })?;
    Ok(stacks.len())
}

fn write_heap_speedscope(input: &Input, o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
    let stacks = heap_stacks::stacks(&RetentionTree::new(one_heap(input)?), HEAP_STACKS);
    speedscope::write(out, &stacks, StackUnit::RetainedBytes, &o.title, &|_| {
        String::new()
    })?;
    Ok(stacks.len())
}

fn write_heap_html(input: &Input, o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
    html::heap::write(one_heap(input)?, &o.title, &o.html, out)?;
    Ok(0)
}

fn write_heap_diff_html(input: &Input, o: &FileOptions, out: &mut dyn Write) -> io::Result<usize> {
    let Input::HeapDiff(old, new) = input else {
        return Err(io::Error::other("not two heap snapshots"));
    };
    html::heap::write_diff(old, new, &o.title, &o.html, out)?;
    Ok(0)
}

#[cfg(test)]
mod tests;
