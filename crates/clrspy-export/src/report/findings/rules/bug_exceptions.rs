//! `bug-exceptions`: exceptions that mean a bug (`ObjectDisposedException`,
//! `NullReferenceException`, an invalid cast or index, a null argument), thrown over and
//! over and swallowed. They are not an outcome the code handles but a defect it hides: work
//! started and forgotten (`Task.Run` or an un-awaited async call) that uses the request's
//! services after the request ended throws `ObjectDisposedException` into a task nobody
//! awaits, and nothing but a trace shows it.
//!
//! Evidence: those exceptions thrown (rethrows apart), per second and per request, by type
//! and throw site, and where they were caught: only by async state machines with no `await`
//! rethrowing them (the tasks fault and nobody looks: fire and forget), by the app's own
//! catch blocks, or by the framework.
//!
//! Thresholds: the throws the app's code called into count (a stack with an app frame); the
//! framework's own, caught by itself, are its business (info at most). Critical from 100 a
//! second or one a request (the code fails all the time); warning from 20 at 1 a second or
//! 0.1 a request (one request in ten hits the bug); info from 10. A bug thrown a few times in
//! a trace is worth knowing, not a pattern.

use super::super::finding::{count, per_request, rate, Found, Input, Rule, Severity};
use super::exceptions_flow::{means_bug, throw_sites};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "bug-exceptions",
    title: "Exceptions that mean a bug, thrown and swallowed again and again",
    fix: "Fix the code at the throw site instead of catching: an ObjectDisposedException in work started with Task.Run and not awaited means it uses the request's services (a DbContext) after the request ended: await it, or create its own scope with IServiceScopeFactory; check for null rather than catch a NullReferenceException.",
    link: "https://learn.microsoft.com/aspnet/core/fundamentals/best-practices#do-not-capture-services-injected-into-the-controllers-on-background-threads",
    check,
};

const INFO_THROWN: u64 = 10;
const WARN_THROWN: u64 = 20;
const WARN_RATE: f64 = 1.0;
const WARN_PER_REQUEST: f64 = 0.1;
const CRITICAL_RATE: f64 = 100.0;
const CRITICAL_PER_REQUEST: f64 = 1.0;
/// Share of the catches that says who catches (state machines, the framework).
const MOSTLY: f64 = 0.8;

/// The severity of `thrown` bug exceptions the app called into, at `per_s` a second and
/// `per_req` a request when the trace has requests.
fn grade(thrown: u64, per_s: f64, per_req: Option<f64>) -> Option<Severity> {
    if thrown < INFO_THROWN {
        None
    } else if per_s >= CRITICAL_RATE || per_req.is_some_and(|p| p >= CRITICAL_PER_REQUEST) {
        Some(Severity::Critical)
    } else if thrown >= WARN_THROWN
        && (per_s >= WARN_RATE || per_req.is_some_and(|p| p >= WARN_PER_REQUEST))
    {
        Some(Severity::Warning)
    } else {
        Some(Severity::Info)
    }
}

/// Who caught them.
#[derive(Debug, PartialEq)]
enum Caught {
    /// Only async methods' state machines, and no `await` rethrew them: faulted tasks
    /// nobody awaits.
    Forgotten(String),
    /// Mostly the framework (a middleware answering 500).
    Framework(String),
    /// The app's own catch blocks (or a mix).
    App(String),
    /// No catch handler seen.
    Unknown,
}

/// Who caught the bug exceptions, from the catch handlers that ran and the rethrows.
fn caught(input: &Input<'_>, rethrown: u64) -> Caught {
    let app = input.a.symbols.app_code();
    let (mut machines, mut framework, mut own) = (0u64, 0u64, 0u64);
    let mut by: rustc_hash::FxHashMap<&str, u64> = Default::default();
    for (type_name, t) in &input.a.exceptions.types {
        if !means_bug(type_name) {
            continue;
        }
        for (m, &n) in &t.catches {
            *by.entry(m.as_str()).or_default() += n;
            let is_app = app.contains(m)
                || !(m.starts_with("System.") || m.starts_with("Microsoft.") || m.starts_with('['));
            if m.contains(">d") && m.contains("MoveNext") {
                machines += n;
            } else if is_app {
                own += n;
            } else {
                framework += n;
            }
        }
    }
    let all = machines + framework + own;
    let top = by
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(m, _)| m.to_string());
    let Some(top) = top.filter(|_| all > 0) else {
        return Caught::Unknown;
    };
    if machines as f64 >= MOSTLY * all as f64 && rethrown == 0 {
        Caught::Forgotten(top)
    } else if framework as f64 >= MOSTLY * all as f64 {
        Caught::Framework(top)
    } else {
        Caught::App(top)
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let e = input.exceptions();
    let bugs = || e.types.iter().filter(|t| means_bug(&t.type_name));
    let thrown: u64 = bugs().map(|t| t.thrown).sum();
    let rethrown: u64 = bugs().map(|t| t.rethrown).sum();
    if thrown < INFO_THROWN {
        return None;
    }
    let in_app = thrown_under_app(input);
    let seconds = input.seconds().max(1e-3);
    let served = input.served();
    let severity = if in_app >= INFO_THROWN {
        grade(
            in_app,
            in_app as f64 / seconds,
            served.map(|r| in_app as f64 / r as f64),
        )?
    } else {
        Severity::Info
    };
    let sites = throw_sites(input, means_bug);
    let top = sites
        .first()
        .map(|s| format!(", mostly {} ({}%)", s.name, s.percent))
        .unwrap_or_default();
    let per_s = thrown as f64 / seconds;
    let how = match caught(input, rethrown) {
        Caught::Forgotten(by) => format!(
            "; caught only by async methods' own state machines (mostly {by}), which fault their tasks, and no `await` rethrew one: nobody awaits those tasks (fire and forget), so every failure goes unseen"
        ),
        Caught::Framework(by) => format!("; caught by the framework (mostly in {by}): the calls fail"),
        Caught::App(by) => format!("; the code catches them (mostly in {by}): a bug handled as an outcome"),
        Caught::Unknown => String::new(),
    };
    let said = format!(
        "{} exceptions that mean a bug thrown ({}{}){top}{}{how}",
        count(thrown),
        rate(per_s),
        per_request(thrown as f64, served),
        if in_app < thrown {
            format!("; {} of them under the app's code", count(in_app))
        } else {
            String::new()
        },
    );
    let stack = bugs()
        .max_by_key(|t| t.thrown)
        .and_then(|t| t.throw_sites.first())
        .map(|s| s.frames.clone())
        .unwrap_or_default();
    let mut found = Found::new(severity, said)
        .fact("thrown", count(thrown))
        .fact("under the app's code", count(in_app))
        .fact("rethrown (throw; or through await)", count(rethrown))
        .fact("per second", rate(per_s));
    if let Some(r) = served {
        found = found.fact("per request", format!("{:.2}", thrown as f64 / r as f64));
    }
    Some(found.sites(sites).stack(stack))
}

/// The original throws of bug exceptions whose stack has a frame of the app's code (the app
/// called into what threw, or threw itself).
fn thrown_under_app(input: &Input<'_>) -> u64 {
    let app = input.a.symbols.app_code();
    let mut n_app = 0;
    for (type_name, t) in &input.a.exceptions.types {
        if !means_bug(type_name) {
            continue;
        }
        for (&stack, &n) in &t.stacks {
            let n = n.saturating_sub(t.flagged.get(&stack).copied().unwrap_or(0));
            if n == 0 {
                continue;
            }
            let frames = input.a.frames(stack);
            if clrspy_analysis::exceptions::rethrow_helper(&frames).is_some() {
                continue;
            }
            if frames.iter().any(|f| app.contains(f)) {
                n_app += n;
            }
        }
    }
    n_app
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        // DiagnosticScenarios' /fire-and-forget-2: 992 ObjectDisposedException a second.
        assert_eq!(grade(8179, 992.0, Some(1.0)), Some(Severity::Critical));
        assert_eq!(grade(300, 5.0, Some(0.2)), Some(Severity::Warning));
        assert_eq!(grade(40, 2.0, None), Some(Severity::Warning));
        // A handful in a long trace: worth knowing.
        assert_eq!(grade(12, 0.1, Some(0.01)), Some(Severity::Info));
        assert_eq!(grade(9, 100.0, None), None);
    }

    #[test]
    fn the_bug_types() {
        assert!(means_bug("System.ObjectDisposedException"));
        assert!(means_bug("System.NullReferenceException"));
        // Thrown for expected outcomes: control flow when caught as such.
        assert!(!means_bug("System.FormatException"));
        assert!(!means_bug("System.Collections.Generic.KeyNotFoundException"));
        assert!(!means_bug("System.InvalidOperationException"));
        assert!(!means_bug("System.OperationCanceledException"));
    }
}
