//! What a conversion of a trace file is called and says: the output's default name beside the
//! trace, the title viewers show, and why a stack view came out empty (and which metric would
//! not be).

use std::path::{Path, PathBuf};

use clrspy_analysis::trace_file::trace_stem;
use clrspy_analysis::{Analysis, Metric, StackFilter};

use crate::Format;

/// The default output of converting `trace` to `format`: beside it, its stem with the
/// format's extension (`app.nettrace` → `app.speedscope.json`).
pub fn default_output(trace: &Path, format: Format) -> PathBuf {
    trace.with_file_name(format!("{}.{}", trace_stem(trace), format.extension()))
}

/// The title of a conversion: the trace's file name and the metric (`app.nettrace — cpu`).
pub fn title(trace: &Path, metric: Metric) -> String {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name} — {}", metric.name())
}

/// Why the view of `metric` has no stacks, the profile that records them, and the metric
/// that has some, if one does.
pub fn no_stacks_message(a: &Analysis, metric: Metric, filter: &StackFilter) -> String {
    let record = if metric == Metric::Alloc {
        "alloc"
    } else {
        "cpu"
    };
    let mut msg = format!(
        "the trace has no {} stacks: nothing to draw (record with --profile {record})",
        metric.name()
    );
    let other = Metric::ALL
        .into_iter()
        .find(|&m| m != metric && !crate::weighted_stacks(a, m, filter).is_empty());
    if let Some(m) = other {
        msg.push_str(&format!(
            "; it has {} stacks: --metric {}",
            m.name(),
            m.name()
        ));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_titles_come_from_the_trace() {
        let p = Path::new("/t/app.nettrace.zip");
        assert_eq!(
            default_output(p, Format::Speedscope),
            PathBuf::from(format!("/t/app.{}", Format::Speedscope.extension()))
        );
        assert_eq!(title(p, Metric::Alloc), "app.nettrace.zip — alloc");
    }

    #[test]
    fn an_empty_trace_says_how_to_record_stacks() {
        let w = nettrace::TraceWriter::new(Vec::new(), nettrace::WriterOptions::default());
        let bytes = w.unwrap().finish().unwrap();
        let mut r = nettrace::TraceReader::new(&bytes).unwrap();
        let a = Analysis::run(&mut r, Default::default(), &mut |_| ()).unwrap();
        let f = StackFilter::default();
        assert_eq!(
            no_stacks_message(&a, Metric::Alloc, &f),
            "the trace has no alloc stacks: nothing to draw (record with --profile alloc)"
        );
        assert!(no_stacks_message(&a, Metric::Wait, &f).ends_with("(record with --profile cpu)"));
    }
}
