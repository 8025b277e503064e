//! Consistency checks over the whole layout and name tables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use clr_events::{
    all_layouts, event_name, event_name_for, known_provider, layout, layout_for, FieldDef,
    FieldKind, KnownProvider, RUNDOWN_PROVIDER, RUNTIME_PROVIDER, SAMPLE_PROFILER_PROVIDER,
};

/// Every count/length field a layout names is decoded earlier at the same level and is an
/// integer; every struct has a non-zero minimum size; names are unique per level.
fn check_fields(what: &str, fields: &[FieldDef]) {
    let mut seen: Vec<&FieldDef> = Vec::new();
    let mut names = HashSet::new();
    for f in fields {
        assert!(names.insert(f.name), "{what}: duplicate field {}", f.name);
        let count = match f.kind {
            FieldKind::Array { count, .. } => Some(count),
            FieldKind::Blob { len } => Some(len),
            FieldKind::Structs { count, fields } => {
                let min: usize = fields.iter().map(|f| f.min_size(4)).sum();
                assert!(min > 0, "{what}: struct {} can be empty", f.name);
                check_fields(&format!("{what}.{}", f.name), fields);
                Some(count)
            }
            _ => None,
        };
        if let Some(count) = count {
            let c = seen
                .iter()
                .rev()
                .find(|s| s.name == count)
                .unwrap_or_else(|| panic!("{what}: {} counts by missing {count}", f.name));
            assert!(
                matches!(c.kind, FieldKind::Scalar(_)),
                "{what}: count {count} is not a scalar"
            );
        }
        seen.push(f);
    }
}

#[test]
fn layouts_are_well_formed_and_unique() {
    let mut keys = HashSet::new();
    let mut n = 0;
    let mut not_appending = Vec::new();
    for l in all_layouts() {
        n += 1;
        assert!(
            keys.insert((l.provider, l.event_id, l.version)),
            "duplicate layout {:?}/{} v{}",
            l.provider,
            l.event_id,
            l.version
        );
        check_fields(
            &format!("{:?}/{} v{}", l.provider, l.event_id, l.version),
            l.fields(),
        );
        // The layout's name is TraceEvent's whenever TraceEvent names the event.
        if let Some(name) = event_name_for(l.provider, l.event_id.into(), l.version) {
            assert_eq!(l.name, name, "{:?}/{}", l.provider, l.event_id);
        }
        // Every version of one event has the same name, and newer versions only append.
        if let Some(prev) = l
            .version
            .checked_sub(1)
            .and_then(|v| layout_for(l.provider, l.event_id.into(), v))
        {
            assert_eq!(prev.name, l.name);
            let old: Vec<_> = prev.field_names().collect();
            let new: Vec<_> = l.field_names().collect();
            if !new.starts_with(&old) {
                not_appending.push((l.provider, l.event_id, l.version));
            }
        }
    }
    assert!(n > 200, "only {n} layouts");
    // Only V1 of GCStart (inserted Depth) and of the assembly events (inserted BindingID)
    // reordered earlier fields (GCEnd and GCSuspendEE V1 widened one, keeping the names); every
    // other new version only appends.
    not_appending.sort();
    assert_eq!(
        not_appending,
        [
            (KnownProvider::Runtime, 1, 1),
            (KnownProvider::Runtime, 154, 1),
            (KnownProvider::Runtime, 155, 1),
            (KnownProvider::Rundown, 155, 1),
            (KnownProvider::Rundown, 156, 1),
        ]
    );
}

#[test]
fn lookup_picks_highest_version_not_above() {
    assert_eq!(layout(RUNTIME_PROVIDER, 10, 0).unwrap().version, 0);
    assert_eq!(layout(RUNTIME_PROVIDER, 10, 3).unwrap().version, 3);
    assert_eq!(layout(RUNTIME_PROVIDER, 10, 200).unwrap().version, 4);
    assert_eq!(layout(RUNTIME_PROVIDER, 205, 7).unwrap().version, 4);
    assert!(layout(RUNTIME_PROVIDER, 203, 1).is_none());
    assert_eq!(layout(RUNTIME_PROVIDER, 203, 2).unwrap().version, 2);
    assert!(layout(RUNTIME_PROVIDER, 9999, 0).is_none());
    assert!(layout(RUNTIME_PROVIDER, 1 << 20, 0).is_none());
    assert!(layout("Some-Other-Provider", 1, 0).is_none());
    assert!(layout(SAMPLE_PROFILER_PROVIDER, 0, 0).is_some());
    assert!(layout(&RUNTIME_PROVIDER.to_uppercase(), 1, 2).is_some());
}

#[test]
fn providers() {
    for p in KnownProvider::ALL {
        assert_eq!(known_provider(p.name()), Some(p));
        assert_eq!(known_provider(&p.name().to_ascii_lowercase()), Some(p));
    }
    assert_eq!(known_provider("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"), None);
    assert_eq!(known_provider(""), None);
}

#[test]
fn traceevent_names() {
    let cases: &[(&str, u32, &str)] = &[
        (RUNTIME_PROVIDER, 1, "GC/Start"),
        (RUNTIME_PROVIDER, 2, "GC/Stop"),
        (RUNTIME_PROVIDER, 10, "GC/AllocationTick"),
        (RUNTIME_PROVIDER, 15, "Type/BulkType"),
        (RUNTIME_PROVIDER, 29, "GC/FinalizeObject"),
        (RUNTIME_PROVIDER, 58, "YieldProcessorMeasurement"),
        (RUNTIME_PROVIDER, 80, "Exception/Start"),
        (RUNTIME_PROVIDER, 81, "Contention/Start"),
        (RUNTIME_PROVIDER, 141, "Method/Load"),
        (RUNTIME_PROVIDER, 143, "Method/LoadVerbose"),
        (RUNTIME_PROVIDER, 145, "Method/JittingStarted"),
        (RUNTIME_PROVIDER, 187, "Runtime/Start"),
        (RUNTIME_PROVIDER, 189, "Method/TailCallFailedAnsi"),
        (RUNTIME_PROVIDER, 202, "GC/MarkWithType"),
        (RUNTIME_PROVIDER, 204, "GC/PerHeapHistory"),
        (RUNTIME_PROVIDER, 290, "AssemblyLoader/Start"),
        (
            RUNTIME_PROVIDER,
            300,
            "ExecutionCheckpoint/ExecutionCheckpoint",
        ),
        (RUNTIME_PROVIDER, 303, "AllocationSampling"),
        (RUNDOWN_PROVIDER, 0, "ClrStack/Walk"),
        (RUNDOWN_PROVIDER, 143, "Method/DCStartVerbose"),
        (RUNDOWN_PROVIDER, 144, "Method/DCStopVerbose"),
        (RUNDOWN_PROVIDER, 146, "Method/DCStopComplete"),
        (RUNDOWN_PROVIDER, 153, "Loader/ModuleDCStart"),
        (RUNDOWN_PROVIDER, 159, "Loader/ThreadDCStop"),
        (clr_events::PRIVATE_PROVIDER, 199, "GC/PinPlugAtGCTime"),
        (clr_events::PRIVATE_PROVIDER, 80, "Startup/EEStartupStart"),
        (SAMPLE_PROFILER_PROVIDER, 0, "Thread/Sample"),
    ];
    for &(p, id, name) in cases {
        assert_eq!(event_name(p, id, 0), Some(name), "{p}/{id}");
    }
    // Events TraceEvent does not name itself.
    assert_eq!(event_name(RUNTIME_PROVIDER, 200, 0), None);
    assert_eq!(event_name(RUNDOWN_PROVIDER, 160, 0), None);
    assert_eq!(event_name("My-EventSource", 1, 0), None);
    assert_eq!(event_name(RUNTIME_PROVIDER, u32::MAX, 0), None);
}
