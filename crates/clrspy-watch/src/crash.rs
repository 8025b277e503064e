//! A rule's crash dumps (`dump.on_crash`): the runtime itself writes a dump when its process
//! crashes, but only when the process was started with `DOTNET_DbgEnableMiniDump` (read at
//! startup: setting it later does nothing). So watch reads the process's environment when the
//! rule matches, says plainly when crash dumps are off, and otherwise waits for the process
//! to end; if the runtime left a dump (and its `<dump>.crashreport.json`), the dump is
//! compressed into the rule's folder under the rule's limits, the report copied beside it,
//! and the fatal exception logged. The runtime's own file is left where it is: it is the
//! user's (their `DbgMiniDumpName` chose the place). The dump's path is the process's view
//! (in a container, its own file system): folders of the process's root and working
//! directory are held open from the match on, so the path resolves after it exited.
//!
//! That place is the watched process's choice, and the watcher is usually root: nothing
//! there may steer it. The folder is walked under the process's root with no link and no
//! `..`; the dump and report are taken only as regular files of the process's user, the dump
//! no larger than twice the most memory the process had (plus room for headers), the report
//! at most 16 MB; the copy stops at the rule's disk budget. Each refusal is logged with why.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clrspy_collect::{CrashReport, ErrorKind};
use diagnostics_client::procfs;
use diagnostics_client::{Connector, Endpoint};

use crate::fatal::listen;
use crate::limits::{file_for, keep_budget, may_act_paced, say_disk_full, say_dump};
use crate::procfs::start_ticks;
use crate::state::WatchState;
use clrspy_collect::crash::files::{
    find_left, DumpName, FileRules, Left, Places, DEFAULT_NAME, MAX_REPORT_BYTES, REPORT_SUFFIX,
};
use clrspy_collect::crash::message::FatalMessages;
use clrspy_rules::Compression;
use clrspy_rules::ProcessFacts;
use clrspy_rules::Rule;
use clrspy_rules::RuleSet;
use clrspy_rules::{Decision, DecisionKind};

/// The runtime's crash settings of one process, as its environment gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CrashSettings {
    /// `DbgEnableMiniDump` is a non-zero number: the runtime runs createdump at a crash.
    pub(crate) enabled: bool,
    /// `DbgMiniDumpName`, when given and not empty.
    pub(crate) name: Option<String>,
    /// `DbgMiniDumpType` (1 mini, 2 heap, 3 triage, 4 full), when valid.
    pub(crate) kind: Option<u32>,
    /// `EnableCrashReport` is 1.
    pub(crate) report: bool,
    /// `EnableCrashReportOnly` is 1: a report and no dump.
    pub(crate) report_only: bool,
}

impl CrashSettings {
    /// Reads the settings from `env` the way the runtime does: `DOTNET_` before `COMPlus_`,
    /// numbers in decimal.
    pub(crate) fn from_env(env: &[(String, String)]) -> CrashSettings {
        let get = |name: &str| {
            ["DOTNET_", "COMPlus_"].iter().find_map(|prefix| {
                let key = format!("{prefix}{name}");
                env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
            })
        };
        let number = |name: &str| get(name).and_then(|v| v.trim().parse::<u32>().ok());
        CrashSettings {
            enabled: number("DbgEnableMiniDump").is_some_and(|n| n != 0),
            name: get("DbgMiniDumpName").filter(|n| !n.is_empty()),
            kind: number("DbgMiniDumpType").filter(|k| (1..=4).contains(k)),
            report: number("EnableCrashReport") == Some(1),
            report_only: number("EnableCrashReportOnly") == Some(1),
        }
    }

    /// The name pattern createdump gets.
    pub(crate) fn pattern(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT_NAME)
    }

    /// What the runtime writes, in words.
    fn describe(&self) -> String {
        let kind = match self.kind {
            Some(1) => "mini",
            Some(3) => "triage",
            Some(4) => "full",
            _ => "heap",
        };
        if self.report_only {
            format!(
                "a crash report only, at {}.crashreport.json",
                self.pattern()
            )
        } else {
            format!(
                "a {kind} dump at {}{}",
                self.pattern(),
                if self.report {
                    " with its crash report"
                } else {
                    " (no crash report: DOTNET_EnableCrashReport is not 1)"
                }
            )
        }
    }
}

/// The process's environment: `/proc/PID/environ`, else the runtime's answer.
fn environment(pid: u32, conn: Option<&dyn Connector>) -> Option<Vec<(String, String)>> {
    if let Some(env) = procfs::environ(pid) {
        return Some(env.pairs());
    }
    diagnostics_client::process_environment(conn?, Duration::from_secs(3)).ok()
}

/// The pid of `pid` in its own namespace (what createdump's `%p` gives).
fn ns_pid(pid: u32) -> u32 {
    procfs::namespace_pid(pid).unwrap_or(pid)
}

/// Starts watching for the crash of the process `facts` describes for rule `i` (once per
/// process and rule): reads its crash settings now (through `conn` when `/proc` cannot tell),
/// says when crash dumps are off, and otherwise waits on a thread of its own for the process
/// to end. With `ep` (now or in a later call), the exceptions' messages are kept meanwhile.
pub(crate) fn watch_crash(
    shared: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    conn: Option<&dyn Connector>,
    ep: Option<&Endpoint>,
) {
    let rule = &rules.rules[i];
    let ticks = start_ticks(facts.pid).unwrap_or(0);
    let key = (facts.pid, ticks, rule.name.clone());
    let (first, messages) = match shared.crash_watched.lock() {
        Ok(mut w) => match w.get(&key) {
            Some(m) => (false, m.clone()),
            None => {
                let m = Arc::new(FatalMessages::default());
                w.insert(key, m.clone());
                (true, m)
            }
        },
        Err(_) => return,
    };
    if !first {
        // Watched already (a held process, before its socket existed): only the messages.
        if let Some(ep) = ep {
            listen(shared, ep, &messages);
        }
        return;
    }
    let say = |event: DecisionKind, why: String| say_dump(shared, rule, facts, event, why);
    let Some(env) = environment(facts.pid, conn) else {
        return say(
            DecisionKind::Skipped,
            "crash dump not possible: the process's environment cannot be read (it ended, or belongs to another user)".into(),
        );
    };
    let settings = CrashSettings::from_env(&env);
    if !settings.enabled {
        return say(DecisionKind::Skipped, format!(
            "crash dump not possible: the runtime's crash dumps are off in this process; start it with DOTNET_DbgEnableMiniDump=1 (and DOTNET_EnableCrashReport=1 for the fatal exception; DOTNET_DbgMiniDumpName=/path/core_%p for the place, {DEFAULT_NAME} when not given): the runtime reads them only at its start"
        ));
    }
    let name = match DumpName::parse(settings.pattern(), ns_pid(facts.pid)) {
        Ok(n) => n,
        Err(why) => {
            return say(
                DecisionKind::Skipped,
                format!("crash dump not possible: {why}"),
            )
        }
    };
    let places = match Places::open(facts.pid, &name) {
        Ok(p) => p,
        Err(e) => {
            return say(
                DecisionKind::Skipped,
                format!("crash dump not possible: the dump's folder is refused: {e}"),
            )
        }
    };
    say(
        DecisionKind::Watching,
        format!("crash: the runtime writes {}", settings.describe()),
    );
    if settings.report {
        messages.mark_wanted();
        if let Some(ep) = ep {
            listen(shared, ep, &messages);
        }
    }
    let (rules, facts) = (rules.clone(), facts.clone());
    shared.spawn(format!("clrspy-crash-{}", facts.pid), move |s| {
        let w = Waiting {
            name,
            places,
            ticks,
            messages,
            owner: procfs::fs_uid(facts.pid),
            readable: procfs::readable_bytes(facts.pid).unwrap_or(0),
        };
        w.wait(s, &rules.rules[i], &facts);
    });
}

/// A process watched for its crash.
struct Waiting {
    name: DumpName,
    places: Places,
    ticks: u64,
    messages: Arc<FatalMessages>,
    /// The process's file-system uid: createdump's files are its.
    owner: Option<u32>,
    /// The most readable memory the process had (read about every second while it runs).
    readable: u64,
}

impl Waiting {
    /// True while the process (this one, not a later one of the same pid) runs.
    fn alive(&self, pid: u32) -> bool {
        procfs::stat(pid).is_some_and(|s| s.state != 'Z' && s.start_ticks == self.ticks)
    }

    /// Waits for the end of the process (or of watch), then takes what the runtime left.
    fn wait(mut self, shared: &Arc<WatchState>, rule: &Rule, facts: &ProcessFacts) {
        let mut round = 0u32;
        while self.alive(facts.pid) {
            if shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            round += 1;
            if round.is_multiple_of(10) {
                let now = procfs::readable_bytes(facts.pid).unwrap_or(0);
                self.readable = self.readable.max(now);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let since = procfs::time_after_boot(self.ticks).unwrap_or(std::time::UNIX_EPOCH);
        let ended = |detail: String| {
            let mut d = Decision::for_process(DecisionKind::WatchingEnded, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("dump");
            d.detail = Some(detail);
            shared.emit(d);
        };
        let folder = match self.places.folder(&self.name) {
            Ok(f) => f,
            Err(e) if e.not_found() => {
                return ended("crash: the process ended without a crash dump".into())
            }
            Err(e) => {
                return ended(format!(
                    "crash: the process ended; its dump folder is refused: {e}"
                ))
            }
        };
        let rules = FileRules {
            owner: self.owner,
            max_bytes: (self.readable > 0).then(|| clrspy_collect::core_limit_for(self.readable)),
            max_is: "twice the most memory the process had, and room for headers",
        };
        match find_left(&folder, &self.name, since, &rules) {
            Some(left) => {
                self.messages.settle();
                take_crash_dump(shared, rule, facts, left, &self.messages, rules.max_bytes)
            }
            None => ended("crash: the process ended without a crash dump".into()),
        }
    }
}

/// Reads a crash report opened under the rules, at most [`MAX_REPORT_BYTES`].
fn read_report(file: &mut File) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(MAX_REPORT_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A path naming exactly the open file `f` (the dump already checked), for readers that
/// take a path.
fn held_path(f: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))
}

/// Logs the crash, then copies the dump (compressed) and the report into the rule's folder
/// under its limits; a file the rules refused is logged with the reason and not read.
fn take_crash_dump(
    shared: &WatchState,
    rule: &Rule,
    facts: &ProcessFacts,
    left: Left,
    messages: &FatalMessages,
    raw_limit: Option<u64>,
) {
    let refused = |what: &str, e: &dyn std::fmt::Display| {
        let mut d = Decision::for_process(DecisionKind::Skipped, facts);
        d.rule = Some(rule.name.clone());
        d.action = Some("dump");
        d.detail = Some(format!("crash {what} refused: {e}"));
        shared.emit(d);
    };
    let report_bytes = match left.report {
        Some(Ok(mut f)) => Some(read_report(&mut f).map_err(|e| e.to_string())),
        Some(Err(e)) => {
            refused("report", &e);
            None
        }
        None => None,
    };
    let dump = match left.dump {
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => {
            refused("dump", &e);
            None
        }
        None => None,
    };
    let report_path = PathBuf::from(format!("{}{REPORT_SUFFIX}", left.shown));
    let report = report_bytes.as_ref().map(|b| match b {
        Ok(bytes) => CrashReport::parse(bytes, &report_path),
        Err(e) => Err(format!("{}: {e}", report_path.display())),
    });
    // The message: from the dump when it holds the exception object, else from the session.
    let from_dump = report_bytes
        .as_ref()
        .and_then(|b| b.as_ref().ok())
        .zip(dump.as_ref())
        .and_then(|(b, f)| clrspy_collect::crash::core::message_in_dump(b, &held_path(f)));
    let mut d = Decision::for_process(DecisionKind::Crash, facts);
    d.rule = Some(rule.name.clone());
    d.file = report_bytes.as_ref().map(|_| report_path.clone());
    d.detail = Some(match &report {
        Some(Ok(r)) => describe_report(
            r,
            from_dump.or_else(|| {
                r.exception_type
                    .as_deref()
                    .and_then(|t| messages.message(t, r.thread_id))
            }),
            messages,
        ),
        Some(Err(e)) => format!("the crash report is unreadable: {e}"),
        None => "no crash report (DOTNET_EnableCrashReport=1 writes one)".into(),
    });
    shared.emit(d);
    let Some(mut dump) = dump else {
        return;
    };
    // Not paced by the cooldown (the runtime wrote the dump already; it is the process's one
    // crash dump), but counted against max_actions and the disk.
    let dir = match may_act_paced(shared, rule, false) {
        Ok(dir) => dir,
        Err(why) => {
            let mut d = Decision::for_process(DecisionKind::Skipped, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("dump");
            d.detail = Some(format!(
                "crash dump not copied: {why}; the runtime's {} is kept",
                left.shown
            ));
            return shared.emit(d);
        }
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let compress = match rule.dump.as_ref().map_or(Compression::None, |d| d.compress) {
        Compression::None => clrspy_collect::Compression::None,
        Compression::Gzip => clrspy_collect::Compression::Gzip,
        Compression::Zstd => clrspy_collect::Compression::Zstd,
    };
    let out = file_for(&dir, facts, compress.extension());
    let mut d = Decision::for_process(DecisionKind::ActionStarted, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("dump");
    d.file = Some(out.clone());
    d.detail = Some(format!("crash dump {}", left.shown));
    shared.emit(d);
    if let Some(Ok(bytes)) = &report_bytes {
        let to = out.with_file_name(crash_report_name(&out));
        let _ = clrspy_collect::private::create_private(&to)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes));
    }
    // A budget kept meanwhile (another action of the rule) spares the file being written.
    if let Ok(mut o) = shared.open_files.lock() {
        o.push(out.clone());
    }
    let limits = clrspy_collect::CopyLimits {
        raw: raw_limit,
        file: Some(rule.limits.disk_bytes()),
    };
    let result = clrspy_collect::compress_core_into(&mut dump, &out, compress, limits);
    if let Ok(mut o) = shared.open_files.lock() {
        o.retain(|p| *p != out);
    }
    match result {
        Ok(r) => {
            let mut d = Decision::for_process(DecisionKind::ActionDone, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("dump");
            d.file = Some(r.path.clone());
            d.bytes = Some(r.file_bytes);
            d.raw_bytes = Some(r.raw_bytes);
            d.detail = Some(format!(
                "crash dump: {} raw, {} {} ({:.1}%) in {:.2} s; the runtime's {} is kept",
                mb(r.raw_bytes),
                mb(r.file_bytes),
                compress.name(),
                100.0 * r.file_bytes as f64 / r.raw_bytes.max(1) as f64,
                r.elapsed.as_secs_f64(),
                left.shown
            ));
            shared.emit(d);
            if rule.dump.as_ref().is_some_and(|d| d.analyze) {
                crate::analysis::analyze(shared, rule, facts, &r.path);
            }
            keep_budget(shared, rule, &dir, 0);
        }
        Err(e) => {
            shared.failures.fetch_add(1, Ordering::SeqCst);
            let mut d = Decision::for_process(DecisionKind::ActionFailed, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("dump");
            d.detail = Some(format!("crash dump {}: {e}", left.shown));
            shared.emit(d);
            if e.kind() == ErrorKind::DiskFull {
                shared.disk_full.store(true, Ordering::SeqCst);
                say_disk_full(shared, None);
            }
        }
    }
}

/// `<process>_<pid>_<stamp>.crashreport.json` for the dump file `<...>.dmp[.gz|.zst]`.
fn crash_report_name(dump: &Path) -> String {
    let name = dump
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.split(".dmp").next().unwrap_or(&name);
    format!("{stem}{REPORT_SUFFIX}")
}

/// Megabytes with one decimal.
fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / (1u64 << 20) as f64)
}

/// The fatal exception of a report in one line: type, HRESULT, message (when found; else why
/// not, from `messages`), thread, top managed frames.
fn describe_report(r: &CrashReport, message: Option<String>, messages: &FatalMessages) -> String {
    let what = match &r.exception_type {
        Some(t) => format!(
            "unhandled {t}{}: {}",
            r.hresult
                .as_deref()
                .map(|h| format!(" (HRESULT {h})"))
                .unwrap_or_default(),
            match message {
                Some(m) => format!("\"{m}\""),
                None => match messages.failure() {
                    Some(e) => format!("(no message: the exceptions session failed: {e})"),
                    None if messages.listened() => {
                        "(its message was not seen: thrown before watch attached)".into()
                    }
                    None => "(no message: watch could not attach to the process)".into(),
                },
            }
        ),
        None => "a native crash (no managed exception)".into(),
    };
    let thread = r
        .thread_id
        .map(|t| format!(" on thread {t}"))
        .unwrap_or_default();
    let managed = r.managed_stack();
    let frames: Vec<&str> = if managed.is_empty() {
        r.stack.iter().map(String::as_str).take(5).collect()
    } else {
        managed.into_iter().take(5).collect()
    };
    let at = if frames.is_empty() {
        String::new()
    } else {
        format!(" at {}", frames.join(" < "))
    };
    format!("{what}{thread}{at}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn settings_are_read_as_the_runtime_reads_them() {
        let s = CrashSettings::from_env(&env(&[
            ("COMPlus_DbgEnableMiniDump", "0"),
            ("DOTNET_DbgEnableMiniDump", "1"),
            ("DOTNET_EnableCrashReport", "1"),
            ("COMPlus_DbgMiniDumpType", "4"),
            ("DOTNET_DbgMiniDumpName", "/d/core_%p"),
        ]));
        assert!(s.enabled && s.report && !s.report_only);
        assert_eq!(s.kind, Some(4));
        assert_eq!(s.pattern(), "/d/core_%p");
        let off = CrashSettings::from_env(&env(&[("DOTNET_DbgEnableMiniDump", "0")]));
        assert!(!off.enabled);
        let junk = CrashSettings::from_env(&env(&[
            ("DOTNET_DbgEnableMiniDump", "yes"),
            ("DOTNET_DbgMiniDumpName", ""),
            ("DOTNET_DbgMiniDumpType", "9"),
        ]));
        assert!(!junk.enabled);
        assert_eq!(junk.pattern(), DEFAULT_NAME);
        assert_eq!(junk.kind, None);
        assert!(CrashSettings::from_env(&[]) == CrashSettings::default());
    }

    #[test]
    fn reports_in_one_line_and_their_copy_is_named_after_the_dump() {
        let r = CrashReport {
            exception_type: Some("Workloads.CrashException".into()),
            hresult: Some("0x80131500".into()),
            thread_id: Some(0x3ea9),
            stack: vec![
                "libc.so.6!wait4".into(),
                "Workloads.Crasher.Fail(Int32)".into(),
                "Workloads.Program.Main(System.String[])".into(),
            ],
            ..CrashReport::default()
        };
        let line = describe_report(&r, None, &FatalMessages::default());
        assert_eq!(line, "unhandled Workloads.CrashException (HRESULT 0x80131500): (no message: watch could not attach to the process) on thread 16041 at Workloads.Crasher.Fail(Int32) < Workloads.Program.Main(System.String[])");
        assert_eq!(
            crash_report_name(Path::new("/o/w_1_20260101_000000.dmp.gz")),
            "w_1_20260101_000000.crashreport.json"
        );
    }
}
