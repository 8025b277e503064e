//! A recording's dump options (`record`'s `--dump-on-exception`, `--dump-on-crash` and their
//! type, compression, directory, hold hook and crash report) turned into the
//! [`ExceptionDumps`] and [`CrashCapture`] of one recording or one process tree: where the
//! files go (the given directory, or the trace's), what they are named after (the trace), and
//! the checks made before anything runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use diagnostics_client::DumpType;

use crate::{exception_patterns, Compression, CrashCapture, DumpPlan, DumpSpec, ExceptionDumps};

/// How long one exception dump may take.
const DUMP_TIMEOUT: Duration = Duration::from_secs(300);

/// Why the dump options cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DumpOptionsError {
    /// The directory the dumps would go to does not exist.
    #[error("the dump directory {} does not exist", .0.display())]
    NoDirectory(PathBuf),
    /// The hold hook is not where it was said to be.
    #[error("no hook at {}", .0.display())]
    NoHook(PathBuf),
}

/// The dump options of a recording, as given.
#[derive(Clone, Debug)]
pub struct DumpOptions {
    /// Exception type patterns (each item may be a comma-separated list); none: no dumps on
    /// exceptions.
    pub on_exception: Vec<String>,
    /// At most this many exception dumps.
    pub max: u32,
    /// What each dump holds.
    pub kind: DumpType,
    /// How the dumps are compressed.
    pub compress: Compression,
    /// Where the dumps go (None: the trace's directory).
    pub dir: Option<PathBuf>,
    /// The hold hook (ClrspyHold.dll): hold the throwing thread until its dump is written.
    pub hold_hook: Option<PathBuf>,
    /// createdump's crash report beside each exception dump.
    pub crash_report: bool,
}

impl DumpOptions {
    /// The directory dumps and reports go to: [`DumpOptions::dir`], or the directory of
    /// `trace` (the current one when it has none), made absolute; it must exist.
    pub fn out_dir(&self, trace: Option<&Path>) -> Result<PathBuf, DumpOptionsError> {
        let dir = match &self.dir {
            Some(d) => d.clone(),
            None => trace
                .and_then(Path::parent)
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        if !dir.is_dir() {
            return Err(DumpOptionsError::NoDirectory(dir));
        }
        Ok(dir)
    }

    /// The crash capture of a launched program recorded into `trace` (with a dump when
    /// `dump_on_crash`); None when the trace's directory is missing (the recording then fails
    /// with its own error), an error when the given directory is.
    pub fn crash_capture(
        &self,
        dump_on_crash: bool,
        trace: &Path,
    ) -> Result<Option<CrashCapture>, DumpOptionsError> {
        let dir = match self.out_dir(Some(trace)) {
            Ok(d) => d,
            Err(e) if self.dir.is_some() => return Err(e),
            Err(_) => return Ok(None),
        };
        Ok(Some(CrashCapture {
            dir,
            stem: trace
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "trace".into()),
            dump: dump_on_crash.then_some(self.kind),
            compress: self.compress,
        }))
    }

    /// The dumps on exceptions asked for, None when no exception type was given; `trace` is
    /// the trace file the dumps are named after (None: `dump`, in the current directory).
    pub fn exception_dumps(
        &self,
        trace: Option<&Path>,
    ) -> Result<Option<ExceptionDumps>, DumpOptionsError> {
        let patterns = exception_patterns(&self.on_exception);
        if patterns.is_empty() {
            return Ok(None);
        }
        let dir = self.out_dir(trace)?;
        let stem = trace
            .and_then(Path::file_stem)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "dump".into());
        let plan = DumpPlan {
            dir,
            stem,
            spec: DumpSpec {
                kind: self.kind,
                compress: self.compress,
                crash_report: self.crash_report,
                timeout: DUMP_TIMEOUT,
                max_file_bytes: None,
            },
            max: self.max,
        };
        let Some(dumps) = ExceptionDumps::new(patterns, plan) else {
            return Ok(None);
        };
        match &self.hold_hook {
            Some(hook) if !hook.is_file() => Err(DumpOptionsError::NoHook(hook.clone())),
            Some(hook) => Ok(Some(dumps.hold_with(hook))),
            None => Ok(Some(dumps)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(on_exception: &[&str], dir: Option<&Path>) -> DumpOptions {
        DumpOptions {
            on_exception: on_exception.iter().map(|s| s.to_string()).collect(),
            max: 3,
            kind: DumpType::Triage,
            compress: Compression::Zstd,
            dir: dir.map(Path::to_path_buf),
            hold_hook: None,
            crash_report: true,
        }
    }

    #[test]
    fn dumps_go_beside_the_trace_unless_a_directory_is_given() {
        let d = tempfile::tempdir().unwrap();
        let trace = d.path().join("app.nettrace");
        let o = options(&[], None);
        assert_eq!(o.out_dir(Some(&trace)).unwrap(), d.path());
        let here = std::path::absolute(".").unwrap();
        assert_eq!(o.out_dir(None).unwrap(), here);
        assert_eq!(o.out_dir(Some(Path::new("bare.nettrace"))).unwrap(), here);
        let missing = d.path().join("no/such");
        let e = o.out_dir(Some(&missing.join("t.nettrace"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("the dump directory {} does not exist", missing.display())
        );
    }

    #[test]
    fn exception_dumps_are_named_after_the_trace_and_planned_as_given() {
        let d = tempfile::tempdir().unwrap();
        assert!(options(&[" , "], None)
            .exception_dumps(None)
            .unwrap()
            .is_none());
        let trace = d.path().join("web.nettrace");
        let dumps = options(&["*.IOException,Boom"], None)
            .exception_dumps(Some(&trace))
            .unwrap()
            .unwrap();
        assert_eq!(dumps.patterns(), ["*.IOException", "Boom"]);
        let p = dumps.plan();
        assert_eq!(
            (p.dir.as_path(), p.stem.as_str(), p.max),
            (d.path(), "web", 3)
        );
        assert_eq!(p.spec.kind, DumpType::Triage);
        assert_eq!(p.spec.compress, Compression::Zstd);
        assert!(p.spec.crash_report);
        let unnamed = options(&["X"], Some(d.path()))
            .exception_dumps(None)
            .unwrap();
        assert_eq!(unnamed.unwrap().plan().stem, "dump");
        let mut hooked = options(&["X"], Some(d.path()));
        hooked.hold_hook = Some(d.path().join("ClrspyHold.dll"));
        assert!(matches!(
            hooked.exception_dumps(None),
            Err(DumpOptionsError::NoHook(_))
        ));
    }

    #[test]
    fn a_crash_capture_needs_its_directory_only_when_one_was_given() {
        let d = tempfile::tempdir().unwrap();
        let gone = d.path().join("gone/app.nettrace");
        assert!(options(&[], None)
            .crash_capture(true, &gone)
            .unwrap()
            .is_none());
        assert!(options(&[], Some(&d.path().join("gone")))
            .crash_capture(true, &gone)
            .is_err());
        let c = options(&[], None)
            .crash_capture(false, &d.path().join("app.nettrace"))
            .unwrap()
            .unwrap();
        assert_eq!((c.dir.as_path(), c.stem.as_str()), (d.path(), "app"));
        assert_eq!((c.dump, c.compress), (None, Compression::Zstd));
        let c = options(&[], None)
            .crash_capture(true, &d.path().join("app.nettrace"))
            .unwrap()
            .unwrap();
        assert_eq!(c.dump, Some(DumpType::Triage));
    }
}
