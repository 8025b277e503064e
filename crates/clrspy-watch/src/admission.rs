//! Admission: whether one of a rule's actions may go now. A pure function of what the rule
//! did so far (its [`RuleState`]), its [`Limits`], the output disk's free bytes, whether
//! watch is stopping, and the time — no I/O, no locks: the caller reads the disk, holds the
//! state, logs a refusal and counts a yes ([`admit`]).

use std::path::Path;
use std::time::{Duration, Instant};

use clrspy_rules::Limits;
use clrspy_rules::RuleState;

/// Below this many free bytes the output disk counts as full.
pub(crate) const MIN_FREE: u64 = 256 << 10;

/// What an admission is decided on, besides the rule's state and limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AdmissionInput {
    /// The time of the request.
    pub(crate) now: Instant,
    /// Free bytes on the output disk; `None` when they could not be read (not counted as full).
    pub(crate) free_bytes: Option<u64>,
    /// Watch is stopping: no new actions.
    pub(crate) stopping: bool,
    /// The rule's cooldown applies (a crash dump is not paced: the runtime wrote it already,
    /// and it is the one dump of that process).
    pub(crate) paced: bool,
}

/// Whether a rule's action may go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Yes.
    Go,
    /// No: watch is stopping.
    Stopping,
    /// No: the output disk has less than [`MIN_FREE`] bytes free.
    DiskFull,
    /// No: `max_actions` were taken already.
    MaxActions(u32),
    /// No: the cooldown has this much left.
    Cooldown(Duration),
}

impl Admission {
    /// Why not, in words, the output folder `out` named when the disk is full.
    pub(crate) fn why(&self, out: &Path) -> String {
        match self {
            Admission::DiskFull => format!(
                "the output disk is full ({} has less than 256 KB free)",
                out.display()
            ),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Admission::Go => f.write_str("go"),
            Admission::Stopping => f.write_str("watch is stopping"),
            Admission::DiskFull => f.write_str("the output disk is full (less than 256 KB free)"),
            Admission::MaxActions(n) => write!(f, "max_actions ({n}) reached"),
            Admission::Cooldown(d) => write!(f, "cooldown: {:.1} s left", d.as_secs_f64()),
        }
    }
}

/// True when `free_bytes` (when known) says the output disk is full.
pub(crate) fn disk_full(free_bytes: Option<u64>) -> bool {
    free_bytes.is_some_and(|f| f < MIN_FREE)
}

/// The decision on one action of a rule that did `state` so far under `limits`, asked as
/// `input` says. Checked in order: stopping, the disk, `max_actions`, the cooldown.
pub(crate) fn admission(state: &RuleState, limits: &Limits, input: &AdmissionInput) -> Admission {
    if input.stopping {
        return Admission::Stopping;
    }
    if disk_full(input.free_bytes) {
        return Admission::DiskFull;
    }
    if let Some(max) = limits.max_actions {
        if state.actions >= max {
            return Admission::MaxActions(max);
        }
    }
    if let (Some(c), Some(last), true) = (limits.cooldown, state.last, input.paced) {
        let since = input.now.saturating_duration_since(last);
        if since < c.0 {
            return Admission::Cooldown(c.0 - since);
        }
    }
    Admission::Go
}

/// [`admission`], a yes counted into `state` at once (an action taken at `input.now`).
pub(crate) fn admit(state: &mut RuleState, limits: &Limits, input: &AdmissionInput) -> Admission {
    let verdict = admission(state, limits, input);
    if verdict == Admission::Go {
        state.actions += 1;
        state.last = Some(input.now);
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_rules::Dur;

    fn input(now: Instant) -> AdmissionInput {
        AdmissionInput {
            now,
            free_bytes: Some(1 << 30),
            stopping: false,
            paced: true,
        }
    }

    fn limited() -> Limits {
        Limits {
            max_actions: Some(2),
            cooldown: Some(Dur(Duration::from_secs(60))),
            disk_mb: None,
        }
    }

    #[test]
    fn no_limits_always_go_and_every_yes_is_counted() {
        let mut s = RuleState::default();
        let t0 = Instant::now();
        for _ in 0..100 {
            assert_eq!(admit(&mut s, &Limits::default(), &input(t0)), Admission::Go);
        }
        assert_eq!(s.actions, 100);
        assert_eq!(s.last, Some(t0));
    }

    #[test]
    fn stopping_refuses_first_and_counts_nothing() {
        let mut s = RuleState::default();
        let ask = AdmissionInput {
            stopping: true,
            free_bytes: Some(0),
            ..input(Instant::now())
        };
        assert_eq!(admit(&mut s, &limited(), &ask), Admission::Stopping);
        assert_eq!(s.actions, 0);
        assert_eq!(
            Admission::Stopping.why(Path::new("/o")),
            "watch is stopping"
        );
    }

    #[test]
    fn a_full_disk_refuses_before_the_limits_an_unknown_one_does_not() {
        let t0 = Instant::now();
        let mut s = RuleState {
            actions: 2,
            last: Some(t0),
        };
        for free in [0, MIN_FREE - 1] {
            let ask = AdmissionInput {
                free_bytes: Some(free),
                ..input(t0)
            };
            assert_eq!(admit(&mut s, &limited(), &ask), Admission::DiskFull);
        }
        assert_eq!(
            Admission::DiskFull.why(Path::new("/o")),
            "the output disk is full (/o has less than 256 KB free)"
        );
        let mut fresh = RuleState::default();
        for free in [None, Some(MIN_FREE)] {
            let ask = AdmissionInput {
                free_bytes: free,
                ..input(t0)
            };
            assert_eq!(
                admission(&fresh, &Limits::default(), &ask),
                Admission::Go,
                "{free:?}"
            );
        }
        assert_eq!(
            admit(&mut fresh, &Limits::default(), &input(t0)),
            Admission::Go
        );
        assert_eq!(s.actions, 2, "refusals are not counted");
    }

    #[test]
    fn max_actions_and_cooldown() {
        let limits = limited();
        let mut s = RuleState::default();
        let t0 = Instant::now();
        assert_eq!(admit(&mut s, &limits, &input(t0)), Admission::Go);
        let early = admit(&mut s, &limits, &input(t0 + Duration::from_secs(10)));
        assert_eq!(early, Admission::Cooldown(Duration::from_secs(50)));
        assert_eq!(early.why(Path::new("/o")), "cooldown: 50.0 s left");
        assert_eq!(
            admit(&mut s, &limits, &input(t0 + Duration::from_secs(61))),
            Admission::Go
        );
        let late = admit(&mut s, &limits, &input(t0 + Duration::from_secs(200)));
        assert_eq!(late, Admission::MaxActions(2));
        assert_eq!(late.to_string(), "max_actions (2) reached");
        assert_eq!(s.actions, 2);
        assert_eq!(s.last, Some(t0 + Duration::from_secs(61)));
    }

    #[test]
    fn an_unpaced_action_skips_the_cooldown_but_counts_and_max_actions_still_holds() {
        let limits = limited();
        let mut s = RuleState::default();
        let t0 = Instant::now();
        let unpaced = AdmissionInput {
            paced: false,
            ..input(t0)
        };
        assert_eq!(admit(&mut s, &limits, &input(t0)), Admission::Go);
        assert!(matches!(
            admit(&mut s, &limits, &input(t0)),
            Admission::Cooldown(_)
        ));
        assert_eq!(admit(&mut s, &limits, &unpaced), Admission::Go);
        assert_eq!(admit(&mut s, &limits, &unpaced), Admission::MaxActions(2));
    }

    #[test]
    fn a_clock_before_the_last_action_counts_as_no_time_passed() {
        let limits = Limits {
            cooldown: Some(Dur(Duration::from_secs(5))),
            ..Limits::default()
        };
        let t0 = Instant::now();
        let s = RuleState {
            actions: 1,
            last: Some(t0 + Duration::from_secs(1)),
        };
        assert_eq!(
            admission(&s, &limits, &input(t0)),
            Admission::Cooldown(Duration::from_secs(5))
        );
    }
}
