//! Choosing who takes a recording's CPU samples: the kernel's sampler (opened on the target,
//! the runtime's sample profiler then left out of the session, so nothing in the target is
//! suspended to sample) or the runtime's, and the one line that says why when the kernel's
//! was asked for or preferred and not used.

use clrspy_sampler::Sampler;
use diagnostics_client::SessionConfig;

/// Said when the kernel samples in user mode only
/// ([`Sampler::user_mode_only`]): what is missing and how to allow it.
pub const USER_MODE_ONLY: &str = "the kernel samples user mode only here (perf_event_paranoid is 2 or more and clrspy lacks CAP_PERFMON): CPU a thread spends in system calls and page faults has no samples, and waiting has no stacks; run clrspy as root or with CAP_PERFMON, or set the sysctl kernel.perf_event_paranoid=1, to sample both";

/// Who takes a recording's CPU samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SamplerChoice {
    /// The runtime's sample profiler (it suspends the managed threads to walk their stacks).
    #[default]
    Runtime,
    /// The kernel's, at this rate (Hz), wherever it is allowed at all, even in user mode only
    /// (then without waits' stacks); refused, the runtime's.
    Kernel(u32),
    /// The kernel's at this rate where it samples whole (kernel mode too, so waits have their
    /// stacks and system calls their CPU); otherwise the runtime's, said in one line.
    Auto(u32),
}

impl SamplerChoice {
    /// The kernel sampler's rate when the kernel's samples are asked for or preferred.
    pub fn kernel_rate(self) -> Option<u32> {
        match self {
            SamplerChoice::Runtime => None,
            SamplerChoice::Kernel(r) | SamplerChoice::Auto(r) => Some(r),
        }
    }
}

/// Opens the kernel sampler (CPU samples, and waits where kernel mode is allowed) on every
/// thread of `pid` at `rate_hz` and takes the runtime's sample profiler out of `config`; on
/// an error `config` is left as it was (the caller says the error, whose text tells how to
/// allow the kernel sampler, and records as before).
pub(crate) fn use_kernel_sampler(
    pid: u32,
    rate_hz: u32,
    config: &mut SessionConfig,
) -> Result<Sampler, clrspy_sampler::Error> {
    // Waits too (a stack each time a thread leaves its CPU), where the kernel allows it.
    let sampler = Sampler::open_with(pid, rate_hz, true)?;
    config
        .providers
        .retain(|p| p.name != clr_events::SAMPLE_PROFILER_PROVIDER);
    Ok(sampler)
}

/// What [`choose`] decided.
#[derive(Debug)]
pub enum Chosen {
    /// The runtime's sampler, as asked (`None`) or in place of the kernel's, and why.
    Runtime(Option<String>),
    /// The kernel's sampler at this rate, open on the target; true when in user mode only
    /// ([`USER_MODE_ONLY`]).
    Kernel(Box<Sampler>, u32, bool),
}

/// Opens the sampler `choice` asks for on `pid`, taking the runtime's sample profiler out of
/// `config` when the kernel's is used; `config` is left as it was otherwise.
pub fn choose(pid: u32, choice: SamplerChoice, config: &mut SessionConfig) -> Chosen {
    let (rate, whole_only) = match for_config(choice, config) {
        SamplerChoice::Runtime => return Chosen::Runtime(None),
        SamplerChoice::Kernel(r) => (r, false),
        SamplerChoice::Auto(r) => (r, true),
    };
    let mut trial = config.clone();
    match use_kernel_sampler(pid, rate, &mut trial) {
        Ok(s) if whole_only && s.user_mode_only() => Chosen::Runtime(Some(PARTIAL.to_string())),
        Ok(s) => {
            *config = trial;
            let user_only = s.user_mode_only();
            Chosen::Kernel(Box::new(s), rate, user_only)
        }
        Err(e) => Chosen::Runtime(Some(e.to_string())),
    }
}

/// The sampler `choice` comes to for a session recording `config`: `auto` keeps the
/// runtime's (nothing to open) where the session samples no CPU (no sample profiler to take
/// the place of: `--profile gc`, a providers list without it). `kernel` stays: asked for by
/// name, it samples anyway.
pub(crate) fn for_config(choice: SamplerChoice, config: &SessionConfig) -> SamplerChoice {
    let samples_cpu = config
        .providers
        .iter()
        .any(|p| p.name == clr_events::SAMPLE_PROFILER_PROVIDER);
    match choice {
        SamplerChoice::Auto(_) if !samples_cpu => SamplerChoice::Runtime,
        c => c,
    }
}

/// Why `auto` leaves the kernel's sampler out where it samples user mode only.
const PARTIAL: &str = "the kernel's would sample user mode only here (perf_event_paranoid is 2 or more and clrspy lacks CAP_PERFMON: no stacks for waits, no CPU in system calls); run clrspy as root or with CAP_PERFMON, or set the sysctl kernel.perf_event_paranoid=1, to sample with the kernel (or --sampler kernel for user mode only)";

/// The line a recording says when the runtime's sampler takes the samples in place of the
/// kernel's, `why`.
pub fn runtime_instead(why: &str) -> String {
    format!("CPU samples from the runtime's sampler (it suspends the threads to sample): {why}")
}

/// Before launching a program to be sampled as `choice` says: whether the kernel's sampler
/// would be used on a process of this user, tried on clrspy itself (the program's runtime
/// is sampled from when it connects, too late to say the sampler first), for a session
/// recording `session` (`for_config`). The choice to keep, and why the runtime's sampler
/// is used when the kernel's was asked for or preferred.
pub fn preflight(
    choice: SamplerChoice,
    session: &SessionConfig,
) -> (SamplerChoice, Option<String>) {
    // A copy to try on: what `choose` takes out of it stays here.
    let mut config = session.clone();
    match choose(std::process::id(), choice, &mut config) {
        Chosen::Kernel(..) => (choice, None),
        Chosen::Runtime(why) => (SamplerChoice::Runtime, why),
    }
}

/// For a session about to start on `pid`: when the kernel sampler is asked for or preferred
/// (`choice`) and `sampler` holds none yet, opens it into `sampler` and returns `config`
/// without the runtime's sampler; else `config` as it is. Why the kernel's was not used (or
/// that it samples in user mode only) comes back in words, for the recording's
/// [`Summary::notes`](crate::Summary::notes).
pub(crate) fn open_asked(
    pid: u32,
    config: &SessionConfig,
    choice: SamplerChoice,
    sampler: &mut Option<Sampler>,
) -> (SessionConfig, Option<String>) {
    let mut config = config.clone();
    if sampler.is_some() {
        return (config, None);
    }
    let note = match choose(pid, choice, &mut config) {
        Chosen::Runtime(why) => why.map(|w| runtime_instead(&w)),
        Chosen::Kernel(s, _, user_only) => {
            *sampler = Some(*s);
            user_only.then(|| USER_MODE_ONLY.to_string())
        }
    };
    (config, note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use diagnostics_client::Provider;

    fn config() -> SessionConfig {
        let p = |name: &str| Provider {
            name: name.into(),
            keywords: 0,
            level: 5,
            arguments: None,
        };
        SessionConfig {
            circular_buffer_mb: 64,
            rundown_keyword: 0,
            stackwalk: true,
            providers: vec![
                p(clr_events::SAMPLE_PROFILER_PROVIDER),
                p(clr_events::RUNTIME_PROVIDER),
            ],
        }
    }

    /// `auto` has nothing to replace in a session that samples no CPU; `kernel` was asked for.
    #[test]
    fn auto_keeps_the_runtimes_where_no_cpu_is_sampled() {
        let mut gc_only = config();
        gc_only.providers.remove(0);
        assert_eq!(
            for_config(SamplerChoice::Auto(99), &gc_only),
            SamplerChoice::Runtime
        );
        assert_eq!(
            for_config(SamplerChoice::Auto(99), &config()),
            SamplerChoice::Auto(99)
        );
        assert_eq!(
            for_config(SamplerChoice::Kernel(99), &gc_only),
            SamplerChoice::Kernel(99)
        );
        let mut c = gc_only.clone();
        assert!(matches!(
            choose(std::process::id(), SamplerChoice::Auto(99), &mut c),
            Chosen::Runtime(None)
        ));
        assert_eq!(c, gc_only);
        assert_eq!(
            preflight(SamplerChoice::Auto(99), &gc_only),
            (SamplerChoice::Runtime, None)
        );
        // With CPU to sample, auto is tried on clrspy itself: kept, or a reason why not.
        match preflight(SamplerChoice::Auto(99), &config()) {
            (SamplerChoice::Auto(99), None) => {}
            (SamplerChoice::Runtime, Some(why)) => assert!(!why.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    /// This process may sample itself (perf_event_paranoid ≤ 2 here, as on most machines);
    /// then the runtime's sampler is left out. Where the kernel refuses, the config is kept.
    #[test]
    fn the_runtime_sampler_is_left_out_only_when_the_kernel_samples() {
        let mut c = config();
        match use_kernel_sampler(std::process::id(), 99, &mut c) {
            Ok(s) => {
                assert_eq!(s.rate_hz(), 99);
                let names: Vec<&str> = c.providers.iter().map(|p| p.name.as_str()).collect();
                assert_eq!(names, [clr_events::RUNTIME_PROVIDER]);
            }
            Err(e) => {
                assert_eq!(c.providers.len(), 2, "{e}");
            }
        }
        let mut c = config();
        let e = use_kernel_sampler(u32::MAX - 7, 99, &mut c).unwrap_err();
        assert!(matches!(e, clrspy_sampler::Error::NoThreads { .. }), "{e}");
        assert_eq!(c.providers.len(), 2);
    }
}
