//! `/reports`' work: a few seconds of one process recorded with the providers the asked reports
//! need (clrspy-export's report registry: `providers_for`, as `clrspy profile` chooses them),
//! analysed with the models they read, and each report's JSON view (`clrspy report TRACE KIND
//! --json`). Blocking: run it on a blocking thread. The trace is a temporary one in the agent's
//! folder, removed however the work ends.

use std::path::Path;
use std::time::Duration;

use clrspy_analysis::trace_file::OpenTrace;
use clrspy_analysis::{Analysis, Options};
use clrspy_collect::StopSignal;
use clrspy_export::report::{self, ReportOptions};
use clrspy_export::ReportKind;
use diagnostics_client::Endpoint;
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::pull::{give_back_memory, record, temp_name, Recording};

/// The default of `seconds` for `/reports`.
pub(crate) const DEFAULT_SECONDS: u64 = 10;

/// The report names the registry knows, comma-separated.
pub(crate) fn known() -> String {
    ReportKind::ALL
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses `kind=K[,K...]`: names from the report registry (any case), each once, in the
/// order given; absent is `summary`. An unknown name is a 400 listing the known ones.
pub(crate) fn kinds(s: Option<&str>) -> Result<Vec<ReportKind>, ApiError> {
    let Some(s) = s else {
        return Ok(vec![ReportKind::Summary]);
    };
    let mut out = Vec::new();
    for name in s.split(',') {
        let k = name.parse::<ReportKind>().map_err(|_| {
            let shown = if crate::params::name(name).is_ok() {
                format!("unknown report {name:?}")
            } else {
                "unknown report".to_string()
            };
            ApiError::bad_request(format!("{shown} (known: {})", known()))
        })?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// Parses `seconds`: absent is [`DEFAULT_SECONDS`], else as the profile pulls take it.
pub(crate) fn seconds(s: Option<&str>) -> Result<u64, ApiError> {
    match s {
        None => Ok(DEFAULT_SECONDS),
        some => crate::pull::seconds(some),
    }
}

/// One `/reports` request's work.
pub(crate) struct ReportPull<'a> {
    /// The reports.
    pub(crate) kinds: Vec<ReportKind>,
    /// The process.
    pub(crate) endpoint: Endpoint,
    /// How long to record.
    pub(crate) duration: Duration,
    /// The agent's folder (the temporary trace goes there).
    pub(crate) folder: &'a Path,
    /// Stops the recording early (the client went away); nothing is analysed then.
    pub(crate) stop: &'a StopSignal,
}

/// Records and analyses: each report's JSON under its name, or `None` when stopped early.
pub(crate) fn reports(p: ReportPull<'_>) -> Result<Option<Map<String, Value>>, ApiError> {
    let rec = Recording {
        providers: report::providers_for(&p.kinds),
        endpoint: p.endpoint.clone(),
        duration: p.duration,
        file: p.folder.join(temp_name("report", p.endpoint.pid)),
        stop: p.stop,
    };
    let Some(trace) = record(rec)? else {
        return Ok(None);
    };
    let out = analyse(&trace.0, &p.kinds).map(Some);
    give_back_memory();
    out
}

/// The reports `kinds` of the trace at `path`, each under its name.
fn analyse(path: &Path, kinds: &[ReportKind]) -> Result<Map<String, Value>, ApiError> {
    let failed = |e: &dyn std::fmt::Display| ApiError::internal(format!("reading the trace: {e}"));
    let trace = OpenTrace::open(path).map_err(|e| failed(&e))?;
    let mut reader = trace.reader().map_err(|e| failed(&e))?;
    let options = Options {
        models: report::models_for(kinds),
        ..Options::default()
    };
    let a = Analysis::run(&mut reader, options, &mut |_| {}).map_err(|e| failed(&e))?;
    let o = ReportOptions {
        trace: "recording".into(),
        ..ReportOptions::default()
    };
    Ok(kinds
        .iter()
        .map(|k| (k.name().to_string(), report::build(*k, &a, &o).json()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_registry_s() {
        assert_eq!(kinds(None).unwrap(), vec![ReportKind::Summary]);
        assert_eq!(
            kinds(Some("cpu,GC,cpu")).unwrap(),
            vec![ReportKind::Cpu, ReportKind::Gc]
        );
        assert_eq!(kinds(Some("findings")).unwrap(), vec![ReportKind::Findings]);
        for bad in ["", "cpu,", "nope", "../cpu", "/etc/passwd", "cpu,.."] {
            let e = kinds(Some(bad)).unwrap_err();
            assert_eq!(e.status, 400, "{bad:?}");
            assert!(e.message.contains("known: summary, cpu"), "{}", e.message);
            assert!(!e.message.contains('/'), "{}", e.message);
        }
        assert_eq!(seconds(None).unwrap(), DEFAULT_SECONDS);
        assert_eq!(seconds(Some("3")).unwrap(), 3);
        assert_eq!(seconds(Some("301")).unwrap_err().status, 400);
    }

    /// A committed trace with CPU samples: its cpu report names methods, as
    /// `clrspy report TRACE cpu --json` does.
    #[test]
    fn a_trace_gives_the_reports_json() {
        let trace =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../nettrace/tests/data/perf.nettrace");
        let r = analyse(&trace, &[ReportKind::Cpu, ReportKind::Gc]).unwrap();
        assert_eq!(r.keys().collect::<Vec<_>>(), ["cpu", "gc"]);
        let cpu = r["cpu"].to_string();
        assert!(cpu.len() > 100, "{cpu}");
        let o = Options {
            models: report::models_for(&[ReportKind::Cpu]),
            ..Options::default()
        };
        let t = OpenTrace::open(&trace).unwrap();
        let a = Analysis::run(&mut t.reader().unwrap(), o, &mut |_| {}).unwrap();
        let want = report::build(
            ReportKind::Cpu,
            &a,
            &ReportOptions {
                trace: "recording".into(),
                ..ReportOptions::default()
            },
        )
        .json();
        assert_eq!(r["cpu"], want);
        // Not a trace: an error, not a panic.
        let e = analyse(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("Cargo.toml")
                .as_path(),
            &[ReportKind::Cpu],
        )
        .unwrap_err();
        assert_eq!(e.status, 500);
    }
}
