//! The listen port: a reverse diagnostic port runtimes started with
//! `DOTNET_DiagnosticPorts=<socket>,connect,suspend` connect to, held before their first
//! managed instruction. Each runtime (told apart by its instance cookie) gets a thread that
//! reads what it is, applies the matching rules — a trace rule records from that first
//! instruction, a crash dump rule starts watching — and resumes it; a runtime no rule matches is resumed at once. The runtime
//! connects again after every command: the hub ([`ReverseHub`]) passes its connections to its thread
//! while that thread wants them, and afterwards holds the newest one open so the runtime
//! waits quietly instead of reconnecting in a loop.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use diagnostics_client::{
    procfs, resume_runtime, Admission, HeldRuntime, ReverseHub, ReverseServer,
};

use crate::crash::watch_crash;
use crate::dispatch::{act_attached, matching_rules};
use crate::holds::install_hold_hook;
use crate::state::WatchState;
use crate::trace::{trace, TraceRoute};
use clrspy_rules::ProcessFacts;
use clrspy_rules::{Decision, DecisionKind};

/// Time each command to a held runtime may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// The listen port, served by a hub on a thread of its own: each runtime that connects gets
/// a thread that handles it; the hub parks its connections once that thread is done.
pub(crate) struct Port {
    _hub: ReverseHub,
}

impl Port {
    /// Listens on `path` and serves it on a thread.
    pub(crate) fn start(path: &Path, shared: Arc<WatchState>) -> diagnostics_client::Result<Port> {
        let server = ReverseServer::bind(path)?;
        let hub = ReverseHub::start(server, "clrspy-watch-port", COMMAND_TIMEOUT, move |rt| {
            let name = format!("clrspy-held-{}", rt.advertisement().pid);
            shared.spawn(name, move |s| held(s, rt));
            Admission::Taken
        })?;
        Ok(Port { _hub: hub })
    }
}

/// Handles one held runtime: what it is, the rules it matches, a trace from its first
/// instruction for the first trace rule, then its resume and the other actions.
fn held(shared: &Arc<WatchState>, runtime: HeldRuntime) {
    let ad = runtime.advertisement().clone();
    let to = Arc::new(runtime);
    let info = diagnostics_client::process_info(to.as_ref(), COMMAND_TIMEOUT).ok();
    let pid = ad.peer_pid.unwrap_or_else(|| host_pid(ad.pid));
    to.set_pid(pid);
    if let Ok(mut c) = shared.claimed.lock() {
        c.insert(pid);
    }
    let facts = ProcessFacts::read(pid, info.and_then(|i| i.entrypoint_assembly));
    let rules = shared.rules();
    let hits = if shared.stopping.load(Ordering::SeqCst) {
        Vec::new()
    } else {
        matching_rules(shared, &rules, &facts)
    };
    // Crash watches and hold hooks begin before the runtime runs a single instruction.
    for &i in &hits {
        let Some(d) = &rules.rules[i].dump else {
            continue;
        };
        if d.on_crash {
            watch_crash(shared, &rules, i, &facts, Some(to.as_ref()), None);
        }
        if d.hold_hook.is_some() && !d.on_exception.is_empty() {
            install_hold_hook(shared, &rules, i, &facts, to.as_ref());
        }
    }
    let first_trace = hits
        .iter()
        .copied()
        .find(|&i| rules.rules[i].trace.is_some());
    let resumed = Arc::new(AtomicBool::new(false));
    if let Some(i) = first_trace {
        let (r, f, conn) = (rules.clone(), facts.clone(), to.clone());
        let flag = resumed.clone();
        let resumer = to.clone();
        shared.spawn(format!("clrspy-trace-{pid}"), move |s| {
            let resume = Box::new(move || {
                flag.store(true, Ordering::SeqCst);
                resume_runtime(resumer.as_ref(), COMMAND_TIMEOUT).map_err(Into::into)
            });
            let rule = &r.rules[i];
            if let Some(t) = &rule.trace {
                trace(s, rule, t, &f, TraceRoute::Held { to: conn, resume });
            }
        });
        // The trace resumes the runtime once its session is open (bounded wait).
        let until = Instant::now() + Duration::from_secs(15);
        while !resumed.load(Ordering::SeqCst) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
            if Arc::strong_count(&to) <= 1 && !resumed.load(Ordering::SeqCst) {
                // The trace thread is gone (refused by limits, or failed) without resuming.
                break;
            }
        }
    }
    if !resumed.swap(true, Ordering::SeqCst) {
        if let Err(e) = resume_runtime(to.as_ref(), COMMAND_TIMEOUT) {
            let mut d = Decision::for_process(DecisionKind::Error, &facts);
            d.detail = Some(format!("resuming the held runtime failed: {e}"));
            shared.emit(d);
        }
    }
    let rest: Vec<usize> = hits
        .iter()
        .copied()
        .filter(|&i| {
            let r = &rules.rules[i];
            r.dump.is_some()
                || r.heap.is_some()
                || r.counters.is_some()
                || r.bundle.is_some()
                || Some(i) != first_trace
        })
        .collect();
    if rest.is_empty() {
        return;
    }
    // The other actions reach the runtime at its own socket, which it opens as it starts. A
    // crash-only dump is under way already: there the socket only adds the fatal exception's
    // message.
    let crash_only = |i: usize| {
        let r = &rules.rules[i];
        r.dump
            .as_ref()
            .is_some_and(|d| d.on_crash && d.on_exception.is_empty())
            && r.heap.is_none()
            && r.counters.is_none()
            && r.bundle.is_none()
            && (r.trace.is_none() || Some(i) == first_trace)
    };
    let Some(ep) = wait_endpoint(pid) else {
        if rest.iter().all(|&i| crash_only(i)) {
            return;
        }
        let mut d = Decision::for_process(DecisionKind::Error, &facts);
        d.detail =
            Some("its diagnostic socket did not appear: its other actions are skipped".into());
        shared.emit(d);
        return;
    };
    for i in rest {
        act_attached(shared, &rules, i, &facts, &ep, Some(i) != first_trace);
    }
}

/// The endpoint of `pid`, waited for up to 5 s.
fn wait_endpoint(pid: u32) -> Option<diagnostics_client::Endpoint> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(ep) = diagnostics_client::find_endpoints()
            .into_iter()
            .find(|e| e.pid == pid)
        {
            return Some(ep);
        }
        if Instant::now() >= until || !procfs::alive(pid) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid here of a runtime that says it is `ns_pid` in its own namespace, when the socket
/// did not tell (`Advertisement::peer_pid`): the same number for a process of ours; for a
/// container's, the youngest process whose innermost pid it is.
fn host_pid(ns_pid: u32) -> u32 {
    let nspids = procfs::nspids;
    if nspids(ns_pid).is_some_and(|v| v.len() == 1) {
        return ns_pid;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return ns_pid;
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| nspids(p).is_some_and(|v| v.len() > 1 && v.last() == Some(&ns_pid)))
        .max_by_key(|&p| procfs::start_ticks(p).unwrap_or(0))
        .unwrap_or(ns_pid)
}

/// True when the listen port handles `pid` (it connected, or its environment points it at
/// the port): the poller leaves it alone.
pub(crate) fn belongs_to_port(shared: &WatchState, pid: u32) -> bool {
    if shared.claimed.lock().is_ok_and(|c| c.contains(&pid)) {
        return true;
    }
    let Some(listen) = &shared.listen else {
        return false;
    };
    let Some(env) = procfs::environ(pid) else {
        return false;
    };
    let want = listen.to_string_lossy();
    env.get(diagnostics_client::DIAGNOSTIC_PORTS_VARIABLE)
        .is_some_and(|v| v.contains(want.as_ref()))
}
