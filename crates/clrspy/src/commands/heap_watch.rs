//! `clrspy heap watch`: snapshots of a live process `--every` apart, what grew in each interval,
//! and at the end the types that grew in every interval with what holds them in the last
//! snapshot (the leak workflow in one command). The snapshots are taken as `clrspy gcdump`
//! takes them (heap_snap); what grew is clrspy-analysis' `heap::growth`, printed by
//! clrspy-export's heap watch view; this file runs the loop.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clrspy_analysis::heap::{diff::TypeDelta, HeapModel};
use clrspy_collect::{Resolved, StopSignal};
use clrspy_export::report::{write_json, TextStyle};
use clrspy_export::views::heap::{watch_view, write_watch_interval, WatchShot};
use clrspy_export::views::View;
use clrspy_values::human_bytes;

use super::heap_snap;
use super::record::resolve_target;
use crate::cli::HeapWatchArgs;
use crate::output::{CliError, CliResult};

/// Runs `clrspy heap watch`.
pub fn run(a: &HeapWatchArgs) -> CliResult<std::process::ExitCode> {
    if a.process_id.is_none() && a.name.is_none() {
        return Err(CliError::new("heap watch needs a process (-p PID or -n NAME)").code(2));
    }
    let target = resolve_target(&crate::cli::TargetArgs {
        process_id: a.process_id,
        name: a.name.clone(),
        command: Vec::new(),
    })?;
    let Resolved::Attach { endpoint, label } = target else {
        return Err(CliError::new("heap watch attaches to a running process").code(2));
    };
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
    let stop = heap_snap::stop_signal();
    let stamp = clrspy_collect::utc_stamp();
    let t0 = Instant::now();
    let mut shots: Vec<WatchShot> = Vec::new();
    let mut intervals: Vec<Vec<TypeDelta>> = Vec::new();
    let mut prev: Option<HeapModel> = None;
    let mut failure = None;
    let mut text = std::io::stdout().lock();
    for i in 0..a.count {
        if !wait_until(t0 + a.every * i, stop) {
            break;
        }
        let file = dir.join(format!("{}_{stamp}_{}.gcdump", endpoint.pid, i + 1));
        let taken = match heap_snap::take(&endpoint, &label, &file, a.timeout, stop) {
            Ok(t) => t,
            Err(e) => {
                if stop.count() == 0 {
                    failure = Some(e);
                }
                break;
            }
        };
        let at = t0.elapsed();
        let model = HeapModel::new(taken.dump.graph);
        eprintln!(
            "snapshot {}/{}: {} ({} objects, {}) at {:.1} s",
            i + 1,
            a.count,
            file.display(),
            model.objects(),
            human_bytes(model.bytes()),
            at.as_secs_f64()
        );
        shots.push(WatchShot {
            file,
            objects: model.objects(),
            bytes: model.bytes(),
            at,
        });
        if let Some(p) = &prev {
            let d = clrspy_analysis::heap::diff::diff(p, &model);
            if !a.json {
                write_watch_interval(&mut text, i as usize, &d, a.top)?;
            }
            intervals.push(d);
        }
        prev = Some(model);
        if stop.count() > 0 {
            break;
        }
    }
    let stopped_early = stop.count() > 0;
    if stopped_early {
        eprintln!(
            "Stopped after {} of {} snapshots (kept).",
            shots.len(),
            a.count
        );
    }
    let view = watch_view(
        endpoint.pid,
        &shots,
        &intervals,
        prev.as_ref(),
        a.top,
        stopped_early,
    );
    if a.json {
        write_json(&mut text, &view.json())?;
    } else {
        view.write_text(&mut text, &TextStyle::default())?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(std::process::ExitCode::SUCCESS),
    }
}

/// Sleeps until `when`; false when a stop was requested first.
fn wait_until(when: Instant, stop: &StopSignal) -> bool {
    while Instant::now() < when {
        if stop.count() > 0 {
            return false;
        }
        std::thread::sleep((when - Instant::now()).min(Duration::from_millis(100)));
    }
    stop.count() == 0
}
