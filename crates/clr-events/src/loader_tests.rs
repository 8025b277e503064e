//! Tests of the loading events' views: payloads laid out as the runtime writes them.

use super::*;
use crate::event_name_for;

/// A payload builder: fields appended in order.
#[derive(Default)]
struct P(Vec<u8>);

impl P {
    fn u16(mut self, v: u16) -> P {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> P {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> P {
        self.0.extend(v.to_le_bytes());
        self
    }
    fn s(mut self, v: &str) -> P {
        self.0.extend(v.encode_utf16().flat_map(u16::to_le_bytes));
        self.0.extend([0, 0]);
        self
    }
}

const CTX: &str = "\"plugins\" System.Runtime.Loader.AssemblyLoadContext #3";

fn start_fields(p: P) -> P {
    p.u16(0)
        .s("Lib, Version=2.0.0.0")
        .s("/app/plugins/Lib.dll")
        .s("App, Version=1.0.0.0")
        .s(CTX)
        .s("Default")
}

#[test]
fn ids_match_the_names() {
    let rt = KnownProvider::Runtime;
    for (id, name) in [
        (ids::ASSEMBLY_LOAD, "Loader/AssemblyLoad"),
        (ids::ASSEMBLY_LOAD_START, "AssemblyLoader/Start"),
        (ids::ASSEMBLY_LOAD_STOP, "AssemblyLoader/Stop"),
        (
            ids::RESOLUTION_ATTEMPTED,
            "AssemblyLoader/ResolutionAttempted",
        ),
        (
            ids::ALC_RESOLVING_HANDLER_INVOKED,
            "AssemblyLoader/AssemblyLoadContextResolvingHandlerInvoked",
        ),
        (
            ids::APP_DOMAIN_RESOLVE_HANDLER_INVOKED,
            "AssemblyLoader/AppDomainAssemblyResolveHandlerInvoked",
        ),
        (
            ids::LOAD_FROM_RESOLVE_HANDLER_INVOKED,
            "AssemblyLoader/AssemblyLoadFromResolveHandlerInvoked",
        ),
        (ids::KNOWN_PATH_PROBED, "AssemblyLoader/KnownPathProbed"),
    ] {
        assert_eq!(event_name_for(rt, id, 0), Some(name), "event {id}");
    }
}

#[test]
fn start_and_stop() {
    let p = start_fields(P::default()).0;
    let s = AssemblyLoadStart::parse(&p, 0, 8).unwrap();
    assert_eq!(s.name.to_string(), "Lib, Version=2.0.0.0");
    assert_eq!(s.path.to_string(), "/app/plugins/Lib.dll");
    assert_eq!(s.requesting_assembly.to_string(), "App, Version=1.0.0.0");
    assert_eq!(s.load_context.to_string(), CTX);
    assert_eq!(s.requesting_load_context.to_string(), "Default");
    let e = AssemblyLoadStart::parse(&p[..p.len() - 4], 0, 8).unwrap_err();
    assert!(
        e.to_string().contains("RequestingAssemblyLoadContext"),
        "{e}"
    );

    let p = start_fields(P::default())
        .u32(1)
        .s("Lib, Version=2.0.0.0, Culture=neutral, PublicKeyToken=null")
        .s("/app/plugins/Lib.dll")
        .u32(0)
        .0;
    let stop = AssemblyLoadStop::parse(&p, 0, 8).unwrap();
    assert_eq!(stop.start, s);
    assert!(stop.success && !stop.cached);
    assert!(stop
        .result_name
        .to_string()
        .ends_with("PublicKeyToken=null"));
    assert_eq!(stop.result_path.to_string(), "/app/plugins/Lib.dll");
    // Cut before `Cached`: an error naming it, never a default.
    let e = AssemblyLoadStop::parse(&p[..p.len() - 2], 0, 8).unwrap_err();
    assert!(e.to_string().contains("Cached"), "{e}");
}

#[test]
fn resolution_attempted() {
    let p = P::default()
        .u16(0)
        .s("Missing, Version=1.2.3.4")
        .u16(2)
        .s("Default")
        .u16(1)
        .s("")
        .s("")
        .s("Could not locate assembly")
        .0;
    let r = ResolutionAttempted::parse(&p, 0, 8).unwrap();
    assert_eq!(r.stage, ResolutionStage::ApplicationAssemblies);
    assert_eq!(r.result, ResolutionResult::AssemblyNotFound);
    assert_eq!(r.load_context.to_string(), "Default");
    assert!(r.result_name.is_empty() && r.result_path.is_empty());
    assert_eq!(r.error_message.to_string(), "Could not locate assembly");
    assert_eq!(ResolutionStage::from_u16(9), ResolutionStage::Other(9));
    assert_eq!(
        ResolutionResult::from_u16(2).to_string(),
        "IncompatibleVersion"
    );
    assert_eq!(ResolutionStage::Other(9).to_string(), "9");
    assert!(ResolutionAttempted::parse(&p[..20], 0, 8).is_err());
}

#[test]
fn handlers() {
    let p = P::default()
        .u16(0)
        .s("Lib")
        .s("OnResolving")
        .s(CTX)
        .s("Lib, Version=2.0.0.0")
        .s("/x/Lib.dll")
        .0;
    let h = ResolveHandlerInvoked::parse(ids::ALC_RESOLVING_HANDLER_INVOKED, &p, 0, 8).unwrap();
    assert_eq!(h.handler.to_string(), "OnResolving");
    assert_eq!(h.load_context.to_string(), CTX);
    assert!(h.resolved());

    // The AppDomain handler's event has no context; `NULL` is what it writes for none.
    let p = P::default()
        .u16(0)
        .s("Lib")
        .s("LoadFromResolveHandler")
        .s("NULL")
        .s("NULL")
        .0;
    let h =
        ResolveHandlerInvoked::parse(ids::APP_DOMAIN_RESOLVE_HANDLER_INVOKED, &p, 0, 8).unwrap();
    assert!(h.load_context.is_empty());
    assert!(!h.resolved());
    assert!(
        ResolveHandlerInvoked::parse(ids::APP_DOMAIN_RESOLVE_HANDLER_INVOKED, &p[..30], 0, 8)
            .is_err()
    );

    let p = P::default()
        .u16(0)
        .s("Dep")
        .u32(1)
        .s("/x/Lib.dll")
        .s("/x/Dep.dll")
        .0;
    let f = LoadFromResolveHandlerInvoked::parse(&p, 0, 8).unwrap();
    assert!(f.tracked);
    assert_eq!(f.requesting_path.to_string(), "/x/Lib.dll");
    assert_eq!(f.computed_path.to_string(), "/x/Dep.dll");
    assert!(LoadFromResolveHandlerInvoked::parse(&p[..p.len() - 2], 0, 8).is_err());
}

#[test]
fn known_path_probed() {
    let p = P::default()
        .u16(0)
        .s("/app/fr/Lib.resources.dll")
        .u16(4)
        .u32(0x8007_0002)
        .0;
    let k = KnownPathProbed::parse(&p, 0, 8).unwrap();
    assert_eq!(k.source, ProbeSource::SatelliteSubdirectory);
    assert_eq!(k.result, 0x8007_0002);
    assert_eq!(
        ProbeSource::from_u16(0).to_string(),
        "ApplicationAssemblies"
    );
}

#[test]
fn assembly_load_versions() {
    // Version 0: no BindingID, no ClrInstanceID.
    let p = P::default()
        .u64(7)
        .u64(1)
        .u32(8)
        .s("Lib, Version=1.0.0.0")
        .0;
    let a = AssemblyLoad::parse(&p, 0, 8).unwrap();
    assert_eq!((a.assembly_id, a.flags), (7, AssemblyLoad::COLLECTIBLE));
    assert_eq!(a.name.to_string(), "Lib, Version=1.0.0.0");
    // Version 1: a BindingID before the flags, ClrInstanceID after the name.
    let p = P::default()
        .u64(7)
        .u64(1)
        .u64(0)
        .u32(2)
        .s("Lib, Version=1.0.0.0")
        .u16(0)
        .0;
    let a = AssemblyLoad::parse(&p, 1, 8).unwrap();
    assert_eq!((a.assembly_id, a.flags), (7, AssemblyLoad::DYNAMIC));
    assert!(AssemblyLoad::parse(&p[..20], 1, 8).is_err());
}
