//! Choosing the kernel's CPU sampler for a recording: open it on the target and leave the
//! runtime's sample profiler out of the session (nothing in the target is suspended to
//! sample), or say why the kernel refused, so the caller keeps the runtime's sampler.

use clrspy_sampler::Sampler;
use diagnostics_client::SessionConfig;

/// Said when the kernel samples in user mode only
/// ([`Sampler::user_mode_only`]): what is missing and how to allow it.
pub const USER_MODE_ONLY: &str = "the kernel samples user mode only here (perf_event_paranoid is 2 or more and clrspy lacks CAP_PERFMON): CPU a thread spends in system calls and page faults has no samples, and waiting has no stacks; run clrspy as root or with CAP_PERFMON, or set the sysctl kernel.perf_event_paranoid=1, to sample both";

/// Opens the kernel sampler (CPU samples, and waits where kernel mode is allowed) on every
/// thread of `pid` at `rate_hz` and takes the runtime's sample profiler out of `config`; on
/// an error `config` is left as it was (the caller says the error, whose text tells how to
/// allow the kernel sampler, and records as before).
pub fn use_kernel_sampler(
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

/// For a session about to start on `pid`: when the kernel sampler is asked for (`rate`, Hz)
/// and `sampler` holds none yet, opens it into `sampler` and returns `config` without the
/// runtime's sampler; else `config` as it is. A refusal (or samples in user mode only) comes
/// back in words, for the recording's [`Summary::notes`](crate::Summary::notes).
pub(crate) fn open_asked(
    pid: u32,
    config: &SessionConfig,
    rate: Option<u32>,
    sampler: &mut Option<Sampler>,
) -> (SessionConfig, Option<String>) {
    let mut config = config.clone();
    let refused = match (rate, sampler.is_some()) {
        (Some(rate), false) => match use_kernel_sampler(pid, rate, &mut config) {
            Ok(s) => {
                let note = s.user_mode_only().then(|| USER_MODE_ONLY.to_string());
                *sampler = Some(s);
                note
            }
            Err(e) => Some(format!("{e}; recorded with the runtime's sampler")),
        },
        _ => None,
    };
    (config, refused)
}

#[cfg(test)]
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
