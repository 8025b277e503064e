//! Tests of clrspy's own provider's events (encoders against their metadata, old layouts).

use super::*;

/// Each encoder writes what its metadata declares: nettrace's metadata-driven decoder
/// reads every field back.
#[test]
fn encoders_match_the_metadata() {
    let md = metadata();
    assert_eq!(md.len(), EVENTS.len());
    let mut p = Vec::new();
    ModuleMap::encode(0x1000, 0x2000, 0x40, "/usr/lib/libcoreclr.so", &mut p);
    let m = ModuleMap::parse(&p).unwrap();
    assert_eq!((m.start, m.end, m.offset), (0x1000, 0x2000, 0x40));
    assert_eq!(m.path.to_string(), "/usr/lib/libcoreclr.so");
    let mm = md.iter().find(|m| m.event_name == "ModuleMap").unwrap();
    let names: Vec<&str> = mm.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["Start", "End", "Offset", "Path"]);
    assert_eq!(mm.fields[3].ty, FieldType::String16);

    p.clear();
    ThreadName::encode(7, "worker", &mut p);
    let t = ThreadName::parse(&p).unwrap();
    assert_eq!((t.thread_id, t.name.to_string().as_str()), (7, "worker"));
    p.clear();
    KernelSample::encode(4242, &[0x7f00_0000_1234, 0x5555_0000_0010], &mut p);
    let k = KernelSample::parse(&p).unwrap();
    assert_eq!(k.thread_id, 4242);
    let ips: Vec<u64> = nettrace::Stack::new(k.frames, 8).ips().collect();
    assert_eq!(ips, [0x7f00_0000_1234, 0x5555_0000_0010]);
    assert!(KernelSample::parse(&p[..3]).is_err());
    assert!(KernelSample::parse(&p[..p.len() - 1]).is_err());
    assert_eq!(
        k.stack_id, 0,
        "a sample of the traces before has no stack id"
    );
    let ksm = md.iter().find(|m| m.event_name == "KernelSample").unwrap();
    assert_eq!(ksm.fields.len(), 3);
    assert_eq!(ksm.fields[1].ty, FieldType::Array(Box::new(FieldType::U64)));
    // One by stack id: no frames, the id after them, read by the metadata too.
    p.clear();
    KernelSample::encode_by_id(4243, 0x4000_0005, &mut p);
    let k = KernelSample::parse(&p).unwrap();
    assert_eq!(
        (k.thread_id, k.frames.len(), k.stack_id),
        (4243, 0, 0x4000_0005)
    );
    let d = nettrace::decode_payload(&ksm.fields, &p);
    let names: Vec<&str> = d.fields.iter().map(|f| &*f.name).collect();
    assert_eq!(names, ["ThreadID", "Frames", "StackID"], "{d:?}");
    assert_eq!(
        KernelSample::thread_of(&2u32.to_le_bytes(), 99).unwrap(),
        99
    );
    assert_eq!(KernelSample::thread_of(&p, 99).unwrap(), 4243);
    p.clear();
    let mut w = Vec::new();
    KernelWait::encode(77, &[0x7f00_0000_4321], 12_345_678, true, 0, &mut w);
    let kw = KernelWait::parse(&w).unwrap();
    assert_eq!(
        (
            kw.sample.thread_id,
            kw.sample.frames.len(),
            kw.duration_ns,
            kw.preempted
        ),
        (77, 8, 12_345_678, true)
    );
    assert!(KernelWait::parse(&w[..w.len() - 1]).is_err());
    let kwm = md.iter().find(|m| m.event_name == "KernelWait").unwrap();
    let d = nettrace::decode_payload(&kwm.fields, &w);
    let names: Vec<&str> = d.fields.iter().map(|f| &*f.name).collect();
    assert_eq!(
        names,
        ["ThreadID", "Frames", "DurationNs", "Flags", "StackID"],
        "{d:?}"
    );
    let mut w2 = Vec::new();
    KernelWait::encode(78, &[], 5, false, 0x4000_0001, &mut w2);
    let by_id = KernelWait::parse(&w2).unwrap();
    assert_eq!(
        (by_id.stack_id, by_id.sample.frames.len()),
        (0x4000_0001, 0)
    );
    // A wait of the traces before (no stack id): none.
    assert_eq!(KernelWait::parse(&w[..w.len() - 4]).unwrap().stack_id, 0);
    let ks = KernelSampler {
        rate_hz: 999,
        samples: 123_456,
        lost: 7,
        threads: 31,
        short_waits: 22_232,
        short_wait_ns: 701_000_000,
    };
    ks.encode(&mut p);
    assert_eq!(KernelSampler::parse(&p), Ok(ks));
    // A payload from before the short waits: they read as none.
    let old = KernelSampler::parse(&p[..24]).unwrap();
    assert_eq!(
        (old.threads, old.short_waits, old.short_wait_ns),
        (31, 0, 0)
    );
    p.clear();
    NativeSymbol::encode("/lib/libc.so.6", 0x9_8000, 0x120, "memcpy", &mut p);
    let ns = NativeSymbol::parse(&p).unwrap();
    assert!(ns.path.eq_str("/lib/libc.so.6") && ns.name.eq_str("memcpy"));
    assert_eq!((ns.offset, ns.size), (0x9_8000, 0x120));
    p.clear();
    Inlined::encode(
        "dynamicClass.lambda_method3",
        "App.HomeController.Index",
        &mut p,
    );
    let i = Inlined::parse(&p).unwrap();
    assert!(i.method.eq_str("dynamicClass.lambda_method3"));
    assert!(i.inlinee.eq_str("App.HomeController.Index"));
    p.clear();
    Trigger::encode(["gen2", "a gen2 GC", "rt", "GC/Start"], 77, 5000, &mut p);
    let t = Trigger::parse(&p).unwrap();
    assert!(t.trigger.eq_str("gen2") && t.event.eq_str("GC/Start"));
    assert_eq!((t.event_timestamp, t.after_ms), (77, 5000));
    p.clear();
    SamplerInfo::encode(20, "schedstat", &mut p);
    assert!(SamplerInfo::parse(&p).unwrap().source.eq_str("schedstat"));
    for m in &md {
        assert_eq!(check_metadata(m.event_id, &m.fields), Ok(()));
    }
    let mut other = mm.fields.clone();
    other.swap(0, 1);
    let e = check_metadata(ids::MODULE_MAP, &other).unwrap_err();
    assert!(
        e.to_string().contains("ModuleMap") && e.to_string().contains("Start"),
        "{e}"
    );
    p.clear();
    R2rMethod::encode("/x/System.Net.Sockets.dll", 0xd460, 0x70, "A.B.C", &mut p);
    let r = R2rMethod::parse(&p).unwrap();
    assert_eq!((r.offset, r.size), (0xd460, 0x70));
    assert!(r.path.eq_str("/x/System.Net.Sockets.dll") && r.name.eq_str("A.B.C"));
    p.clear();
    R2rImage::encode("/x/a.dll", 1234, "00ff", &mut p);
    let i = R2rImage::parse(&p).unwrap();
    assert_eq!(i.size, 1234);
    assert!(i.mvid.eq_str("00ff"));
    p.clear();
    let rc = RecorderCpu {
        process_id: 9,
        cpu_ns: 1234,
        session_cpu_ns: Some(567),
    };
    rc.encode(&mut p);
    assert_eq!(RecorderCpu::parse(&p), Ok(rc));
    // A trace from before the session's CPU existed ends at CpuTimeNs.
    p.truncate(12);
    let old = RecorderCpu::parse(&p).unwrap();
    assert_eq!((old.cpu_ns, old.session_cpu_ns), (1234, None));
    p.clear();
    let ring = Ring {
        budget_bytes: 8 << 20,
        received_bytes: 40 << 20,
        dropped_blocks: 312,
        dropped_bytes: 32 << 20,
    };
    ring.encode(&mut p);
    assert_eq!(Ring::parse(&p), Ok(ring));
    let rc = md.iter().find(|m| m.event_name == "RecorderCpu").unwrap();
    assert_eq!(rc.fields.len(), 3);
    let bw = CpuBandwidth {
        version: 1,
        periods: 100,
        throttled_periods: 31,
        throttled_ns: 4_200_000_000,
        quota_us: 50_000,
        period_us: 100_000,
    };
    p.clear();
    CgroupCpu::encode(&bw, "/sys/fs/cgroup/cpu/x", &mut p);
    let g = CgroupCpu::parse(&p).unwrap();
    assert_eq!(g.bandwidth, bw);
    assert!(g.path.eq_str("/sys/fs/cgroup/cpu/x"));
    let e = ThreadCpu::parse(&[1, 0, 0, 0, 5]).unwrap_err();
    assert_eq!(e.event, "ThreadCpu");
    assert!(e.to_string().contains("CpuTimeNs"), "{e}");
}

/// A trace written before `RunQueueNs` was added still reads: its metadata ends at
/// `State`, and so do its payloads.
#[test]
fn thread_cpu_from_before_the_run_queue_field() {
    let md = metadata();
    let tc = md.iter().find(|m| m.event_name == "ThreadCpu").unwrap();
    assert_eq!(tc.fields.len(), 4);
    assert_eq!(check_metadata(ids::THREAD_CPU, &tc.fields[..3]), Ok(()));
    assert!(check_metadata(ids::THREAD_CPU, &tc.fields[..2]).is_err());
    let mut p = Vec::new();
    let r = ThreadCpu {
        thread_id: 5,
        cpu_ns: 9,
        state: u16::from(b'R'),
        runqueue_ns: Some(7),
    };
    r.encode(&mut p);
    assert_eq!(ThreadCpu::parse(&p).unwrap(), r);
    assert_eq!(ThreadCpu::parse(&p[..14]).unwrap().runqueue_ns, None);
    p.clear();
    ThreadCpu {
        runqueue_ns: None,
        ..r
    }
    .encode(&mut p);
    assert_eq!(p.len(), 22);
    assert_eq!(ThreadCpu::parse(&p).unwrap().runqueue_ns, None);
    assert!(ThreadCpu::parse(&p[..18]).is_err());
}
