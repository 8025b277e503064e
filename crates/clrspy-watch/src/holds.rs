//! The hold mode of a rule's `on_exception` dumps (`dump.hold_hook`) for runtimes held at the
//! listen port: before the runtime runs, watch sets the hook's variables through the port
//! (SetEnvironmentVariable: measured with .NET 10.0.12, the hook's
//! `Environment.GetEnvironmentVariable` sees them) and has the runtime load clrspy's hook
//! (ApplyStartupHook, .NET 8+, only while held). At a matching first-chance exception the
//! throwing thread asks clrspy-collect's hold server for a dump and waits until it is written.
//! Dumps are logged, counted and renamed like the usual `on_exception` dumps; when anything
//! here fails, the process gets the usual watch (EventPipe) instead, and the log says why.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clrspy_collect::DumpsStarted;
use diagnostics_client::procfs::{self, start_ticks};
use diagnostics_client::{apply_startup_hook, set_environment_variable, Connector};

use crate::dumps::{dumps_left, RuleDumps};
use crate::limits::say_dump;
use crate::state::WatchState;
use clrspy_rules::ProcessFacts;
use clrspy_rules::RuleSet;
use clrspy_rules::{Decision, DecisionKind};

/// Time each command to the held runtime may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Arms the hold hook of rule `i` in the runtime held behind `to` (before it is resumed).
/// Logs what was done; on failure the usual watch follows once the runtime runs.
pub(crate) fn install_hold_hook(
    shared: &Arc<WatchState>,
    rules: &Arc<RuleSet>,
    i: usize,
    facts: &ProcessFacts,
    to: &dyn Connector,
) {
    let rule = &rules.rules[i];
    let Some(dump) = &rule.dump else { return };
    let Some(hook) = &dump.hold_hook else { return };
    let say = |event: DecisionKind, why: String| say_dump(shared, rule, facts, event, why);
    let fallback = "; its exceptions are watched the usual way (EventPipe) instead";
    if !Path::new(hook).is_file() {
        return say(
            DecisionKind::Error,
            format!("the hold hook {hook} is not there (hooks/build.sh builds it){fallback}"),
        );
    }
    if procfs::namespace(facts.pid, "mnt") != procfs::own_namespace("mnt") {
        return say(
            DecisionKind::Error,
            format!("the hold hook cannot reach watch from another mount namespace (a container){fallback}"),
        );
    }
    let max = dumps_left(shared, rule);
    if max == 0 || shared.stopping.load(Ordering::SeqCst) {
        return;
    }
    let dir = shared.out.join(&rule.name);
    if let Err(e) = clrspy_collect::private::create_private_dir(&dir) {
        return say(
            DecisionKind::Error,
            format!("cannot create {}: {e}{fallback}", dir.display()),
        );
    }
    let Some(set) = RuleDumps::new(shared, rules, i, facts, &dir, max) else {
        return;
    };
    // The rule's limits (max_actions, cooldown) are asked before each dump, as in the usual
    // watch: the hook's own limit is only an upper bound.
    let RuleDumps {
        dumps,
        gate,
        on_dump,
        patterns,
        ..
    } = set;
    let mut dumps = dumps.hold_with(Path::new(hook));
    let env = match dumps.start(None, on_dump) {
        Ok(DumpsStarted::Hold(env)) => env,
        Ok(DumpsStarted::Trigger(_)) => {
            drop(dumps.finish());
            return;
        }
        Err(e) => {
            return say(
                DecisionKind::Error,
                format!("the hold server: {e}{fallback}"),
            )
        }
    };
    // Only the hook's own variables: DOTNET_STARTUP_HOOKS is read before the port's commands.
    let vars: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k != "DOTNET_STARTUP_HOOKS")
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let applied = vars
        .iter()
        .try_for_each(|(k, v)| set_environment_variable(to, k, v, COMMAND_TIMEOUT))
        .and_then(|()| apply_startup_hook(to, hook, COMMAND_TIMEOUT));
    if let Err(e) = applied {
        drop(dumps.finish());
        return say(
            DecisionKind::Error,
            format!(
                "the runtime did not take the hold hook (it needs .NET 8 or later): {e}{fallback}"
            ),
        );
    }
    let ticks = start_ticks(facts.pid).unwrap_or(0);
    if let Ok(mut h) = shared.hooked.lock() {
        h.insert((facts.pid, ticks, rule.name.clone()));
    }
    let most = if max == u32::MAX {
        "any".to_string()
    } else {
        max.to_string()
    };
    say(
        DecisionKind::Watching,
        format!(
            "first-chance exceptions {} in the hold mode (hook applied while held: the throwing thread waits for its dump); at most {most} dump(s)",
            patterns.join(", ")
        ),
    );
    let (facts, rule_name) = (facts.clone(), rule.name.clone());
    shared.spawn(format!("clrspy-hold-{}", facts.pid), move |s| {
        // The server answers the hook until the process ends or watch stops.
        while start_ticks(facts.pid) == Some(ticks) && !s.stopping.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(200));
        }
        let n = dumps.finish().len();
        let skipped = gate.finish();
        let mut d = Decision::for_process(DecisionKind::WatchingEnded, &facts);
        d.rule = Some(rule_name);
        d.action = Some("dump");
        d.detail = Some(if skipped == 0 {
            format!("hold mode: {n} dump(s)")
        } else {
            format!("hold mode: {n} dump(s); {skipped} matching exception(s) skipped by the rule's limits")
        });
        s.emit(d);
    });
}
