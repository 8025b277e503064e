//! Applying the rules to one process: read what it is, find the rules it matches (logged
//! either way), and carry out their actions under their limits — a trace (attached, or from
//! the first instruction for a runtime held at the listen port) and a dump — with the files
//! named `<process>_<pid>_<UTC yyyyMMdd_HHmmss>.<ext>` in the rule's folder.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clrspy_collect::trigger::{Triggers, DEFAULT_AFTER};
use clrspy_collect::{
    ErrorKind, Live, Progress, Recording, Resolved, RunObserver, RunOptions, Started, StopSignal,
    Summary,
};
use diagnostics_client::{Connector, Endpoint, SessionConfig};

use crate::budget::{enforce_budget, folder_bytes, Admission};
use crate::facts::ProcessFacts;
use crate::log::Decision;
use crate::model::{Rule, TraceAction};
use crate::parse::RuleSet;
use crate::watch::Shared;

/// Below this much free space the output disk counts as full.
pub(crate) const MIN_FREE: u64 = 256 << 10;

/// How long the runtime may take to write a dump.
pub(crate) const DUMP_TIMEOUT: Duration = Duration::from_secs(120);

/// How long ago process `pid` started, in milliseconds (a decision's `age_ms`).
pub(crate) fn age_ms(pid: u32) -> Option<u64> {
    diagnostics_client::procfs::age(pid).map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX))
}

/// A decision about `facts`'s process.
pub(crate) fn about(event: &'static str, facts: &ProcessFacts) -> Decision {
    let mut d = Decision::new(event);
    d.pid = Some(facts.pid);
    d.process = Some(facts.file_name());
    d
}

/// The rules `facts` matches (indices), each logged with why; a process none matches is
/// logged as seen.
pub(crate) fn decide(shared: &Shared, rules: &RuleSet, facts: &ProcessFacts) -> Vec<usize> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let uid_of = |n: &str| crate::facts::uid_of(&passwd, n);
    let age = age_ms(facts.pid);
    let mut hits = Vec::new();
    let ancestors = if rules.rules.iter().any(|r| r.children) {
        crate::tree::ancestors(facts.pid)
    } else {
        Vec::new()
    };
    for (i, r) in rules.rules.iter().enumerate() {
        let why = match facts.matches(&r.matcher, &uid_of) {
            Some(why) => Some(why.join("; ")),
            None if r.children => shared
                .matched
                .lock()
                .ok()
                .and_then(|mut m| crate::tree::via_parent(&mut m, r, &ancestors, &uid_of)),
            None => None,
        };
        if let Some(why) = why {
            if r.children {
                if let Ok(mut m) = shared.matched.lock() {
                    m.record(facts.pid, &r.name);
                }
            }
            let mut d = about("matched", facts);
            d.rule = Some(r.name.clone());
            d.age_ms = age;
            d.detail = Some(why);
            shared.emit(d);
            hits.push(i);
        }
    }
    if hits.is_empty() {
        let mut d = about("seen", facts);
        d.age_ms = age;
        let mut cmd = facts.command_line.clone();
        if cmd.len() > 200 {
            let mut cut = 200;
            while !cmd.is_char_boundary(cut) {
                cut -= 1;
            }
            cmd.truncate(cut);
            cmd.push_str("...");
        }
        d.detail = Some(format!("no rule matches (command line: {cmd})"));
        shared.emit(d);
    }
    hits
}

/// A process found by its diagnostic socket: match, then act.
pub(crate) fn on_new_process(shared: &Arc<Shared>, ep: Endpoint) {
    if shared.stopping.load(Ordering::SeqCst) {
        return;
    }
    let info = diagnostics_client::process_info(&ep, Duration::from_millis(1500)).ok();
    let facts = ProcessFacts::read(ep.pid, info.and_then(|i| i.entrypoint_assembly));
    if facts.comm.is_empty() && !diagnostics_client::procfs::alive(ep.pid) {
        let mut d = Decision::new("gone");
        d.pid = Some(ep.pid);
        d.detail = Some("the process ended before its rules could be applied".into());
        shared.emit(d);
        return;
    }
    let rules = shared.rules();
    for i in decide(shared, &rules, &facts) {
        act_attached(shared, &rules, i, &facts, &ep, true);
    }
}

/// Carries out rule `i`'s actions on a running process reached at `ep`: the dump here, the
/// trace (when `with_trace`) on a thread of its own.
pub(crate) fn act_attached(
    shared: &Arc<Shared>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    ep: &Endpoint,
    with_trace: bool,
) {
    let rule = &rules.rules[i];
    if rule.dump.is_some() {
        crate::dumps::act_dump(shared, rules, i, facts, ep);
    }
    if with_trace && rule.trace.is_some() {
        let (rules, facts, ep) = (rules.clone(), facts.clone(), ep.clone());
        shared.spawn(format!("clrspy-trace-{}", facts.pid), move |s| {
            let rule = &rules.rules[i];
            if let Some(t) = &rule.trace {
                trace(s, rule, t, &facts, Via::Attach(ep));
            }
        });
    }
}

/// How a trace reaches its runtime.
pub(crate) enum Via {
    /// Its listening socket.
    Attach(Endpoint),
    /// Its connections to the listen port; `resume` lets it run once the session is open.
    Held {
        /// The runtime's connections.
        to: Arc<dyn Connector>,
        /// Resumes the runtime.
        resume: Box<dyn FnMut() -> clrspy_collect::Result<()> + Send>,
    },
}

/// Asks the rule's limits and the disk whether an action may go; logs a refusal. The rule's
/// folder on a yes.
pub(crate) fn admit(
    shared: &Shared,
    rule: &Rule,
    action: &'static str,
    facts: &ProcessFacts,
) -> Option<PathBuf> {
    match may_act(shared, rule) {
        Ok(dir) => Some(dir),
        Err(why) => {
            let mut d = about("skipped", facts);
            d.rule = Some(rule.name.clone());
            d.action = Some(action);
            d.detail = Some(why);
            shared.emit(d);
            None
        }
    }
}

/// Whether rule `rule` may act now: watch is not stopping, the output disk has room, the
/// rule's limits (max_actions, cooldown; a yes is counted) and its folder (made, kept within
/// its budget). The folder, or why not.
pub(crate) fn may_act(shared: &Shared, rule: &Rule) -> Result<PathBuf, String> {
    may_act_paced(shared, rule, true)
}

/// [`may_act`], the rule's cooldown asked only when `paced`.
pub(crate) fn may_act_paced(shared: &Shared, rule: &Rule, paced: bool) -> Result<PathBuf, String> {
    if shared.stopping.load(Ordering::SeqCst) {
        return Err("watch is stopping".into());
    }
    if !disk_has_room(shared) {
        return Err(format!(
            "the output disk is full ({} has less than 256 KB free)",
            shared.out.display()
        ));
    }
    let verdict = shared
        .states
        .lock()
        .map(|mut s| {
            s.entry(rule.name.clone())
                .or_default()
                .admit_paced(&rule.limits, Instant::now(), paced)
        })
        .unwrap_or(Admission::Go);
    if verdict != Admission::Go {
        return Err(verdict.to_string());
    }
    let dir = shared.out.join(&rule.name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return Err(format!("cannot create {}: {e}", dir.display()));
    }
    keep_budget(shared, rule, &dir, 0);
    Ok(dir)
}

/// True unless the output disk was found full and still is; says when that changes.
fn disk_has_room(shared: &Shared) -> bool {
    let free = free_bytes(&shared.out);
    let full = free.is_some_and(|f| f < MIN_FREE);
    let was = shared.disk_full.swap(full, Ordering::SeqCst);
    if was && !full {
        let mut d = Decision::new("disk_ok");
        d.detail = Some(format!("{} has room again", shared.out.display()));
        shared.emit(d);
    } else if full && !was {
        say_disk_full(shared, None);
    }
    !full
}

/// Says the output disk is full (once per time it fills).
pub(crate) fn say_disk_full(shared: &Shared, file: Option<&Path>) {
    let mut d = Decision::new("disk_full");
    d.file = file.map(Path::to_path_buf);
    d.detail = Some(format!(
        "the output disk of {} is full: writing stops, new actions are skipped until there is room; watching goes on",
        shared.out.display()
    ));
    shared.emit(d);
}

/// Free bytes on the file system holding `dir`.
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs reads a NUL-terminated path and fills the struct we own.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
}

/// Keeps the rule's folder within its budget with `reserve` bytes to come; logs removals.
pub(crate) fn keep_budget(shared: &Shared, rule: &Rule, dir: &Path, reserve: u64) {
    let open = shared
        .open_files
        .lock()
        .map(|o| o.clone())
        .unwrap_or_default();
    match enforce_budget(dir, rule.limits.disk_bytes(), reserve, &open) {
        Ok(removed) => {
            for (path, bytes) in removed {
                let mut d = Decision::new("removed");
                d.rule = Some(rule.name.clone());
                d.file = Some(path);
                d.bytes = Some(bytes);
                d.detail = Some(format!(
                    "disk budget of {} MB: oldest first",
                    rule.limits.disk_bytes() >> 20
                ));
                shared.emit(d);
            }
        }
        Err(e) => {
            let mut d = Decision::new("error");
            d.rule = Some(rule.name.clone());
            d.detail = Some(format!("keeping the disk budget of {}: {e}", dir.display()));
            shared.emit(d);
        }
    }
}

/// Registers an open trace: watch's stop reaches its signal, budgets spare its file.
pub(crate) fn track(shared: &Shared, stop: &Arc<StopSignal>, out: &Path) {
    if let Ok(mut v) = shared.traces.lock() {
        v.push(stop.clone());
    }
    if let Ok(mut o) = shared.open_files.lock() {
        o.push(out.to_path_buf());
    }
}

/// Unregisters a trace [`track`] registered.
pub(crate) fn untrack(shared: &Shared, stop: &Arc<StopSignal>, out: &Path) {
    if let Ok(mut v) = shared.traces.lock() {
        v.retain(|s| !Arc::ptr_eq(s, stop));
    }
    if let Ok(mut o) = shared.open_files.lock() {
        o.retain(|p| p != out);
    }
}

/// `dir/<process>_<pid>_<stamp>.<ext>`.
pub(crate) fn file_for(dir: &Path, facts: &ProcessFacts, ext: &str) -> PathBuf {
    dir.join(format!(
        "{}_{}_{}.{ext}",
        facts.file_name(),
        facts.pid,
        clrspy_collect::utc_stamp()
    ))
}

/// The session a trace action asks for.
fn session_config(t: &TraceAction) -> Result<SessionConfig, String> {
    let providers: Vec<String> = t.providers.iter().map(|p| p.0.clone()).collect();
    let joined = (!providers.is_empty()).then(|| providers.join(","));
    let specs = clr_events::provider_spec::resolve(
        t.profile.as_ref().map(|p| p.0.name),
        joined.as_deref(),
        None,
        None,
    )?;
    Ok(SessionConfig {
        circular_buffer_mb: t.buffer_mb.unwrap_or(256),
        rundown_keyword: diagnostics_client::DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: true,
        providers: specs
            .into_iter()
            .map(|p| diagnostics_client::Provider {
                name: p.name,
                keywords: p.keywords,
                level: p.level,
                arguments: p.arguments,
            })
            .collect(),
    })
}

/// Watches a trace's size against its rule's budget: older files make room first; a trace
/// that alone outgrows the budget is stopped.
pub(crate) struct BudgetWatch<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) rule: &'a Rule,
    pub(crate) dir: &'a Path,
    pub(crate) stop: &'a StopSignal,
    pub(crate) next: Instant,
    pub(crate) over: bool,
}

impl RunObserver for BudgetWatch<'_> {
    fn started(&mut self, _what: Started<'_>) {}

    fn progress(&mut self, p: &Progress) {
        if Instant::now() < self.next || self.over {
            return;
        }
        self.next = Instant::now() + Duration::from_secs(1);
        let budget = self.rule.limits.disk_bytes();
        if folder_bytes(self.dir) <= budget {
            return;
        }
        keep_budget(self.shared, self.rule, self.dir, 0);
        if folder_bytes(self.dir) > budget && p.bytes > 0 {
            self.over = true;
            self.stop.request();
        }
    }
}

/// Records a trace as `t` says and logs how it went.
pub(crate) fn trace(shared: &Shared, rule: &Rule, t: &TraceAction, facts: &ProcessFacts, via: Via) {
    let fail = |why: String, file: Option<PathBuf>| {
        shared.failures.fetch_add(1, Ordering::SeqCst);
        let mut d = about("action_failed", facts);
        d.rule = Some(rule.name.clone());
        d.action = Some("trace");
        d.file = file;
        d.detail = Some(why);
        shared.emit(d);
    };
    let mut config = match session_config(t) {
        Ok(c) => c,
        Err(e) => return fail(e, None),
    };
    let triggers = triggers_of(t);
    if let Some(tr) = &triggers {
        tr.apply(&mut config);
    }
    let Some(dir) = admit(shared, rule, "trace", facts) else {
        return;
    };
    shared.actions.fetch_add(1, Ordering::SeqCst);
    let out = file_for(&dir, facts, "nettrace");
    let stop = Arc::new(StopSignal::new());
    track(shared, &stop, &out);
    let mut d = about("action_started", facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("trace");
    d.file = Some(out.clone());
    d.age_ms = age_ms(facts.pid);
    d.detail = Some(match &via {
        Via::Attach(_) => "attached".into(),
        Via::Held { .. } => "from the first instruction (held at the listen port)".into(),
    });
    shared.emit(d);
    let mut watch = BudgetWatch {
        shared,
        rule,
        dir: &dir,
        stop: &stop,
        next: Instant::now(),
        over: false,
    };
    let result = run_trace(
        &config,
        t,
        triggers.as_ref(),
        &out,
        &stop,
        facts,
        via,
        &mut watch,
    );
    let over = watch.over;
    untrack(shared, &stop, &out);
    match result {
        Ok(s) => {
            let mut d = about("action_done", facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("trace");
            d.file = Some(s.path.clone());
            d.bytes = Some(s.bytes);
            d.detail = Some(describe(&s, over));
            shared.emit(d);
        }
        Err(e) => {
            let full = e.kind() == ErrorKind::DiskFull;
            let kept = std::fs::metadata(&out).map(|m| m.len()).ok();
            let why = match kept {
                Some(n) if n > 0 => format!("{e} (the {n} bytes written are kept, closed whole)"),
                _ => e.to_string(),
            };
            fail(why, kept.map(|_| out.clone()));
            if full {
                shared.disk_full.store(true, Ordering::SeqCst);
                say_disk_full(shared, Some(&out));
            }
        }
    }
}

/// The stop triggers of a trace action, if it has any.
fn triggers_of(t: &TraceAction) -> Option<Triggers> {
    (!t.stop_on.is_empty()).then(|| Triggers {
        specs: t.stop_on.clone(),
        after: t.after_trigger.map_or(DEFAULT_AFTER, |d| d.0),
    })
}

/// Why a session stopped, in words.
pub(crate) fn stop_words(s: &Summary) -> String {
    match s.reason {
        clrspy_collect::StopReason::Duration => "duration reached".into(),
        clrspy_collect::StopReason::Requested => "watch stopped".into(),
        clrspy_collect::StopReason::TargetEnded => "the process ended".into(),
        clrspy_collect::StopReason::Triggered => format!(
            "triggered: {}",
            s.trigger.as_deref().unwrap_or("a stop trigger fired")
        ),
        _ => "ended".into(),
    }
}

/// How a finished trace ended, in words.
fn describe(s: &Summary, over_budget: bool) -> String {
    let why = if over_budget {
        "stopped: the rule's disk budget is reached".to_string()
    } else {
        stop_words(s)
    };
    let events = s
        .events
        .map(|n| format!(", {n} events"))
        .unwrap_or_default();
    let whole = if s.complete {
        ""
    } else {
        ", without the rundown"
    };
    let ring = s
        .ring
        .as_ref()
        .map(|r| {
            format!(
                ", ring: {} MB received, {} blocks dropped",
                r.received >> 20,
                r.dropped_blocks
            )
        })
        .unwrap_or_default();
    format!("{why}{events}{whole}{ring}")
}

/// Runs the session itself.
#[allow(clippy::too_many_arguments)]
fn run_trace(
    config: &SessionConfig,
    t: &TraceAction,
    triggers: Option<&Triggers>,
    out: &Path,
    stop: &StopSignal,
    facts: &ProcessFacts,
    via: Via,
    observer: &mut BudgetWatch<'_>,
) -> clrspy_collect::Result<Summary> {
    let thread_cpu = Some(Duration::from_millis(20));
    let duration = t.duration.map(|d| d.0);
    let ring = t.ring_mb.map(|m| u64::from(m) << 20);
    let live = || Live {
        consumers: triggers.and_then(Triggers::consumer).into_iter().collect(),
        ..Live::default()
    };
    match via {
        Via::Attach(endpoint) => {
            let opts = RunOptions {
                config,
                output: Some(out.to_path_buf()),
                duration,
                thread_cpu,
                stop,
                extra_runtimes: Default::default(),
                child_stdout: Default::default(),
                ring,
                child_env: Vec::new(),
            };
            let label = format!("{} (pid {})", facts.file_name(), facts.pid);
            clrspy_collect::run(
                Resolved::Attach { endpoint, label },
                &opts,
                live(),
                observer,
            )
            .map(|o| o.summary)
        }
        Via::Held { to, mut resume } => {
            // From the first instruction: the methods are named by their JIT events.
            let config = clrspy_collect::with_method_loads(config);
            let rec = Recording {
                config: &config,
                out,
                duration,
                stop,
                thread_cpu,
                ring,
            };
            clrspy_collect::record_via(to, facts.pid, &rec, live(), &mut *resume, &mut |p| {
                observer.progress(p)
            })
        }
    }
}
