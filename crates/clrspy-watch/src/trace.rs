//! The trace action: the session a rule's trace asks for (its profile or providers, its stop
//! triggers), recorded attached to a running process or from the first instruction of one
//! held at the listen port, into `<process>_<pid>_<stamp>.nettrace` in the rule's folder —
//! under the rule's limits, its file spared by budgets while open — and how it ended, logged.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use clrspy_collect::kernel::SamplerChoice;
use clrspy_collect::trigger::{Triggers, DEFAULT_AFTER};
use clrspy_collect::{
    ErrorKind, LiveFeeds, Recording, Resolved, RunObserver, RunOptions, StopSignal, Summary,
};
use diagnostics_client::{Connector, Endpoint, SessionConfig};

use crate::limits::{admit_or_skip, file_for, say_disk_full, BudgetWatch};
use crate::procfs::age_ms;
use crate::state::{track, untrack, WatchState};
use clrspy_rules::ProcessFacts;
use clrspy_rules::{Decision, DecisionKind};
use clrspy_rules::{Rule, SamplerKind, TraceAction};

/// How a trace reaches its runtime.
pub(crate) enum TraceRoute {
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
            .map(clrspy_collect::session_provider)
            .collect(),
    })
}

/// Records a trace as `t` says and logs how it went.
pub(crate) fn trace(
    state: &WatchState,
    rule: &Rule,
    t: &TraceAction,
    facts: &ProcessFacts,
    route: TraceRoute,
) {
    let fail = |why: String, file: Option<PathBuf>| {
        state.failures.fetch_add(1, Ordering::SeqCst);
        let mut d = Decision::for_process(DecisionKind::ActionFailed, facts);
        d.rule = Some(rule.name.clone());
        d.action = Some("trace");
        d.file = file;
        d.detail = Some(why);
        state.emit(d);
    };
    let mut config = match session_config(t) {
        Ok(c) => c,
        Err(e) => return fail(e, None),
    };
    let triggers = triggers_of(t);
    if let Some(tr) = &triggers {
        tr.apply(&mut config);
    }
    let Some(dir) = admit_or_skip(state, rule, "trace", facts) else {
        return;
    };
    state.actions.fetch_add(1, Ordering::SeqCst);
    let out = file_for(&dir, facts, "nettrace");
    let stop = Arc::new(StopSignal::new());
    track(state, &stop, &out);
    let mut d = Decision::for_process(DecisionKind::ActionStarted, facts);
    d.rule = Some(rule.name.clone());
    d.action = Some("trace");
    d.file = Some(out.clone());
    d.age_ms = age_ms(facts.pid);
    d.detail = Some(match &route {
        TraceRoute::Attach(_) => "attached".into(),
        TraceRoute::Held { .. } => "from the first instruction (held at the listen port)".into(),
    });
    state.emit(d);
    let mut watch = BudgetWatch {
        shared: state,
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
        route,
        &mut watch,
    );
    let over = watch.over;
    untrack(state, &stop, &out);
    match result {
        Ok(s) => {
            let mut d = Decision::for_process(DecisionKind::ActionDone, facts);
            d.rule = Some(rule.name.clone());
            d.action = Some("trace");
            d.file = s.path.clone();
            d.bytes = Some(s.bytes);
            d.detail = Some(describe(&s, over));
            state.emit(d);
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
                state.disk_full.store(true, Ordering::SeqCst);
                say_disk_full(state, Some(&out));
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
                ", ring: {} MB received, {} blocks dropped, {} MB after the stop (the rundown) kept beyond its size",
                r.received >> 20,
                r.dropped_blocks,
                r.after_stop_bytes >> 20
            )
        })
        .unwrap_or_default();
    let notes: String = s.notes.iter().map(|n| format!("; {n}")).collect();
    format!("{why}{events}{whole}{ring}{notes}")
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
    route: TraceRoute,
    observer: &mut BudgetWatch<'_>,
) -> clrspy_collect::Result<Summary> {
    let thread_cpu = Some(clrspy_collect::procstat::THREAD_CPU_INTERVAL);
    let duration = t.duration.map(|d| d.0);
    let ring = t.ring_mb.map(|m| u64::from(m) << 20);
    let live = || LiveFeeds {
        consumers: triggers.and_then(Triggers::consumer).into_iter().collect(),
        sampler: sampler_choice(t),
        ..LiveFeeds::default()
    };
    match route {
        TraceRoute::Attach(endpoint) => {
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
        TraceRoute::Held { to, mut resume } => {
            // From the first instruction: the methods are named by their JIT events.
            let config = clrspy_collect::with_method_loads(config);
            let rec = Recording {
                config: &config,
                out: Some(out),
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

/// Who a rule's trace asks to take its CPU samples (the kernel's at the sampler's default rate
/// when the rule gives none).
fn sampler_choice(t: &TraceAction) -> SamplerChoice {
    let rate = t.rate_hz.unwrap_or(clrspy_sampler::DEFAULT_RATE_HZ);
    match t.sampler {
        Some(SamplerKind::Runtime) | None => SamplerChoice::Runtime,
        Some(SamplerKind::Kernel) => SamplerChoice::Kernel(rate),
        Some(SamplerKind::Auto) => SamplerChoice::Auto(rate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_s_sampler_and_rate() {
        let trace = |sampler, rate_hz| TraceAction {
            sampler,
            rate_hz,
            ..TraceAction::default()
        };
        assert_eq!(
            sampler_choice(&trace(None, Some(5))),
            SamplerChoice::Runtime
        );
        assert_eq!(
            sampler_choice(&trace(Some(SamplerKind::Kernel), None)),
            SamplerChoice::Kernel(clrspy_sampler::DEFAULT_RATE_HZ)
        );
        assert_eq!(
            sampler_choice(&trace(Some(SamplerKind::Auto), Some(199))),
            SamplerChoice::Auto(199)
        );
    }
}
