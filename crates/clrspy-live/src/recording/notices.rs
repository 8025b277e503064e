//! What the dumps and a process tree's recordings say as they go, as text: a dump started or
//! written (the delay from the throw, the size before and after compression), the exception
//! dumps' closing line, `record --children`'s notices and closing line, a launched program's
//! crashes and the kernel sampler's fate. The caller prints.

use std::path::Path;

use clrspy_collect::crash::message::CrashFindings;
use clrspy_collect::{DumpNotice, DumpOutcome, StopReason, TreeNotice, TreeOutcome};

use super::KernelNote;

/// Megabytes, one decimal.
pub fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
}

/// The lines of a dump worker's notice (one, or two when a crash report was written beside it).
pub fn dump_notice(n: &DumpNotice<'_>) -> Vec<String> {
    match n {
        DumpNotice::Started {
            n,
            request,
            path,
            delay,
        } => {
            let delay = delay
                .map(|d| format!(", {:.1} ms after the event", d.as_secs_f64() * 1e3))
                .unwrap_or_default();
            vec![format!(
                "Dump {n} ({}{delay}): writing {} ...",
                request.reason,
                path.display()
            )]
        }
        DumpNotice::Done(o) => match &o.result {
            Ok(r) => {
                let how = if r.raw_bytes == r.file_bytes
                    && r.path.extension().is_some_and(|e| e == "dmp")
                {
                    mb(r.raw_bytes)
                } else {
                    format!(
                        "{} raw, {} compressed ({:.0}%){}",
                        mb(r.raw_bytes),
                        mb(r.file_bytes),
                        100.0 * r.file_bytes as f64 / r.raw_bytes.max(1) as f64,
                        if r.streamed {
                            ", compressed as it was written"
                        } else {
                            ", written raw then compressed"
                        }
                    )
                };
                let mut lines = vec![format!(
                    "Dump {}: wrote {} ({how}) in {:.2} s.",
                    o.n,
                    r.path.display(),
                    r.elapsed.as_secs_f64()
                )];
                if let Some(c) = &r.crash_report {
                    lines.push(format!(
                        "Dump {}: threads and stacks in {}",
                        o.n,
                        c.display()
                    ));
                }
                lines
            }
            Err(e) => vec![format!("Dump {}: failed: {e}", o.n)],
        },
    }
}

/// The closing line about a recording's exception dumps (None when none were taken).
pub fn dumps_line(dumped: &[DumpOutcome]) -> Option<String> {
    if dumped.is_empty() {
        return None;
    }
    let ok: Vec<_> = dumped
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    let failed = dumped.len() - ok.len();
    let raw: u64 = ok.iter().map(|r| r.raw_bytes).sum();
    let file: u64 = ok.iter().map(|r| r.file_bytes).sum();
    Some(format!(
        "Exception dumps: {} written ({} raw, {} on disk){}.",
        ok.len(),
        mb(raw),
        mb(file),
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    ))
}

/// The line of a tree recording's notice.
pub fn tree_notice(n: &TreeNotice<'_>) -> String {
    match n {
        TreeNotice::Spawned { pid } => {
            format!("Started the program (pid {pid}); every .NET process it starts is traced")
        }
        TreeNotice::Recording { pid, name, path } => format!(
            "Recording {name} (pid {pid}) from its start to {}",
            path.display()
        ),
        TreeNotice::Outliving(list) => {
            let names: Vec<String> = list.iter().map(|(p, n)| format!("{n} ({p})")).collect();
            format!(
                "The program ended; still running: {}. Their traces end now (with rundown); they run on untraced.",
                names.join(", ")
            )
        }
        TreeNotice::Ended(t) => match &t.result {
            Ok(s) => {
                let why = match s.reason {
                    StopReason::TargetEnded => "it exited",
                    _ if t.outlived_root => "it outlived the program",
                    StopReason::Duration => "the duration passed",
                    StopReason::Requested => "stopped on request",
                    _ => "stopped",
                };
                let events = s
                    .events
                    .map(|e| format!(", {e} events"))
                    .unwrap_or_default();
                format!(
                    "Wrote {} bytes to {}{events} ({why}{}).",
                    s.bytes,
                    s.file().display(),
                    if s.complete {
                        ""
                    } else {
                        "; cut short, no rundown"
                    }
                )
            }
            Err(e) => format!("{} (pid {}): recording failed: {e}", t.name, t.pid),
        },
    }
}

/// A tree recording's closing line: how many processes were traced into `dir`, how many not.
pub fn tree_line(outcome: &TreeOutcome, dir: &Path) -> String {
    let ok = outcome.traces.iter().filter(|t| t.result.is_ok()).count();
    format!(
        "{ok} .NET process{} traced into {}{}.",
        if ok == 1 { "" } else { "es" },
        dir.display(),
        match outcome.untraced {
            0 => String::new(),
            n => format!(
                "; {n} more ran untraced (they started after the program ended, or past the limit)"
            ),
        }
    )
}

/// What a launched program's crashes left, in words: each crash told (its report's text), where
/// its report and its compressed dump are, and what could not be read or written. Whole lines.
pub fn crash_text(found: &CrashFindings) -> String {
    let mut out = String::new();
    for c in &found.crashes {
        let text = match &c.text {
            Ok(t) => t,
            Err(e) => {
                out.push_str(&format!("warning: the crash report is unreadable: {e}\n"));
                continue;
            }
        };
        out.push_str(text);
        out.push_str(&format!("Crash report: {}\n", c.report.display()));
        match &c.dump {
            Some(Ok(d)) => out.push_str(&format!(
                "Crash dump: {} ({} raw, {} on disk, compressed in {:.2} s after the crash)\n",
                d.path.display(),
                mb(d.raw_bytes),
                mb(d.file_bytes),
                d.elapsed.as_secs_f64()
            )),
            Some(Err((raw, e))) => {
                out.push_str(&format!("warning: the crash dump {}: {e}\n", raw.display()))
            }
            None => {}
        }
    }
    if let Some((path, Err(e))) = &found.text_file {
        out.push_str(&format!("warning: cannot write {}: {e}\n", path.display()));
    }
    out
}

/// What became of the kernel sampler asked for or preferred, in one line.
pub fn kernel_line(n: &KernelNote) -> String {
    match n {
        KernelNote::AtStart(rate) => format!("CPU samples from the kernel at {rate} Hz per thread on a CPU, from when the program's runtime starts (the runtime's sampler is off: nothing is suspended)."),
        KernelNote::On(rate, false) => format!("CPU samples from the kernel at {rate} Hz per thread on a CPU (the runtime's sampler is off: nothing is suspended)."),
        KernelNote::On(rate, true) => format!("CPU samples from the kernel at {rate} Hz per thread on a CPU (the runtime's sampler is off: nothing is suspended); {}.", clrspy_collect::kernel::USER_MODE_ONLY),
        KernelNote::Runtime(why) => format!("{}.", clrspy_collect::kernel::runtime_instead(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megabytes_have_one_decimal() {
        assert_eq!(mb(3 << 19), "1.5 MB");
        assert_eq!(mb(0), "0.0 MB");
    }

    #[test]
    fn no_dumps_no_closing_line() {
        assert_eq!(dumps_line(&[]), None);
    }

    #[test]
    fn the_tree_line_counts_processes_in_the_singular_and_plural() {
        let mut o = TreeOutcome {
            pid: 1,
            status: None,
            terminated_by_clrspy: false,
            traces: Vec::new(),
            untraced: 2,
        };
        assert_eq!(
            tree_line(&o, Path::new("/t")),
            "0 .NET processes traced into /t; 2 more ran untraced (they started after the program ended, or past the limit)."
        );
        o.untraced = 0;
        assert_eq!(
            tree_line(&o, Path::new("/t")),
            "0 .NET processes traced into /t."
        );
    }
}
