//! The bundle's one session: the symptom's profile (or the user's), the logging provider
//! with the user's levels, the counters' providers, and what the stop triggers need — merged
//! so each provider is asked once (its keywords joined, its highest level, the logger's
//! category filters of the profile and of the user together).

use clr_events::counter_spec::CounterPlan;
use clrspy_analysis::counters::CounterSpec;
use clrspy_export::report::ReportKind;
use clrspy_live::counters::CountersOptions;
use clrspy_live::logs::LogsOptions;
use diagnostics_client::{Provider, SessionConfig, DEFAULT_RUNDOWN_KEYWORD};

use super::spec::BundleSpec;

/// The logging EventSource.
pub(crate) const LOGGING: &str = "Microsoft-Extensions-Logging";
/// The runtime's sample profiler.
const SAMPLER: &str = "Microsoft-DotNETCore-SampleProfiler";
/// The System.Net event sources `report http` reads.
const NET_SOURCES: &str = "System.Net.Http:0xffffffffffffffff:5,System.Net.NameResolution:0xffffffffffffffff:5,System.Net.Sockets:0xffffffffffffffff:5,System.Net.Security:0xffffffffffffffff:5";
/// The trace buffer in the target, MB (dotnet-trace's default is 256).
const BUFFER_MB: u32 = 256;

/// The session and what it was made of.
pub(crate) struct Planned {
    /// The session.
    pub(crate) config: SessionConfig,
    /// The profile (or "providers") in words, for the manifest.
    pub(crate) profile: String,
    /// The counters' session id (the Metrics provider's events carry it).
    pub(crate) counters_session: String,
    /// The counters asked for.
    pub(crate) counters: CounterSpec,
}

/// The session for `spec`, the target's runtime major version deciding how System.Runtime's
/// counters are asked for.
pub(crate) fn plan(spec: &BundleSpec, runtime_major: Option<u32>) -> Result<Planned, String> {
    let profile = spec
        .profile
        .clone()
        .or_else(|| spec.symptom.map(|s| s.profile().to_string()));
    let (mut providers, words) = match (&profile, &spec.providers) {
        (Some(p), extra) => (
            clr_events::provider_spec::resolve(Some(p), extra.as_deref(), None, None)?,
            p.clone(),
        ),
        (None, Some(extra)) => (
            clr_events::provider_spec::resolve(None, Some(extra), None, None)?,
            "providers".to_string(),
        ),
        // No symptom: requests, outgoing HTTP, CPU and waiting, GCs, exceptions, locks.
        (None, None) => (
            clr_events::provider_spec::resolve(Some("aspnet"), Some(NET_SOURCES), None, None)?,
            "aspnet + System.Net (the bundle's default)".to_string(),
        ),
    };
    let mut list: Vec<Provider> = providers
        .drain(..)
        .map(clrspy_collect::session_provider)
        .collect();
    // The logger: the user's levels, plus the categories the profile asked for.
    let logs = LogsOptions {
        level: spec.log_level,
        filter: joined_filter(&list, spec.log_filter.as_deref()),
        duration: None,
    };
    list.retain(|p| p.name != LOGGING);
    for p in clrspy_live::logs::session_config(&logs).providers {
        add(&mut list, p);
    }
    let counters = CounterSpec::default();
    let counters_session = format!(
        "clrspy-bundle-{}-{}",
        std::process::id(),
        super::staging::unix_ms()
    );
    let plan: CounterPlan = counters.plan(runtime_major);
    let copts = CountersOptions::default();
    for p in clrspy_live::counters::session_config(&plan, &counters_session, &copts).providers {
        add(&mut list, p);
    }
    let mut config = SessionConfig {
        circular_buffer_mb: BUFFER_MB,
        rundown_keyword: DEFAULT_RUNDOWN_KEYWORD,
        stackwalk: true,
        providers: list,
    };
    if let Some(t) = &spec.triggers {
        t.apply(&mut config);
    }
    Ok(Planned {
        config,
        profile: words,
        counters_session,
        counters,
    })
}

/// Adds `p`, or joins it to the provider of the same name.
fn add(list: &mut Vec<Provider>, p: Provider) {
    match list.iter_mut().find(|q| q.name == p.name) {
        Some(q) => {
            q.keywords |= p.keywords;
            q.level = q.level.max(p.level);
            if q.arguments.is_none() {
                q.arguments = p.arguments;
            }
        }
        None => list.push(p),
    }
}

/// The user's `--log-filter`, with the categories a profile's logging provider asked for
/// (the `aspnet` profile's routing log) before it.
fn joined_filter(list: &[Provider], user: Option<&str>) -> Option<String> {
    let from_profile: Vec<String> = list
        .iter()
        .filter(|p| p.name == LOGGING)
        .filter_map(|p| p.arguments.as_deref())
        .filter_map(|a| a.split_once("FilterSpecs=").map(|(_, v)| v))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .collect();
    let mut parts = from_profile;
    parts.extend(user.map(str::to_string));
    (!parts.is_empty()).then(|| parts.join(";"))
}

/// True when the session records what report `kind` reads: its samples, its providers, and
/// some of its runtime keywords beyond the names (loader and JIT) every session has.
pub(crate) fn supports(kind: ReportKind, config: &SessionConfig) -> bool {
    let needs = kind.needs();
    let has = |name: &str| config.providers.iter().any(|p| p.name == name);
    // The summary and the findings read whatever was recorded (each rule what it needs).
    if matches!(kind, ReportKind::Summary | ReportKind::Findings) {
        return true;
    }
    if needs.samples && !has(SAMPLER) {
        return false;
    }
    let named = needs
        .providers
        .split(',')
        .filter_map(|s| s.split(':').next())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter(|s| *s != LOGGING);
    for name in named {
        if !has(name) {
            return false;
        }
    }
    let wanted = needs.runtime_keywords & !clrspy_export::report::needs::LOADER_AND_JIT;
    let (recorded, level) = config
        .providers
        .iter()
        .filter(|p| p.name == clr_events::RUNTIME_PROVIDER)
        .fold((0, 0), |(k, l), p| (k | p.keywords, l.max(p.level)));
    wanted == 0 || (wanted & recorded != 0 && level >= needs.runtime_level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_asked_once_and_filters_join() {
        let mut list = vec![Provider {
            name: LOGGING.into(),
            keywords: 2,
            level: 4,
            arguments: Some("FilterSpecs=\"A.B:Information\"".into()),
        }];
        assert_eq!(
            joined_filter(&list, Some("MyApp:Debug")).as_deref(),
            Some("A.B:Information;MyApp:Debug")
        );
        add(
            &mut list,
            Provider {
                name: LOGGING.into(),
                keywords: 8,
                level: 5,
                arguments: None,
            },
        );
        assert_eq!(list.len(), 1);
        assert_eq!((list[0].keywords, list[0].level), (10, 5));
    }
}
