//! `exceptions-as-control-flow`: exceptions thrown as a matter of course (per request, many
//! a second): a throw costs tens of microseconds of stack walking and unwinding, more
//! through async frames, where each `await` rethrows it.
//!
//! Evidence: the exceptions thrown (rethrows apart), per second and per request, their
//! types, throw sites and how often async frames rethrew them.
//!
//! Thresholds: a warning at 100 thrown and 20 a second or 0.5 a request (a few errors a
//! second are errors; an exception every other request is how the code works); critical at
//! 500 a second or 5 a request; info from 10 thrown. Exceptions the app's code does not
//! catch (80% or more of the catch handlers that ran are the framework's: an ASP.NET Core
//! middleware answering 500, a faulted task) are failures, not control flow: info, saying
//! so. An async method's state machine catches every exception to fault its task, so its
//! handlers tell nothing and are left out of that count. Exceptions that mean a bug
//! (`ObjectDisposedException`, `NullReferenceException`, …: [`means_bug`]) are not control
//! flow however they are caught: `bug-exceptions` reports them.

use super::super::finding::{count, per_request, rate, top_sites, Found, Input, Rule, Severity, Site};
use clrspy_analysis::exceptions::throw_site;


/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "exceptions-as-control-flow",
    title: "Exceptions thrown as control flow",
    fix: "Do not throw for expected outcomes: use the Try pattern (`int.TryParse`, `TryGetValue`), return a result, or check before the call; keep exceptions for the exceptional.",
    link: "https://learn.microsoft.com/aspnet/core/fundamentals/best-practices#minimize-exceptions",
    check,
};

const WARN_THROWN: u64 = 100;
const WARN_RATE: f64 = 20.0;
const WARN_PER_REQUEST: f64 = 0.5;
const CRITICAL_RATE: f64 = 500.0;
const CRITICAL_PER_REQUEST: f64 = 5.0;
const INFO_THROWN: u64 = 10;

/// The severity of `thrown` exceptions at `per_s` a second, `per_req` a request when the
/// trace has requests.
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

fn check(input: &Input<'_>) -> Option<Found> {
    let e = input.exceptions();
    // Exceptions that mean a bug are `bug-exceptions`' (not control flow, however caught).
    let flow = || e.types.iter().filter(|t| !means_bug(&t.type_name));
    let thrown: u64 = flow().map(|t| t.thrown).sum();
    let rethrown: u64 = flow().map(|t| t.rethrown).sum();
    let seconds = input.seconds().max(1e-3);
    let per_s = thrown as f64 / seconds;
    let served = input.served();
    let per_req = served.map(|r| thrown as f64 / r as f64);
    let severity = grade(thrown, per_s, per_req)?;
    let escaped = escaped_app(input);
    let severity = if escaped.is_some() {
        Severity::Info
    } else {
        severity
    };
    let sites = throw_sites(input, |t| !means_bug(t));
    let top = sites
        .first()
        .map(|s| format!(", mostly {} ({}%)", s.name, s.percent))
        .unwrap_or_default();
    let said = format!(
        "{} exceptions thrown ({}{}){top}{}{}",
        count(thrown),
        rate(per_s),
        per_request(thrown as f64, served),
        if rethrown > 0 {
            format!("; {} more rethrown", count(rethrown))
        } else {
            String::new()
        },
        match &escaped {
            Some((by, 0)) => format!("; the app's code catches none of them (caught in {by}): these are failures, not control flow (see clrspy report exceptions)"),
            Some((by, pct)) => format!("; the app's code catches only {pct}% of them (the rest in {by}): these are failures, not control flow (see clrspy report exceptions)"),
            None => String::new(),
        }
    );
    let stack = flow()
        .max_by_key(|t| t.thrown)
        .and_then(|t| t.throw_sites.first())
        .map(|s| s.frames.clone())
        .unwrap_or_default();
    let mut found = Found::new(severity, said)
        .fact("thrown", count(thrown))
        .fact("rethrown (throw; or through await)", count(rethrown))
        .fact("per second", rate(per_s));
    if let Some(p) = per_req {
        found = found.fact("per request", format!("{p:.2}"));
    }
    Some(found.sites(sites).stack(stack))
}

/// True for the exception types that mean a bug in the code that threw or called (a usage
/// error: .NET's guidelines say never to catch them), never an expected outcome to handle:
/// using a disposed object, a null, a bad cast or index, a missing argument.
pub(super) fn means_bug(type_name: &str) -> bool {
    const BUGS: &[&str] = &[
        "System.NullReferenceException",
        "System.ObjectDisposedException",
        "System.InvalidCastException",
        "System.IndexOutOfRangeException",
        "System.ArgumentNullException",
        "System.ArgumentOutOfRangeException",
        "System.NotImplementedException",
        "System.DivideByZeroException",
        "System.ArrayTypeMismatchException",
        "System.AccessViolationException",
    ];
    BUGS.contains(&type_name)
}

/// The throw sites of the types `keep` keeps, heaviest first (the first five), each as
/// `TYPE in SITE` with its count. A throw stack's site is the app's own frame nearest the
/// throw (a parse helper of the framework throws for the app's call), else the first frame
/// outside the exception dispatch. Every stack of the model, not the report's top five; only
/// the original throws: not the runtime's flagged rethrows (`throw;`), nor the throws of a
/// rethrow helper (an `await` of a faulted task).
pub(super) fn throw_sites(input: &Input<'_>, keep: impl Fn(&str) -> bool) -> Vec<Site> {
    let app = input.a.symbols.app_code();
    let mut by_site: rustc_hash::FxHashMap<String, f64> = Default::default();
    for (type_name, t) in &input.a.exceptions.types {
        if !keep(type_name) {
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
            let site = frames
                .iter()
                .find(|f| app.contains(f))
                .map(String::as_str)
                .or_else(|| throw_site(&frames))
                .unwrap_or("[no stack]");
            *by_site.entry(format!("{type_name} in {site}")).or_default() += n as f64;
        }
    }
    let all: f64 = by_site.values().sum();
    top_sites(by_site.into_iter().collect(), all, 5, |n| {
        format!("{} thrown", count(n as u64))
    })
}

/// The framework's method that catches most, and the app's share of the catches (percent),
/// when the app's own code (its catch blocks, not its async state machines, which catch every
/// exception to fault their task) ran under 20% of the catch handlers that tell: the
/// exceptions escape the app.
fn escaped_app(input: &Input<'_>) -> Option<(String, u64)> {
    let app = input.a.symbols.app_code();
    let (mut in_app, mut framework) = (0u64, 0u64);
    let mut by: rustc_hash::FxHashMap<&str, u64> = Default::default();
    for (type_name, t) in &input.a.exceptions.types {
        if means_bug(type_name) {
            continue;
        }
        for (m, &n) in &t.catches {
            let state_machine = m.contains(">d") && m.contains("MoveNext");
            let own = app.contains(m)
                || !(m.starts_with("System.") || m.starts_with("Microsoft.") || m.starts_with('['));
            if own && state_machine {
                continue;
            }
            if own {
                in_app += n;
            } else {
                framework += n;
                *by.entry(m.as_str()).or_default() += n;
            }
        }
    }
    if framework == 0 || in_app * 5 >= in_app + framework {
        return None;
    }
    let pct = in_app * 100 / (in_app + framework);
    by.into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(m, _)| (m.to_string(), pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(170_790, 20_867.0, None), Some(Severity::Critical));
        assert_eq!(grade(4000, 100.0, Some(10.0)), Some(Severity::Critical));
        assert_eq!(grade(400, 40.0, None), Some(Severity::Warning));
        assert_eq!(grade(400, 2.0, Some(0.8)), Some(Severity::Warning));
        // A few errors a second, and a request in ten failing, are errors, not control flow.
        assert_eq!(grade(400, 2.0, Some(0.1)), Some(Severity::Info));
        assert_eq!(grade(50, 60.0, None), Some(Severity::Info));
        assert_eq!(grade(9, 100.0, None), None);
    }
}
