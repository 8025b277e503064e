//! `clrspy heap watch`: snapshots of a live process `--every` apart, what grew in each interval,
//! and at the end the types that grew in every interval with what holds them in the last
//! snapshot (the leak workflow in one command). The snapshots are taken as `clrspy gcdump`
//! takes them; the loop is clrspy-live's `heap::watch`, what grew clrspy-analysis' `heap::growth`,
//! printed by clrspy-export's heap watch view; this file prints.

use std::path::PathBuf;

use clrspy_export::report::{write_json, TextStyle};
use clrspy_export::views::heap::{watch_view, write_watch_interval};
use clrspy_export::views::View;
use clrspy_live::heap::watch::{watch, WatchEvent, WatchSpec};
use clrspy_values::human_bytes;

use super::heap_snap;
use crate::cli::HeapWatchArgs;
use crate::output::{CliError, CliResult};

/// Runs `clrspy heap watch`.
pub fn run(a: &HeapWatchArgs) -> CliResult<std::process::ExitCode> {
    let (endpoint, label) = a.process.resolve("heap watch")?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    heap_snap::announce(&label, endpoint.pid, a.timeout, a.yes)?;
    eprintln!(
        "{} snapshots, {:.0} s apart, into {} (Ctrl+C ends early and keeps those taken).",
        a.count,
        a.every.as_secs_f64(),
        dir.display()
    );
    let stop = clrspy_cli::stop_signal();
    let spec = WatchSpec {
        endpoint: &endpoint,
        dir: &dir,
        every: a.every,
        count: a.count,
        timeout: a.timeout,
        stop,
    };
    let mut text = std::io::stdout().lock();
    let mut progress = heap_snap::progress_printer();
    let w = watch(&spec, &mut |e| match e {
        WatchEvent::Snap(e) => {
            progress(e);
            Ok(())
        }
        WatchEvent::Taken { index, shot } => {
            eprintln!(
                "snapshot {}/{}: {} ({} objects, {}) at {:.1} s",
                index + 1,
                a.count,
                shot.file.display(),
                shot.objects,
                human_bytes(shot.bytes),
                shot.at.as_secs_f64()
            );
            Ok(())
        }
        WatchEvent::Interval { index, growth } if !a.json => {
            write_watch_interval(&mut text, index as usize, growth, a.top)
        }
        WatchEvent::Interval { .. } => Ok(()),
    })?;
    if w.stopped_early {
        eprintln!(
            "Stopped after {} of {} snapshots (kept).",
            w.shots.len(),
            a.count
        );
    }
    let view = watch_view(
        endpoint.pid,
        &w.shots,
        &w.intervals,
        w.last.as_ref(),
        a.top,
        w.stopped_early,
    );
    if a.json {
        write_json(&mut text, &view.json())?;
    } else {
        view.write_text(&mut text, &TextStyle::default())?;
    }
    match w.failure {
        Some(e) => Err(heap_snap::snap_error(&label, e)),
        None => Ok(std::process::ExitCode::SUCCESS),
    }
}
