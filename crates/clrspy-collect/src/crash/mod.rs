//! Crashes of launched programs: the runtime's own crash handling is turned on through the
//! environment (`DOTNET_DbgEnableMiniDump`, `DOTNET_EnableCrashReport`, and either a dump type
//! or `DOTNET_EnableCrashReportOnly`), so at an unhandled exception the runtime runs createdump,
//! which writes `<name>.crashreport.json` (and the dump, when asked) under the output
//! directory. While createdump works the process is still alive, and the runtime streams the
//! fatal exception's events to clrspy: the trace keeps the cause. Afterwards the report is read
//! for the crashed thread, the exception's type and its stack.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use diagnostics_client::DumpType;

pub mod core;
pub mod files;
pub mod message;
pub mod threads;

use crate::dumpfile::Compression;

/// How a launched program's crashes are captured.
#[derive(Clone, Debug)]
pub struct CrashCapture {
    /// Where the reports (and dumps) go; must exist.
    pub dir: PathBuf,
    /// Names start with `<stem>_crash_<pid>`.
    pub stem: String,
    /// Also write a dump of this type (None: the report only).
    pub dump: Option<DumpType>,
    /// How the dump is compressed once the program is gone (the runtime writes it raw).
    pub compress: Compression,
}

/// The runtime's value of `DOTNET_DbgMiniDumpType` for a dump type.
fn minidump_type(kind: DumpType) -> &'static str {
    match kind {
        DumpType::Normal => "1",
        DumpType::WithHeap => "2",
        DumpType::Triage => "3",
        DumpType::Full => "4",
    }
}

impl CrashCapture {
    /// The variables for the program, or none when the user's environment already configures
    /// the runtime's crash dumps (theirs win).
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        if std::env::var_os("DOTNET_DbgEnableMiniDump").is_some()
            || std::env::var_os("COMPlus_DbgEnableMiniDump").is_some()
        {
            return Vec::new();
        }
        let name = self.dir.join(format!("{}_crash_%p.dmp", self.stem));
        let mut v: Vec<(OsString, OsString)> = vec![
            ("DOTNET_DbgEnableMiniDump".into(), "1".into()),
            ("DOTNET_EnableCrashReport".into(), "1".into()),
            ("DOTNET_DbgMiniDumpName".into(), name.into_os_string()),
        ];
        match self.dump {
            Some(kind) => v.push(("DOTNET_DbgMiniDumpType".into(), minidump_type(kind).into())),
            None => v.push(("DOTNET_EnableCrashReportOnly".into(), "1".into())),
        }
        v
    }

    /// The dump createdump writes for process `pid` (raw).
    pub fn dump_path(&self, pid: u32) -> PathBuf {
        self.dir.join(format!("{}_crash_{pid}.dmp", self.stem))
    }

    /// The crash report of process `pid`.
    pub fn report_path(&self, pid: u32) -> PathBuf {
        self.dir
            .join(format!("{}_crash_{pid}.dmp.crashreport.json", self.stem))
    }

    /// The reports written under this capture (any process of the tree), sorted by name.
    pub fn reports(&self) -> Vec<(u32, PathBuf)> {
        let prefix = format!("{}_crash_", self.stem);
        let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let pid = name
                    .strip_prefix(&prefix)?
                    .strip_suffix(".dmp.crashreport.json")?
                    .parse()
                    .ok()?;
                Some((pid, e.path()))
            })
            .collect();
        v.sort();
        v
    }
}

/// The crashed thread of a crash report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// The report file.
    pub path: PathBuf,
    /// The process's name as the runtime gives it.
    pub process_name: String,
    /// The crashed thread's id (the OS thread id).
    pub thread_id: Option<u64>,
    /// The unhandled exception's type (None for a native crash).
    pub exception_type: Option<String>,
    /// Its HRESULT, as the report writes it (`0x80131500`).
    pub hresult: Option<String>,
    /// The crashed thread's stack, innermost first: managed frames by method name, native
    /// frames as `module!symbol` (or `module+offset`).
    pub stack: Vec<String>,
}

/// A string field that may be a number in the JSON too.
fn text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parses `0x1a2b` or `123`.
fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// One frame of the report, in words.
fn frame(f: &serde_json::Value) -> Option<String> {
    if let Some(m) = f.get("method_name").and_then(text) {
        return Some(m);
    }
    let module = f
        .get("native_module")
        .and_then(text)
        .unwrap_or_else(|| "?".into());
    match f.get("unmanaged_name").and_then(text) {
        Some(sym) => Some(format!("{module}!{sym}")),
        None => Some(format!(
            "{module}+{}",
            f.get("native_image_offset")
                .and_then(text)
                .unwrap_or_else(|| "?".into())
        )),
    }
}

impl CrashReport {
    /// Reads the report at `path` (createdump's `crashreport.json`).
    pub fn read(path: &Path) -> std::result::Result<CrashReport, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&bytes, path)
    }

    /// Parses a report's bytes.
    pub fn parse(bytes: &[u8], path: &Path) -> std::result::Result<CrashReport, String> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("{}: not a crash report: {e}", path.display()))?;
        let payload = v
            .get("payload")
            .ok_or_else(|| format!("{}: no payload", path.display()))?;
        let mut r = CrashReport {
            path: path.to_path_buf(),
            process_name: payload
                .get("process_name")
                .and_then(text)
                .unwrap_or_default(),
            ..CrashReport::default()
        };
        let threads = payload
            .get("threads")
            .and_then(|t| t.as_array())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let crashed = threads
            .iter()
            .find(|t| t.get("crashed").and_then(text).as_deref() == Some("true"));
        if let Some(t) = crashed {
            r.thread_id = t
                .get("native_thread_id")
                .and_then(text)
                .and_then(|s| number(&s));
            r.exception_type = t.get("managed_exception_type").and_then(text);
            r.hresult = t.get("managed_exception_hresult").and_then(text);
            r.stack = t
                .get("stack_frames")
                .and_then(|f| f.as_array())
                .map(|f| f.iter().filter_map(frame).collect())
                .unwrap_or_default();
        }
        Ok(r)
    }

    /// The managed frames only (what a .NET stack trace shows), innermost first.
    pub fn managed_stack(&self) -> Vec<&str> {
        self.stack
            .iter()
            .filter(|f| !f.contains('!') && !f.contains('+'))
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"{"payload":{"protocol_version":"1.0.0","process_name":"Workloads.dll",
      "threads":[
        {"is_managed":"false","crashed":"false","native_thread_id":"0x10","stack_frames":[]},
        {"is_managed":"true","crashed":"true","managed_exception_type":"Workloads.CrashException",
         "managed_exception_hresult":"0x80131500","native_thread_id":"0x3ea9",
         "stack_frames":[
           {"is_managed":"false","unmanaged_name":"wait4","native_module":"libc.so.6"},
           {"is_managed":"false","native_module":"libcoreclr.so","native_image_offset":"0x63a1e1"},
           {"is_managed":"true","method_name":"Workloads.Crasher.Fail(Int32)"},
           {"is_managed":"true","method_name":"Workloads.Program.Main(System.String[])"}]}]},
      "parameters":{"ExceptionType":"0x05000000"}}"#;

    #[test]
    fn the_crashed_thread_and_its_exception() {
        let r = CrashReport::parse(REPORT.as_bytes(), Path::new("r.json")).unwrap();
        assert_eq!(r.process_name, "Workloads.dll");
        assert_eq!(r.thread_id, Some(0x3ea9));
        assert_eq!(
            r.exception_type.as_deref(),
            Some("Workloads.CrashException")
        );
        assert_eq!(r.hresult.as_deref(), Some("0x80131500"));
        assert_eq!(r.stack[0], "libc.so.6!wait4");
        assert_eq!(r.stack[1], "libcoreclr.so+0x63a1e1");
        assert_eq!(
            r.managed_stack(),
            vec![
                "Workloads.Crasher.Fail(Int32)",
                "Workloads.Program.Main(System.String[])"
            ]
        );
        assert!(CrashReport::parse(b"{", Path::new("x")).is_err());
        assert!(CrashReport::parse(b"[1]", Path::new("x")).is_err());
        let empty = CrashReport::parse(br#"{"payload":{}}"#, Path::new("x")).unwrap();
        assert_eq!(empty.exception_type, None);
    }

    #[test]
    fn the_environment_names_the_files_after_the_trace() {
        let c = CrashCapture {
            dir: PathBuf::from("/out"),
            stem: "app".into(),
            dump: None,
            compress: Compression::Gzip,
        };
        if std::env::var_os("DOTNET_DbgEnableMiniDump").is_none()
            && std::env::var_os("COMPlus_DbgEnableMiniDump").is_none()
        {
            let env = c.env();
            let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            assert_eq!(
                get("DOTNET_DbgMiniDumpName"),
                Some("/out/app_crash_%p.dmp".into())
            );
            assert_eq!(get("DOTNET_EnableCrashReportOnly"), Some("1".into()));
            assert_eq!(get("DOTNET_DbgMiniDumpType"), None);
        }
        assert_eq!(
            c.report_path(7),
            PathBuf::from("/out/app_crash_7.dmp.crashreport.json")
        );
    }
}
