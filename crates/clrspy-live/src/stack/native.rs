//! `--native`: every thread's whole stack (native and managed frames) from the runtime's
//! crash report. The runtime runs createdump, which pauses the process while it walks every
//! thread and writes a small dump and `<dump>.crashreport.json` beside it; both are deleted
//! once read. Native frames are named by the process's mappings and their files' symbols.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clrspy_analysis::thread_stacks::{StackSnapshot, ThreadStack};
use clrspy_collect::crash::threads::{frame_names, native_frame_names, report_threads};
use clrspy_collect::{Compression, DumpSpec};
use diagnostics_client::{DumpType, Endpoint};

/// What adding the native frames took.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeReport {
    /// From asking for the report to its frames in the snapshot (the process is paused for
    /// most of it).
    pub elapsed: Duration,
    /// Threads the report listed.
    pub threads: usize,
}

/// Deletes the files it holds when dropped.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Replaces the frames of every thread of `snap` with its whole stack from the runtime's
/// crash report (innermost first: native frames as `module!function` or `module+0xADDR`,
/// managed frames by method and signature); threads only the report lists are added. The
/// process is paused while the report is written; `timeout` bounds it. The files are written
/// in the temporary directory and deleted.
pub fn add_native_frames(
    endpoint: &Endpoint,
    snap: &mut StackSnapshot,
    timeout: Duration,
) -> Result<NativeReport, String> {
    let started = Instant::now();
    let pid = endpoint.pid;
    let dump = std::env::temp_dir().join(format!("clrspy-stack-{pid}-{}.dmp", std::process::id()));
    let report_file = PathBuf::from(format!("{}.crashreport.json", dump.display()));
    // The dump, its report, and the copy of the runtime's library written beside it.
    let _cleanup = Cleanup(vec![
        dump.clone(),
        report_file.clone(),
        clrspy_collect::dac_sidecar(&dump),
    ]);
    let path = clrspy_collect::dump_path(pid, Some(&dump)).map_err(|e| e.to_string())?;
    let spec = DumpSpec {
        kind: DumpType::Normal,
        compress: Compression::None,
        crash_report: true,
        timeout,
        max_file_bytes: None,
    };
    let written = clrspy_collect::write_dump_file(endpoint, pid, &path, &spec)
        .map_err(|e| format!("the runtime's crash report: {e}"))?;
    let report = written.crash_report.unwrap_or(report_file);
    let bytes = read(&report)?;
    let threads = report_threads(&bytes).map_err(|e| format!("{}: {e}", report.display()))?;
    let names = native_frame_names(pid, &threads);
    let mut by_id: HashMap<u64, usize> = snap
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.thread_id, i))
        .collect();
    // Threads the report gives no frames (createdump walks none for a thread it paused
    // running managed code) keep the managed frames the runtime's sample gave them.
    let mut kept = 0usize;
    for t in &threads {
        let frames = frame_names(t, &names);
        if frames.is_empty()
            && by_id
                .get(&t.thread_id)
                .and_then(|&i| snap.threads.get(i))
                .is_some_and(|s| s.managed())
        {
            kept += 1;
            continue;
        }
        let i = *by_id.entry(t.thread_id).or_insert_with(|| {
            snap.threads.push(ThreadStack {
                thread_id: t.thread_id,
                ..ThreadStack::default()
            });
            snap.threads.len() - 1
        });
        if let Some(s) = snap.threads.get_mut(i) {
            s.frames = frames;
        }
    }
    if kept > 0 {
        snap.notes.push(format!(
            "{kept} thread{} running managed code had no frames in the crash report: {} the managed frames of the runtime's sample, no native ones",
            if kept == 1 { "" } else { "s" },
            if kept == 1 { "it shows" } else { "they show" }
        ));
    }
    snap.sort();
    Ok(NativeReport {
        elapsed: started.elapsed(),
        threads: threads.len(),
    })
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| {
        format!(
            "the runtime wrote no crash report at {} ({e}); in a container the report is in the target's /tmp",
            path.display()
        )
    })
}
