//! Decoding tests per event family, with payloads built byte by byte the way the runtime
//! writes them, for 8- and 4-byte pointers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clr_events::{
    decode, event_name, layout, DecodeError, Decoded, ThreadSampleType, Value, EVENTPIPE_PROVIDER,
    PRIVATE_PROVIDER, RUNDOWN_PROVIDER, RUNTIME_PROVIDER, SAMPLE_PROFILER_PROVIDER,
};

/// A little-endian payload builder.
#[derive(Default, Clone)]
struct P {
    b: Vec<u8>,
    ps: u8,
}

impl P {
    fn new(ps: u8) -> P {
        P { b: Vec::new(), ps }
    }
    fn u8(mut self, v: u8) -> P {
        self.b.push(v);
        self
    }
    fn u16(mut self, v: u16) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn i32(mut self, v: i32) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn i64(mut self, v: i64) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn f64(mut self, v: f64) -> P {
        self.b.extend(v.to_le_bytes());
        self
    }
    fn ptr(mut self, v: u64) -> P {
        if self.ps == 4 {
            self.b.extend((v as u32).to_le_bytes());
        } else {
            self.b.extend(v.to_le_bytes());
        }
        self
    }
    fn str(mut self, s: &str) -> P {
        for u in s.encode_utf16() {
            self.b.extend(u.to_le_bytes());
        }
        self.b.extend([0, 0]);
        self
    }
    fn ansi(mut self, s: &str) -> P {
        self.b.extend(s.as_bytes());
        self.b.push(0);
        self
    }
    fn guid(mut self, g: [u8; 16]) -> P {
        self.b.extend(g);
        self
    }
    fn bytes(mut self, b: &[u8]) -> P {
        self.b.extend(b);
        self
    }
}

fn dec(provider: &str, id: u32, version: u8, p: &P) -> Decoded {
    let d = decode(provider, id, version, &p.b, p.ps).expect("layout exists");
    assert_eq!(d.error, None, "{provider}/{id} v{version}: {:?}", d.error);
    assert_eq!(d.extra_bytes, 0, "{provider}/{id} v{version}");
    d
}

/// Every strict prefix of a valid payload decodes without panicking, keeps a prefix of the
/// fields and reports an error.
fn check_truncations(provider: &str, id: u32, version: u8, p: &P) {
    let full = decode(provider, id, version, &p.b, p.ps).unwrap();
    for cut in 0..p.b.len() {
        let d = decode(provider, id, version, &p.b[..cut], p.ps).unwrap();
        assert!(
            d.error.is_some(),
            "{provider}/{id} v{version} cut at {cut} decoded"
        );
        assert_eq!(d.extra_bytes, 0);
        assert!(d.fields.len() <= full.fields.len());
        // Every field before the last one is identical to the full decode.
        if d.fields.len() > 1 {
            assert_eq!(
                d.fields[..d.fields.len() - 1],
                full.fields[..d.fields.len() - 1]
            );
        }
    }
}

fn names(d: &Decoded) -> Vec<&str> {
    d.fields.iter().map(|f| f.name.as_ref()).collect()
}

#[test]
fn thread_sample() {
    let p = P::new(8).u32(2);
    let d = dec(SAMPLE_PROFILER_PROVIDER, 0, 0, &p);
    assert_eq!(d.u64("Type"), Some(2));
    assert_eq!(
        ThreadSampleType::from_payload(&p.b),
        Some(ThreadSampleType::Managed)
    );
    assert_eq!(
        ThreadSampleType::from_u32(1),
        Some(ThreadSampleType::External)
    );
    assert_eq!(ThreadSampleType::from_payload(&[1, 0]), None);
    assert_eq!(
        event_name(SAMPLE_PROFILER_PROVIDER, 0, 0),
        Some("Thread/Sample")
    );
    check_truncations(SAMPLE_PROFILER_PROVIDER, 0, 0, &p);
}

fn method_verbose(ps: u8, version: u8) -> P {
    let mut p = P::new(ps)
        .u64(0x7ff0_0000_1000)
        .u64(0x7ff0_0000_2000)
        .u64(0x7ff0_1234_0000)
        .u32(0x80)
        .u32(0x0600_0001)
        .u32(0x8)
        .str("Workloads")
        .str("Burn")
        .str("void  (int32)");
    if version >= 1 {
        p = p.u16(5);
    }
    if version >= 2 {
        p = p.u64(3);
    }
    p
}

#[test]
fn method_load_verbose_all_versions() {
    for v in 0..=2u8 {
        for ps in [4, 8] {
            let p = method_verbose(ps, v);
            for (prov, id, name) in [
                (RUNTIME_PROVIDER, 143, "Method/LoadVerbose"),
                (RUNTIME_PROVIDER, 144, "Method/UnloadVerbose"),
                (RUNDOWN_PROVIDER, 143, "Method/DCStartVerbose"),
                (RUNDOWN_PROVIDER, 144, "Method/DCStopVerbose"),
            ] {
                let d = dec(prov, id, v, &p);
                assert_eq!(layout(prov, id, v).unwrap().name, name);
                assert_eq!(d.u64("MethodStartAddress"), Some(0x7ff0_1234_0000));
                assert_eq!(d.u64("MethodSize"), Some(0x80));
                assert_eq!(d.str("MethodNamespace"), Some("Workloads"));
                assert_eq!(d.str("MethodName"), Some("Burn"));
                assert_eq!(d.str("MethodSignature"), Some("void  (int32)"));
                assert_eq!(d.u64("ClrInstanceID"), (v >= 1).then_some(5));
                assert_eq!(d.u64("ReJITID"), (v >= 2).then_some(3));
            }
        }
    }
    check_truncations(RUNDOWN_PROVIDER, 144, 2, &method_verbose(8, 2));
}

#[test]
fn method_load_non_verbose() {
    for v in 0..=2u8 {
        let mut p = P::new(8).u64(1).u64(2).u64(3).u32(4).u32(5).u32(6);
        if v >= 1 {
            p = p.u16(7);
        }
        if v >= 2 {
            p = p.u64(8);
        }
        for (prov, id) in [
            (RUNTIME_PROVIDER, 141),
            (RUNTIME_PROVIDER, 142),
            (RUNDOWN_PROVIDER, 141),
            (RUNDOWN_PROVIDER, 142),
        ] {
            let d = dec(prov, id, v, &p);
            assert_eq!(d.u64("MethodFlags"), Some(6));
            assert_eq!(d.fields.len(), 6 + v as usize);
        }
    }
}

#[test]
fn newer_version_leaves_extra_bytes() {
    // A hypothetical MethodLoadVerbose_V3 with a field appended.
    let p = method_verbose(8, 2).u32(0xdead);
    let d = decode(RUNTIME_PROVIDER, 143, 3, &p.b, 8).unwrap();
    assert_eq!(d.error, None);
    assert_eq!(d.extra_bytes, 4);
    assert_eq!(d.u64("ReJITID"), Some(3));
}

fn il_map(ps: u8, version: u8) -> P {
    let mut p = P::new(ps)
        .u64(0x1000)
        .u64(0)
        .u8(0)
        .u16(3)
        .i32(-2)
        .i32(0)
        .i32(-3)
        .u32(0)
        .u32(5)
        .u32(40)
        .u16(0);
    if version >= 1 {
        p = p.u64(9);
    }
    p
}

#[test]
fn il_to_native_maps() {
    for v in 0..=1u8 {
        let p = il_map(8, v);
        for (prov, id, name) in [
            (RUNTIME_PROVIDER, 190, "Method/ILToNativeMap"),
            (RUNDOWN_PROVIDER, 149, "Method/ILToNativeMapDCStart"),
            (RUNDOWN_PROVIDER, 150, "Method/ILToNativeMapDCStop"),
        ] {
            let d = dec(prov, id, v, &p);
            assert_eq!(event_name(prov, id, v), Some(name));
            assert_eq!(
                d.array("ILOffsets").unwrap(),
                &[Value::I32(-2), Value::I32(0), Value::I32(-3)]
            );
            assert_eq!(
                d.array("NativeOffsets").unwrap(),
                &[Value::U32(0), Value::U32(5), Value::U32(40)]
            );
            assert_eq!(d.u64("ILVersionID"), (v == 1).then_some(9));
        }
    }
    check_truncations(RUNDOWN_PROVIDER, 150, 1, &il_map(8, 1));
    // A count the payload cannot hold is an error, not an allocation.
    let p = P::new(8).u64(1).u64(0).u8(0).u16(u16::MAX).u32(1);
    let d = decode(RUNTIME_PROVIDER, 190, 0, &p.b, 8).unwrap();
    assert!(matches!(
        d.error,
        Some(DecodeError::CountTooLarge {
            field: "ILOffsets",
            count: 65535,
            ..
        })
    ));
    assert_eq!(d.u64("CountOfMapEntries"), Some(65535));
}

#[test]
fn loader_events() {
    let module_v2 = P::new(8)
        .u64(0xa)
        .u64(0xb)
        .u32(0x8)
        .u32(0)
        .str("/app/App.dll")
        .str("")
        .u16(0)
        .guid([1; 16])
        .u32(1)
        .str("/src/App.pdb")
        .guid([0; 16])
        .u32(0)
        .str("");
    for (prov, id) in [
        (RUNTIME_PROVIDER, 152),
        (RUNTIME_PROVIDER, 153),
        (RUNDOWN_PROVIDER, 153),
        (RUNDOWN_PROVIDER, 154),
    ] {
        let d = dec(prov, id, 2, &module_v2);
        assert_eq!(d.str("ModuleILPath"), Some("/app/App.dll"));
        assert_eq!(d.str("ManagedPdbBuildPath"), Some("/src/App.pdb"));
        assert_eq!(d.guid("ManagedPdbSignature").unwrap().0, [1; 16]);
    }
    let module_v3 = module_v2.clone().str("abc123");
    let d = dec(RUNTIME_PROVIDER, 152, 3, &module_v3);
    assert_eq!(d.str("NativeBuildID"), Some("abc123"));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 152, 3),
        Some("Loader/ModuleLoad")
    );
    check_truncations(RUNTIME_PROVIDER, 152, 3, &module_v3);

    let assembly = P::new(8)
        .u64(1)
        .u64(2)
        .u64(3)
        .u32(0)
        .str("App, Version=1.0.0.0")
        .u16(0);
    for (prov, id, name) in [
        (RUNTIME_PROVIDER, 154, "Loader/AssemblyLoad"),
        (RUNTIME_PROVIDER, 155, "Loader/AssemblyUnload"),
        (RUNDOWN_PROVIDER, 155, "Loader/AssemblyDCStart"),
        (RUNDOWN_PROVIDER, 156, "Loader/AssemblyDCStop"),
    ] {
        let d = dec(prov, id, 1, &assembly);
        assert_eq!(d.u64("BindingID"), Some(3));
        assert_eq!(
            d.str("FullyQualifiedAssemblyName"),
            Some("App, Version=1.0.0.0")
        );
        assert_eq!(event_name(prov, id, 1), Some(name));
    }

    let domain_module = P::new(8)
        .u64(1)
        .u64(2)
        .u64(3)
        .u32(0)
        .u32(0)
        .str("a")
        .str("b")
        .u16(0);
    dec(RUNTIME_PROVIDER, 151, 1, &domain_module);
    dec(RUNDOWN_PROVIDER, 151, 1, &domain_module);
    dec(RUNDOWN_PROVIDER, 152, 1, &domain_module);

    let app_domain = P::new(8).u64(1).u32(1).str("clrhost").u32(1).u16(0);
    let d = dec(RUNTIME_PROVIDER, 156, 1, &app_domain);
    assert_eq!(d.str("AppDomainName"), Some("clrhost"));
    dec(RUNDOWN_PROVIDER, 157, 1, &app_domain);
    dec(RUNDOWN_PROVIDER, 158, 1, &app_domain);
}

#[test]
fn gc_start_end_heap_stats() {
    let v0 = P::new(8).u32(1).u32(4);
    let d = dec(RUNTIME_PROVIDER, 1, 0, &v0);
    assert_eq!(names(&d), ["Count", "Reason"]);
    let v2 = P::new(8).u32(1).u32(2).u32(4).u32(0).u16(0).u64(77);
    let d = dec(RUNTIME_PROVIDER, 1, 2, &v2);
    assert_eq!(
        names(&d),
        [
            "Count",
            "Depth",
            "Reason",
            "Type",
            "ClrInstanceID",
            "ClientSequenceNumber"
        ]
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 1, 2), Some("GC/Start"));
    check_truncations(RUNTIME_PROVIDER, 1, 2, &v2);

    let end0 = P::new(8).u32(1).u16(2);
    assert_eq!(dec(RUNTIME_PROVIDER, 2, 0, &end0).u64("Depth"), Some(2));
    let end1 = P::new(8).u32(1).u32(2).u16(0);
    assert_eq!(dec(RUNTIME_PROVIDER, 2, 1, &end1).u64("Depth"), Some(2));

    let mut stats = P::new(8);
    for i in 0..10 {
        stats = stats.u64(i * 100);
    }
    stats = stats.u32(1).u32(2).u32(3).u16(0).u64(999).u64(1000);
    let d = dec(RUNTIME_PROVIDER, 4, 2, &stats);
    assert_eq!(d.u64("GenerationSize4"), Some(999));
    assert_eq!(d.u64("TotalPromotedSize4"), Some(1000));
    assert_eq!(d.u64("GCHandleCount"), Some(3));
}

#[test]
fn gc_suspend_restart_triggered() {
    assert!(dec(RUNTIME_PROVIDER, 3, 0, &P::new(8)).fields.is_empty());
    for id in [3, 7, 8] {
        let d = dec(RUNTIME_PROVIDER, id, 1, &P::new(8).u16(3));
        assert_eq!(d.u64("ClrInstanceID"), Some(3));
    }
    let d = dec(RUNTIME_PROVIDER, 9, 1, &P::new(8).u32(1).u32(12).u16(0));
    assert_eq!(d.u64("Count"), Some(12));
    dec(RUNTIME_PROVIDER, 9, 0, &P::new(8).u16(1));
    dec(RUNTIME_PROVIDER, 35, 0, &P::new(8).u32(4).u16(0));
    dec(
        RUNTIME_PROVIDER,
        5,
        1,
        &P::new(8).u64(1).u64(2).u32(0).u16(0),
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 3, 1), Some("GC/RestartEEStop"));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 7, 1),
        Some("GC/RestartEEStart")
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 8, 1), Some("GC/SuspendEEStop"));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 9, 1),
        Some("GC/SuspendEEStart")
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 35, 0), Some("GC/Triggered"));
}

fn alloc_tick(ps: u8, version: u8) -> P {
    let mut p = P::new(ps).u32(100_000).u32(0);
    if version >= 1 {
        p = p.u16(0);
    }
    if version >= 2 {
        p = p.u64(100_000).ptr(0x7ff0_dead).str("System.String").u32(1);
    }
    if version >= 3 {
        p = p.ptr(0x7f00_1000);
    }
    if version >= 4 {
        p = p.u64(48);
    }
    p
}

#[test]
fn gc_allocation_tick_all_versions() {
    for v in 0..=4u8 {
        for ps in [4, 8] {
            let p = alloc_tick(ps, v);
            let d = dec(RUNTIME_PROVIDER, 10, v, &p);
            assert_eq!(d.u64("AllocationAmount"), Some(100_000));
            if v >= 2 {
                assert_eq!(d.str("TypeName"), Some("System.String"));
                assert_eq!(d.get("TypeID"), Some(&Value::Pointer(0x7ff0_dead)));
                assert_eq!(d.u64("HeapIndex"), Some(1));
            }
            assert_eq!(d.u64("Address"), (v >= 3).then_some(0x7f00_1000));
            assert_eq!(d.u64("ObjectSize"), (v >= 4).then_some(48));
        }
    }
    let d = dec(RUNTIME_PROVIDER, 10, 4, &alloc_tick(8, 4));
    assert_eq!(
        names(&d),
        [
            "AllocationAmount",
            "AllocationKind",
            "ClrInstanceID",
            "AllocationAmount64",
            "TypeID",
            "TypeName",
            "HeapIndex",
            "Address",
            "ObjectSize"
        ]
    );
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 10, 4),
        Some("GC/AllocationTick")
    );
    check_truncations(RUNTIME_PROVIDER, 10, 4, &alloc_tick(4, 4));
    // Decoding a 4-byte-pointer payload as 8-byte pointers misreads, but never panics.
    let p = alloc_tick(4, 4);
    let d = decode(RUNTIME_PROVIDER, 10, 4, &p.b, 8).unwrap();
    assert!(d.error.is_some() || d.extra_bytes == 0);
}

#[test]
fn gc_per_heap_and_global_history() {
    for ps in [4, 8] {
        let mut p = P::new(ps).u16(0);
        for i in 0..6 {
            p = p.ptr(i);
        }
        p = p.u32(1).u32(2).u32(3).u32(4).u32(5).u32(6).ptr(7).u32(5);
        for gen in 0..5u64 {
            for i in 0..10u64 {
                p = p.ptr(gen * 100 + i);
            }
        }
        let d = dec(RUNTIME_PROVIDER, 204, 3, &p);
        let gens = d.array("Values").unwrap();
        assert_eq!(gens.len(), 5);
        assert_eq!(
            Decoded::field_of(&gens[4], "NewAllocation"),
            Some(&Value::Pointer(409))
        );
        assert_eq!(d.u64("HeapIndex"), Some(6));
        check_truncations(RUNTIME_PROVIDER, 204, 3, &p);
    }
    // Older (.NET Framework) per-heap layouts are not described.
    assert!(layout(RUNTIME_PROVIDER, 204, 2).is_none());

    let v2 = P::new(8)
        .u64(1)
        .i32(4)
        .u32(2)
        .u32(0)
        .u32(1)
        .u32(0)
        .u16(0)
        .u32(1)
        .u32(0);
    let d = dec(RUNTIME_PROVIDER, 205, 2, &v2);
    assert_eq!(d.i64("NumHeaps"), Some(4));
    let v4 = v2.clone().u32(7).u32(8).u32(2).u32(100).u32(200);
    let d = dec(RUNTIME_PROVIDER, 205, 4, &v4);
    assert_eq!(d.u64("CondemnReasons1"), Some(8));
    let times = d.array("Values").unwrap();
    assert_eq!(Decoded::field_of(&times[1], "Time"), Some(&Value::U32(200)));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 205, 4),
        Some("GC/GlobalHeapHistory")
    );
}

#[test]
fn heap_dump_events() {
    for ps in [4, 8] {
        let p = P::new(ps)
            .u32(0)
            .u32(2)
            .u16(0)
            .ptr(0x1000)
            .u64(24)
            .u64(0xabc)
            .u64(1)
            .ptr(0x2000)
            .u64(32)
            .u64(0xdef)
            .u64(0);
        let d = dec(RUNTIME_PROVIDER, 18, 0, &p);
        let nodes = d.array("Values").unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(
            Decoded::field_of(&nodes[1], "Address"),
            Some(&Value::Pointer(0x2000))
        );
        assert_eq!(
            Decoded::field_of(&nodes[0], "EdgeCount"),
            Some(&Value::U64(1))
        );

        let edges = P::new(ps).u32(0).u32(1).u16(0).ptr(0x2000).u32(3);
        let d = dec(RUNTIME_PROVIDER, 19, 0, &edges);
        assert_eq!(d.array("Values").unwrap().len(), 1);

        let roots = P::new(ps)
            .u32(0)
            .u32(1)
            .u16(0)
            .ptr(0x1000)
            .u8(1)
            .u32(0)
            .ptr(0x5);
        let d = dec(RUNTIME_PROVIDER, 16, 0, &roots);
        let r = &d.array("Values").unwrap()[0];
        assert_eq!(Decoded::field_of(r, "GCRootKind"), Some(&Value::U8(1)));
        check_truncations(RUNTIME_PROVIDER, 16, 0, &roots);

        let cwt = P::new(ps).u32(0).u32(1).u16(0).ptr(1).ptr(2).ptr(3);
        dec(RUNTIME_PROVIDER, 17, 0, &cwt);

        let statics = P::new(ps)
            .u32(1)
            .u64(1)
            .u16(0)
            .u64(1)
            .u64(2)
            .u64(3)
            .u32(0)
            .str("s_cache");
        let d = dec(RUNTIME_PROVIDER, 38, 0, &statics);
        let s = &d.array("Values").unwrap()[0];
        assert_eq!(
            Decoded::field_of(s, "FieldName"),
            Some(&Value::String("s_cache".into()))
        );
    }
    assert_eq!(event_name(RUNTIME_PROVIDER, 18, 0), Some("GC/BulkNode"));
    assert_eq!(event_name(RUNTIME_PROVIDER, 19, 0), Some("GC/BulkEdge"));
    assert_eq!(event_name(RUNTIME_PROVIDER, 16, 0), Some("GC/BulkRootEdge"));
}

#[test]
fn bulk_type() {
    let p = P::new(8)
        .u32(2)
        .u16(0)
        .u64(0x100)
        .u64(0x200)
        .u32(0)
        .u32(0)
        .u8(0x12)
        .str("System.Collections.Generic.List`1")
        .u32(1)
        .u64(0x300)
        .u64(0x300)
        .u64(0x200)
        .u32(0)
        .u32(0)
        .u8(0x8)
        .str("System.Int32")
        .u32(0);
    let d = dec(RUNTIME_PROVIDER, 15, 0, &p);
    let types = d.array("Values").unwrap();
    assert_eq!(types.len(), 2);
    assert_eq!(
        Decoded::field_of(&types[0], "TypeParameters"),
        Some(&Value::Array(vec![Value::U64(0x300)]))
    );
    assert_eq!(
        Decoded::field_of(&types[1], "Name"),
        Some(&Value::String("System.Int32".into()))
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 15, 0), Some("Type/BulkType"));
    check_truncations(RUNTIME_PROVIDER, 15, 0, &p);
    // A type count the payload cannot hold.
    let p = P::new(8).u32(1_000_000).u16(0).u64(1);
    let d = decode(RUNTIME_PROVIDER, 15, 0, &p.b, 8).unwrap();
    assert!(matches!(
        d.error,
        Some(DecodeError::CountTooLarge {
            field: "Values",
            ..
        })
    ));
}

fn exception(ps: u8) -> P {
    P::new(ps)
        .str("System.InvalidOperationException")
        .str("boom")
        .ptr(0x7ff0_0000_1234 & if ps == 4 { 0xffff_ffff } else { u64::MAX })
        .u32(0x8013_1509)
        .u16(0x10)
        .u16(0)
}

#[test]
fn exceptions() {
    for ps in [4, 8] {
        let d = dec(RUNTIME_PROVIDER, 80, 1, &exception(ps));
        assert_eq!(
            d.str("ExceptionType"),
            Some("System.InvalidOperationException")
        );
        assert_eq!(d.str("ExceptionMessage"), Some("boom"));
        assert_eq!(d.u64("ExceptionHRESULT"), Some(0x8013_1509));
        assert_eq!(d.u64("ExceptionFlags"), Some(0x10));
        check_truncations(RUNTIME_PROVIDER, 80, 1, &exception(ps));
    }
    assert_eq!(event_name(RUNTIME_PROVIDER, 80, 1), Some("Exception/Start"));
    assert!(dec(RUNTIME_PROVIDER, 80, 0, &P::new(8)).fields.is_empty());

    let catch = P::new(8).u64(0x1000).u64(0x2000).str("Program.Main").u16(0);
    for (id, name) in [
        (250, "ExceptionCatch/Start"),
        (252, "ExceptionFinally/Start"),
        (254, "ExceptionFilter/Start"),
    ] {
        let d = dec(RUNTIME_PROVIDER, id, 0, &catch);
        assert_eq!(d.str("MethodName"), Some("Program.Main"));
        assert_eq!(event_name(RUNTIME_PROVIDER, id, 0), Some(name));
    }
    for (id, name) in [
        (251, "ExceptionCatch/Stop"),
        (253, "ExceptionFinally/Stop"),
        (255, "ExceptionFilter/Stop"),
        (256, "Exception/Stop"),
    ] {
        assert!(dec(RUNTIME_PROVIDER, id, 0, &P::new(8)).fields.is_empty());
        assert_eq!(event_name(RUNTIME_PROVIDER, id, 0), Some(name));
    }
}

#[test]
fn contention() {
    assert!(dec(RUNTIME_PROVIDER, 81, 0, &P::new(8)).fields.is_empty());
    dec(RUNTIME_PROVIDER, 81, 1, &P::new(8).u8(0).u16(0));
    for ps in [4, 8] {
        let p = P::new(ps).u8(0).u16(0).ptr(0x10).ptr(0x20).u64(42);
        let d = dec(RUNTIME_PROVIDER, 81, 2, &p);
        assert_eq!(d.get("LockID"), Some(&Value::Pointer(0x10)));
        assert_eq!(d.u64("LockOwnerThreadID"), Some(42));
        check_truncations(RUNTIME_PROVIDER, 81, 2, &p);
        let created = P::new(ps).ptr(0x10).ptr(0x20).u16(0);
        dec(RUNTIME_PROVIDER, 90, 0, &created);
    }
    dec(RUNTIME_PROVIDER, 91, 0, &P::new(8).u8(1).u16(0));
    let d = dec(RUNTIME_PROVIDER, 91, 1, &P::new(8).u8(0).u16(0).f64(1500.5));
    assert_eq!(d.f64("DurationNs"), Some(1500.5));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 81, 2),
        Some("Contention/Start")
    );
    assert_eq!(event_name(RUNTIME_PROVIDER, 91, 1), Some("Contention/Stop"));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 90, 0),
        Some("Contention/LockCreated")
    );
}

#[test]
fn thread_pool() {
    let worker = P::new(8).u32(3).u32(0).u16(0);
    for (id, name) in [
        (50, "ThreadPoolWorkerThread/Start"),
        (51, "ThreadPoolWorkerThread/Stop"),
        (57, "ThreadPoolWorkerThread/Wait"),
    ] {
        let d = dec(RUNTIME_PROVIDER, id, 0, &worker);
        assert_eq!(d.u64("ActiveWorkerThreadCount"), Some(3));
        assert_eq!(event_name(RUNTIME_PROVIDER, id, 0), Some(name));
    }
    dec(RUNTIME_PROVIDER, 54, 0, &P::new(8).f64(12.5).u16(0));
    let d = dec(
        RUNTIME_PROVIDER,
        55,
        0,
        &P::new(8).f64(1.0).u32(4).u32(3).u16(0),
    );
    assert_eq!(d.u64("NewWorkerThreadCount"), Some(4));
    let mut stats = P::new(8);
    for i in 0..9 {
        stats = stats.f64(i as f64);
    }
    dec(RUNTIME_PROVIDER, 56, 0, &stats.u16(1).u16(0));
    for ps in [4, 8] {
        let d = dec(
            RUNTIME_PROVIDER,
            63,
            0,
            &P::new(ps).ptr(1).ptr(2).u32(1).u16(0),
        );
        assert_eq!(d.bool("MultiDequeues"), Some(true));
        dec(RUNTIME_PROVIDER, 64, 0, &P::new(ps).ptr(1).ptr(2).u16(0));
        dec(RUNTIME_PROVIDER, 61, 0, &P::new(ps).ptr(1).u16(0));
        dec(RUNTIME_PROVIDER, 301, 0, &P::new(ps).u8(1).ptr(9).u16(0));
    }
    dec(
        RUNTIME_PROVIDER,
        59,
        0,
        &P::new(8).u16(4).u16(32767).u16(4).u16(1000).u16(0),
    );
    let d = dec(
        RUNTIME_PROVIDER,
        85,
        0,
        &P::new(8).u64(1).u64(2).u32(4).u32(5).u32(1234).u16(0),
    );
    assert_eq!(d.u64("OSThreadID"), Some(1234));
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 54, 0),
        Some("ThreadPoolWorkerThreadAdjustment/Sample")
    );
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 63, 0),
        Some("ThreadPool/IOEnqueue")
    );
    assert_eq!(
        event_name(RUNTIME_PROVIDER, 64, 0),
        Some("ThreadPool/IODequeue")
    );
}

#[test]
fn rundown_misc_and_eventpipe() {
    let p = P::new(8).u16(0).str("RuntimeResumed").i64(123_456_789);
    let d = dec(RUNDOWN_PROVIDER, 300, 0, &p);
    assert_eq!(d.str("Name"), Some("RuntimeResumed"));
    assert_eq!(d.i64("Timestamp"), Some(123_456_789));
    assert_eq!(
        event_name(RUNDOWN_PROVIDER, 300, 0),
        Some("ExecutionCheckpointRundown/ExecutionCheckpointDCEnd")
    );
    dec(RUNTIME_PROVIDER, 300, 0, &p);

    let info = P::new(8)
        .u16(0)
        .u16(2)
        .u16(8)
        .u16(0)
        .u16(0)
        .u16(0)
        .u16(8)
        .u16(0)
        .u16(24)
        .u16(0)
        .u32(0)
        .u8(1)
        .str("dotnet app.dll")
        .guid([0; 16])
        .str("/usr/share/dotnet/libcoreclr.so");
    for prov in [RUNTIME_PROVIDER, RUNDOWN_PROVIDER] {
        let d = dec(prov, 187, 0, &info);
        assert_eq!(d.str("CommandLine"), Some("dotnet app.dll"));
        assert_eq!(event_name(prov, 187, 0), Some("Runtime/Start"));
    }

    let proc_info = P::new(8).str("/app/app --x").str("Linux").str("x64");
    // The runtime writes ProcessInfo's metadata as version 1.
    let d = dec(EVENTPIPE_PROVIDER, 1, 1, &proc_info);
    assert_eq!(d.str("OSInformation"), Some("Linux"));
    assert_eq!(d.str("ArchInformation"), Some("x64"));
    assert_eq!(event_name(EVENTPIPE_PROVIDER, 1, 0), Some("ProcessInfo"));
    // .NET 5 wrote version 0 with the command line only.
    let d = dec(EVENTPIPE_PROVIDER, 1, 0, &P::new(8).str("app"));
    assert_eq!(d.str("CommandLine"), Some("app"));

    let settings = P::new(8)
        .u64(0)
        .u64(85000)
        .u64(0)
        .u64(0)
        .u64(0)
        .u32(0)
        .u32(1)
        .u16(0);
    let d = dec(RUNDOWN_PROVIDER, 10, 0, &settings);
    assert_eq!(d.u64("LOHThreshold"), Some(85000));

    for (id, name) in [(146, "Method/DCStopComplete"), (148, "Method/DCStopInit")] {
        dec(RUNDOWN_PROVIDER, id, 1, &P::new(8).u16(0));
        assert_eq!(event_name(RUNDOWN_PROVIDER, id, 1), Some(name));
    }
    for ps in [4, 8] {
        let plug = P::new(ps).ptr(1).ptr(2).ptr(3).u16(0);
        dec(PRIVATE_PROVIDER, 199, 0, &plug);
    }
}

#[test]
fn strings_and_blobs() {
    let ansi = P::new(8)
        .str("a")
        .str("b")
        .str("c")
        .str("d")
        .str("e")
        .str("f")
        .str("g")
        .str("h")
        .str("i")
        .u32(1)
        .ansi("too deep")
        .u16(0);
    let d = dec(RUNTIME_PROVIDER, 186, 0, &ansi);
    assert_eq!(d.str("FailReason"), Some("too deep"));
    assert_eq!(d.bool("FailAlways"), Some(true));

    let dynamic = P::new(8)
        .str("CommittedUsage")
        .u32(3)
        .bytes(&[1, 2, 3])
        .u16(0);
    let d = dec(RUNTIME_PROVIDER, 39, 0, &dynamic);
    assert_eq!(d.bytes("Data"), Some(&[1u8, 2, 3][..]));
    check_truncations(RUNTIME_PROVIDER, 39, 0, &dynamic);
    let huge = P::new(8).str("X").u32(u32::MAX).bytes(&[0; 8]);
    let d = decode(RUNTIME_PROVIDER, 39, 0, &huge.b, 8).unwrap();
    assert!(matches!(
        d.error,
        Some(DecodeError::CountTooLarge { field: "Data", .. })
    ));
}

#[test]
fn stack_walk_reads_frame_count_pointers() {
    for ps in [4, 8] {
        let p = P::new(ps).u16(0).u8(0).u8(0).u32(3).ptr(1).ptr(2).ptr(3);
        let d = dec(RUNTIME_PROVIDER, 82, 0, &p);
        assert_eq!(d.array("Stack").unwrap().len(), 3);
    }
}

#[test]
fn bad_pointer_size_is_reported() {
    let d = decode(RUNTIME_PROVIDER, 10, 4, &alloc_tick(8, 4).b, 0).unwrap();
    assert_eq!(d.error, Some(DecodeError::BadPointerSize(0)));
    assert!(d.fields.is_empty());
}
