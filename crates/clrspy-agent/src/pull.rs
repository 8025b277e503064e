//! Continuous-profiling pull: a few seconds of one process recorded with a named profile (`cpu` or
//! `alloc`) into a temporary trace in the agent's own folder, read once, and written as gzip pprof
//! by clrspy-export's registry — what `clrspy record --profile P` and then `clrspy convert --to
//! pprof` give. Blocking: run it on a blocking thread. The trace is removed however the work ends;
//! a stop request ends the recording early and then nothing is converted.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::StatusCode;
use clr_events::provider_spec::ProviderSpec;
use clrspy_analysis::trace_file::OpenTrace;
use clrspy_analysis::{Analysis, Options};
use clrspy_collect::{ChildOutput, Resolved, RunObserver, Started, StopSignal};
use clrspy_export::{export, ExportOptions, Format, Metric};
use clrspy_live::recording::{Extras, RunSpec};
use diagnostics_client::{Endpoint, SessionConfig};

use crate::error::ApiError;

/// The default and the bounds of `seconds`, as Go's `net/http/pprof` takes it.
pub(crate) const DEFAULT_SECONDS: u64 = 30;
/// The longest recording a request may ask for.
pub(crate) const MAX_SECONDS: u64 = 300;

/// Which profile a pull records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PullKind {
    /// `/debug/pprof/profile`: the `cpu` profile, weighed by CPU time (waiting left out).
    Cpu,
    /// `/debug/pprof/allocs`: the `alloc` profile, weighed by allocated bytes and objects.
    Allocs,
}

impl PullKind {
    /// The recording profile (`clrspy record --list-profiles`).
    pub(crate) fn profile(self) -> &'static str {
        match self {
            PullKind::Cpu => "cpu",
            PullKind::Allocs => "alloc",
        }
    }

    /// What the pprof samples weigh.
    pub(crate) fn metric(self) -> Metric {
        match self {
            PullKind::Cpu => Metric::Cpu,
            PullKind::Allocs => Metric::Alloc,
        }
    }
}

/// Parses `seconds`: absent is [`DEFAULT_SECONDS`], else an integer 1 to [`MAX_SECONDS`].
pub(crate) fn seconds(s: Option<&str>) -> Result<u64, ApiError> {
    let Some(s) = s else {
        return Ok(DEFAULT_SECONDS);
    };
    let ok = !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
    match s.parse::<u64>() {
        Ok(n) if ok && (1..=MAX_SECONDS).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "seconds must be a whole number from 1 to {MAX_SECONDS}"
        ))),
    }
}

/// One pull: what to record, of which process, for how long, and where the trace goes.
pub(crate) struct Pull<'a> {
    /// Which profile.
    pub(crate) kind: PullKind,
    /// The process.
    pub(crate) endpoint: Endpoint,
    /// How long to record.
    pub(crate) duration: Duration,
    /// The agent's folder (the temporary trace is made there, under a name of the agent's).
    pub(crate) folder: &'a Path,
    /// Stops the recording early (the client went away); nothing is converted then.
    pub(crate) stop: &'a StopSignal,
}

/// The temporary trace, removed when dropped.
pub(crate) struct TempTrace(pub(crate) PathBuf);

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Tells nothing: the agent has no console.
struct Quiet;

impl RunObserver for Quiet {
    fn started(&mut self, _what: Started<'_>) {}
}

/// A trace name no other pull of this agent uses (`what`: what it is for, e.g. `pprof-cpu`).
pub(crate) fn temp_name(what: &str, pid: u32) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{what}-{pid}-{}-{n}.nettrace", std::process::id())
}

/// Records and converts: the gzip pprof bytes, or `None` when stopped early.
pub(crate) fn pull(p: &Pull<'_>) -> Result<Option<Vec<u8>>, ApiError> {
    let pid = p.endpoint.pid;
    let providers = clr_events::provider_spec::resolve(Some(p.kind.profile()), None, None, None)
        .map_err(|e| ApiError::internal(format!("the {} profile: {e}", p.kind.profile())))?;
    let rec = Recording {
        providers,
        endpoint: p.endpoint.clone(),
        duration: p.duration,
        file: p
            .folder
            .join(temp_name(&format!("pprof-{}", p.kind.profile()), pid)),
        stop: p.stop,
    };
    let Some(trace) = record(rec)? else {
        return Ok(None);
    };
    let out = convert(&trace.0, p.kind.metric()).map(Some);
    give_back_memory();
    out
}

/// One recording into a temporary trace of the agent's.
pub(crate) struct Recording<'a> {
    /// What to enable.
    pub(crate) providers: Vec<ProviderSpec>,
    /// The process.
    pub(crate) endpoint: Endpoint,
    /// How long.
    pub(crate) duration: Duration,
    /// The trace's path (a name of the agent's, in its folder; removed with the result).
    pub(crate) file: PathBuf,
    /// Stops the recording early; then there is no trace.
    pub(crate) stop: &'a StopSignal,
}

/// Records as `r` says: the trace (removed when dropped), or `None` when stopped early.
pub(crate) fn record(r: Recording<'_>) -> Result<Option<TempTrace>, ApiError> {
    let pid = r.endpoint.pid;
    let config = SessionConfig {
        providers: r
            .providers
            .into_iter()
            .map(clrspy_collect::session_provider)
            .collect(),
        ..SessionConfig::default()
    };
    // A name of the agent's that must not exist yet (the recording itself would truncate it).
    clrspy_collect::private::create_new_private(&r.file)
        .map_err(|e| ApiError::internal(format!("the agent's folder: {e}")))?;
    let trace = TempTrace(r.file);
    let target = Resolved::Attach {
        endpoint: r.endpoint,
        label: format!("pid {pid}"),
    };
    let gateway = |what: &str, e: &dyn std::fmt::Display| {
        ApiError::new(StatusCode::BAD_GATEWAY, format!("{what} pid {pid}: {e}"))
    };
    let mut extras = Extras::default();
    let prepared = extras
        .prepare(&target, &config, Box::new(|_| {}), &mut |_| {})
        .map_err(|e| gateway("recording", &e))?;
    let spec = RunSpec {
        output: Some(trace.0.clone()),
        duration: Some(r.duration),
        thread_cpu: Some(clrspy_collect::procstat::THREAD_CPU_INTERVAL),
        stop: r.stop,
        child_stdout: ChildOutput::Inherit,
    };
    let outcome = prepared.run(target, spec, &mut Quiet);
    extras.finish();
    outcome.map_err(|e| gateway("recording", &e))?;
    if r.stop.count() > 0 {
        return Ok(None);
    }
    Ok(Some(trace))
}

/// The analysis of a recording takes tens of MB for a moment: hand the freed pages back to the
/// system, so the agent returns to its idle size between pulls.
pub(crate) fn give_back_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator; no pointer is touched.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The trace at `path` as gzip pprof weighed by `metric`.
fn convert(path: &Path, metric: Metric) -> Result<Vec<u8>, ApiError> {
    let failed = |e: &dyn std::fmt::Display| ApiError::internal(format!("reading the trace: {e}"));
    let trace = OpenTrace::open(path).map_err(|e| failed(&e))?;
    let mut reader = trace.reader().map_err(|e| failed(&e))?;
    let start_unix_ns = reader.header().start_unix_ns();
    let a = Analysis::run(&mut reader, Options::default(), &mut |_| {}).map_err(|e| failed(&e))?;
    let options = ExportOptions {
        metric,
        start_unix_ns: Some(start_unix_ns),
        ..ExportOptions::default()
    };
    let again = || {
        trace
            .reader()
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    let mut out = Vec::new();
    export(Format::Pprof, &a, &options, again, &mut out)
        .map_err(|e| ApiError::internal(format!("writing the profile: {e}")))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_checked() {
        assert_eq!(seconds(None).unwrap(), DEFAULT_SECONDS);
        assert_eq!(seconds(Some("1")).unwrap(), 1);
        assert_eq!(seconds(Some("300")).unwrap(), 300);
        for bad in [
            "",
            "0",
            "301",
            "-1",
            "+5",
            "1.5",
            "1e2",
            "0300",
            "abc",
            "99999999999",
        ] {
            assert_eq!(seconds(Some(bad)).unwrap_err().status, 400, "{bad:?}");
        }
    }

    #[test]
    fn kinds_name_real_profiles() {
        for k in [PullKind::Cpu, PullKind::Allocs] {
            let p = clr_events::provider_spec::resolve(Some(k.profile()), None, None, None);
            assert!(p.is_ok_and(|p| !p.is_empty()), "{k:?}");
        }
        assert_eq!(PullKind::Allocs.metric(), Metric::Alloc);
    }

    /// A committed trace with CPU samples, converted as a pull converts its recording.
    #[test]
    fn a_trace_becomes_gzip_pprof_of_the_metric() {
        use std::io::Read;
        let trace =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../nettrace/tests/data/perf.nettrace");
        let has =
            |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());
        for (metric, types) in [
            (Metric::Cpu, ["samples", "cpu", "nanoseconds"]),
            (Metric::Alloc, ["alloc_objects", "alloc_space", "bytes"]),
        ] {
            let gz = convert(&trace, metric).unwrap();
            assert_eq!(gz.get(..2), Some(&[0x1f, 0x8b][..]), "gzip");
            let mut raw = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut raw)
                .unwrap();
            for t in types {
                assert!(has(&raw, t), "{metric:?}: no {t}");
            }
        }
        let cpu = convert(&trace, Metric::Cpu).unwrap();
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&cpu[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert!(!has(&raw, "wait"), "waiting is not in the CPU profile");
        // Not a trace: an error, not a panic.
        let e = convert(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("Cargo.toml")
                .as_path(),
            Metric::Cpu,
        )
        .unwrap_err();
        assert_eq!(e.status, 500);
    }

    #[test]
    fn names_differ_and_stay_in_the_folder() {
        let (a, b) = (temp_name("pprof-cpu", 7), temp_name("pprof-cpu", 7));
        assert_ne!(a, b);
        assert!(!a.contains('/') && a.ends_with(".nettrace"));
    }
}
