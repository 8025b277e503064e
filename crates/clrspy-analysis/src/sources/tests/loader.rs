//! The `loader` model's tests: both recorders' traces of the loadfail workload, and bounds.

use super::analysed_file;
use crate::ModelSet;

/// The `loadfail` scenario recorded by clrspy and by dotnet-trace: the same loads and failures
/// (crates/clrspy/tests/data/README.md).
#[test]
fn assembly_loads_and_failures_of_both_recorders() {
    use crate::sources::loader::{context_key, LoaderModel};
    use clr_events::loader::{ResolutionResult, ResolutionStage};
    for file in [
        "loadfail.nettrace.zip",
        "loadfail-dotnet-trace.nettrace.zip",
    ] {
        let a = analysed_file(file, ModelSet::named(&["loader"]).unwrap());
        let m = a.model::<LoaderModel>().unwrap();
        assert_eq!((m.starts, m.stops, m.probes), (31, 31, 15), "{file}");
        assert_eq!((m.stops_unstarted, m.in_flight), (0, 0), "{file}");
        assert_eq!(m.resolution_attempts, 46, "{file}");
        assert_eq!(m.handler_events, 3, "{file}");
        assert_eq!(m.assembly_load_events, 19, "{file}");
        // Every module's assembly was named just before it.
        assert_eq!(
            m.modules.values().map(|s| s.count).sum::<u64>(),
            19,
            "{file}"
        );

        let failed: Vec<(&str, &str, u64)> = m
            .failures
            .iter()
            .map(|((c, n), f)| (c.as_str(), n.as_str(), f.count))
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "Default",
                    "Missing.Assembly, Version=1.2.3.4, Culture=neutral, PublicKeyToken=null",
                    1
                ),
                (
                    "Default",
                    "Workloads.Plugin.Dependency, Culture=neutral, PublicKeyToken=null",
                    1
                ),
            ],
            "{file}"
        );
        let missing = m.failures.values().next().unwrap();
        let stages: Vec<ResolutionStage> = missing.attempts.iter().map(|t| t.stage).collect();
        assert_eq!(
            stages,
            [
                ResolutionStage::FindInLoadContext,
                ResolutionStage::ApplicationAssemblies,
                ResolutionStage::AppDomainAssemblyResolveEvent
            ],
            "{file}"
        );
        assert!(missing
            .attempts
            .iter()
            .all(|t| t.result == ResolutionResult::AssemblyNotFound));
        assert!(missing
            .requested_by
            .starts_with("Workloads, Version=1.0.0.0"));
        // The dependency asked for by the LoadFrom'd plugin: its folder was probed for it.
        let dep = m.failures.values().nth(1).unwrap();
        assert_eq!(dep.probed.len(), 1, "{file}");
        assert!(dep.probed[0]
            .path
            .ends_with("/Workloads.Plugin.Dependency.dll"));
        assert_eq!(dep.probed[0].source, "LoadFromResolveHandler");
        assert!(dep.handlers[0].contains("LoadFromResolveHandler: returned null"));

        // Workloads in the default context and in a second one (loaded there once, then
        // found there again); the plugin at two versions, the second through a handler.
        let of = |name: &str| {
            m.loads
                .iter()
                .filter(|((_, n, _), _)| n.starts_with(name))
                .map(|((c, n, _), l)| (c.clone(), n[name.len()..].to_string(), l.clone()))
                .collect::<Vec<_>>()
        };
        let w = of("Workloads, ");
        let contexts: Vec<&str> = w.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            contexts,
            [
                "\"loadfail-second\" System.Runtime.Loader.AssemblyLoadContext",
                "Default"
            ],
            "{file}"
        );
        assert_eq!((w[0].2.count, w[0].2.reused), (1, 1), "{file}");
        let p = of("Workloads.Plugin, ");
        let found: Vec<(&str, &str, u64)> = p
            .iter()
            .map(|(c, v, l)| (c.as_str(), &v[..15], l.count))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "\"loadfail-v1\" System.Runtime.Loader.AssemblyLoadContext",
                    "Version=1.0.0.0",
                    1
                ),
                (
                    "\"loadfail-v2\" System.Runtime.Loader.AssemblyLoadContext",
                    "Version=2.0.0.0",
                    1
                ),
                ("Default", "Version=1.0.0.0", 1),
            ],
            "{file}"
        );
        assert_eq!(p[1].2.handler.as_deref(), Some("<Run>b__0"), "{file}");
        assert_eq!(p[1].2.reused, 1, "{file}");
    }
    assert_eq!(
        context_key("\"x\" System.Runtime.Loader.AssemblyLoadContext #12"),
        (
            "\"x\" System.Runtime.Loader.AssemblyLoadContext".to_string(),
            Some(12)
        )
    );
    assert_eq!(context_key("Default"), ("Default".to_string(), None));
}

/// One plugin loaded into 20,000 collectible contexts (a new `#N` each), and a missing
/// dependency asked for each time: one entry each, counted, whatever the count.
#[test]
fn the_loader_model_stays_bounded_at_any_load_count() {
    use crate::sources::loader::LoaderModel;
    use crate::{EventContext, Model, ModelEvent, Provider};
    use clr_events::loader::ids;
    use clr_events::KnownProvider;

    fn s(p: &mut Vec<u8>, v: &str) {
        p.extend(v.encode_utf16().flat_map(u16::to_le_bytes));
        p.extend([0, 0]);
    }
    fn start(name: &str, ctx: &str) -> Vec<u8> {
        let mut p = 0u16.to_le_bytes().to_vec();
        for v in [name, "", "Host", ctx, "Default"] {
            s(&mut p, v);
        }
        p
    }
    fn stop(name: &str, ctx: &str, ok: bool) -> Vec<u8> {
        let mut p = start(name, ctx);
        p.extend(u32::from(ok).to_le_bytes());
        s(&mut p, if ok { name } else { "" });
        s(&mut p, if ok { "/p/Plugin.dll" } else { "" });
        p.extend(0u32.to_le_bytes());
        p
    }
    let mut m = LoaderModel::default();
    let feed = |m: &mut LoaderModel, id: u32, payload: &[u8], ts: i64| {
        let ev = ModelEvent {
            provider: Provider::Known(KnownProvider::Runtime),
            id,
            version: 0,
            ts_ns: ts,
            thread_id: 1,
            payload,
            pointer_size: 8,
            stack: None,
            context: EventContext::default(),
        };
        m.on_event(&ev).unwrap();
    };
    const N: i64 = 20_000;
    for i in 0..N {
        let ctx = format!("\"plugin\" System.Runtime.Loader.AssemblyLoadContext #{i}");
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_START,
            &start("Plugin", &ctx),
            4 * i,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_STOP,
            &stop("Plugin", &ctx, true),
            4 * i + 1,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_START,
            &start("Dep", &ctx),
            4 * i + 2,
        );
        feed(
            &mut m,
            ids::ASSEMBLY_LOAD_STOP,
            &stop("Dep", &ctx, false),
            4 * i + 3,
        );
    }
    m.finish();
    assert_eq!((m.loads.len(), m.failures.len(), m.in_flight), (1, 1, 0));
    let l = m.loads.values().next().unwrap();
    assert_eq!((l.count, l.total_ns, l.max_ns), (N as u64, N, 1));
    assert_eq!(l.instances.len(), 64);
    assert!(l.more_instances);
    assert_eq!(m.failures.values().next().unwrap().count, N as u64);
}
