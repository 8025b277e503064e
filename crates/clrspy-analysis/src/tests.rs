//! The pass as a whole, on traces built with nettrace's writer: dispatch, decode failures,
//! the time window, snapshots and repeated finishes.

use super::*;
use clr_events::runtime::ids;
use nettrace::{EventMetadata, EventRecord, TraceReader, TraceWriter, WriterOptions};

/// One event to write: (provider, id, version, ms, thread, stack, payload).
type Ev = (&'static str, u32, u8, i64, u64, Vec<u64>, Vec<u8>);

fn utf16z(s: &str) -> Vec<u8> {
    let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
    v.extend([0, 0]);
    v
}

fn u32s(v: &[u32]) -> Vec<u8> {
    let mut p: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    p.extend(0u16.to_le_bytes());
    p
}

fn method(id: u64, start: u64, size: u32, name: &str) -> Vec<u8> {
    method_in(id, start, size, "App", name)
}

fn method_in(id: u64, start: u64, size: u32, ns: &str, name: &str) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(id.to_le_bytes());
    p.extend(1u64.to_le_bytes());
    p.extend(start.to_le_bytes());
    p.extend(size.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p.extend(utf16z(ns));
    p.extend(utf16z(name));
    p.extend(utf16z("void  ()"));
    p.extend(0u16.to_le_bytes());
    p
}

fn write(events: &[Ev]) -> Vec<u8> {
    write_with(events, WriterOptions::default())
}

fn write_with(events: &[Ev], options: WriterOptions) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), options).unwrap();
    let mut ids: FxHashMap<(&str, u32, u8), u32> = FxHashMap::default();
    for (provider, id, version, ms, thread, stack, payload) in events {
        let key = (*provider, *id, *version);
        let m = match ids.get(&key) {
            Some(&m) => m,
            None => {
                // clrspy's own events declare their fields (the analysis checks them).
                let meta = clr_events::clrspy::metadata()
                    .into_iter()
                    .find(|m| *provider == clr_events::clrspy::PROVIDER && m.event_id == *id)
                    .unwrap_or_else(|| EventMetadata {
                        provider: provider.to_string(),
                        event_id: *id,
                        version: *version,
                        ..EventMetadata::default()
                    });
                let m = w.define(&meta).unwrap();
                ids.insert(key, m);
                m
            }
        };
        w.write(&EventRecord {
            metadata_id: m,
            thread_id: *thread,
            capture_thread_id: *thread,
            timestamp: ms * 1_000_000,
            stack,
            payload,
            ..EventRecord::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}

const RT: &str = clr_events::RUNTIME_PROVIDER;
const SP: &str = clr_events::SAMPLE_PROFILER_PROVIDER;

/// Samples in two methods, GCs (one cut), allocation ticks with stacks, the method loads.
fn workload() -> Vec<Ev> {
    let mut v: Vec<Ev> = vec![
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method(1, 0x1000, 0x100, "Burn"),
        ),
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method(2, 0x2000, 0x100, "Main"),
        ),
    ];
    for k in 1..=40i64 {
        let leaf = if k % 4 == 0 { 0x2010 } else { 0x1010 };
        v.push((
            SP,
            0,
            0,
            k,
            1,
            vec![leaf, 0x2020],
            2u32.to_le_bytes().to_vec(),
        ));
        if k % 10 == 0 {
            v.push((
                RT,
                ids::GC_START,
                1,
                k,
                1,
                vec![],
                u32s(&[k as u32 / 10, 0, 0, 0]),
            ));
            v.push((RT, ids::GC_STOP, 1, k, 1, vec![], u32s(&[k as u32 / 10, 0])));
            let mut tick = Vec::new();
            tick.extend(100_000u32.to_le_bytes());
            tick.extend(0u32.to_le_bytes());
            tick.extend(0u16.to_le_bytes());
            tick.extend(100_000u64.to_le_bytes());
            tick.extend(0x77u64.to_le_bytes());
            tick.extend(utf16z("System.String"));
            tick.extend(0u32.to_le_bytes());
            v.push((
                RT,
                ids::GC_ALLOCATION_TICK,
                2,
                k,
                1,
                vec![0x1010, 0x2020],
                tick,
            ));
        }
    }
    // A GC/Start cut after its Depth, twice; an unread event with a garbage payload.
    v.push((
        RT,
        ids::GC_START,
        1,
        41,
        1,
        vec![],
        vec![1, 0, 0, 0, 0, 0, 0, 0],
    ));
    v.push((RT, ids::GC_START, 1, 42, 1, vec![], vec![2, 0, 0, 0]));
    v.push((RT, 35, 0, 43, 1, vec![], vec![0xFF]));
    v
}

fn run(bytes: &[u8], options: Options) -> Analysis {
    let mut r = TraceReader::new(bytes).unwrap();
    Analysis::run(&mut r, options, &mut |_| ()).unwrap()
}

/// What the reports see, in a comparable form.
fn summary(a: &Analysis) -> String {
    let p = a.profile(&StackFilter::default());
    let (excl, incl) = p.top(Metric::Cpu, &a.symbols);
    format!(
        "{excl:?} {incl:?} {:?} {} {} {:?}",
        a.gc.gcs,
        a.alloc.total_bytes,
        a.undecodable,
        a.decode_errors()
    )
}

#[test]
fn models_read_typed_views_and_count_what_they_cannot_decode() {
    let a = run(&write(&workload()), Options::default());
    assert_eq!(a.gc.gcs.len(), 4);
    assert!(a.gc.gcs.iter().all(|g| g.duration_ms == Some(0.0)));
    assert_eq!(a.alloc.total_bytes, 400_000);
    let errs = a.decode_errors();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!((errs[0].event.as_str(), errs[0].count), ("GC/Start", 2));
    assert!(
        errs[0].first_error.contains("Reason"),
        "{}",
        errs[0].first_error
    );
    assert_eq!(a.undecodable, 2);
    let p = a.profile(&StackFilter::default());
    let (excl, incl) = p.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0], ("App.Burn".to_string(), 30.0));
    assert_eq!(incl[0], ("App.Main".to_string(), 40.0));
    // Frames resolve without changing the analysis.
    let stack = a.alloc.by_stack.keys().next().and_then(|k| k.2);
    assert_eq!(a.frames(stack), ["App.Burn", "App.Main"]);
}

#[test]
fn models_left_out_see_nothing() {
    let options = Options {
        models: ModelSet::only(&[ModelKind::Cpu]),
        ..Options::default()
    };
    let a = run(&write(&workload()), options);
    assert!(a.gc.gcs.is_empty());
    assert_eq!(a.alloc.ticks, 0);
    assert!(a.decode_errors().is_empty());
    let p = a.profile(&StackFilter::default());
    assert_eq!(p.total(Metric::Cpu), 40.0);
}

#[test]
fn the_window_clips_models_and_its_length() {
    let bytes = write(&workload());
    let all = run(&bytes, Options::default());
    assert_eq!(all.window_ns(), 43_000_000);
    assert_eq!(all.duration_ns, 43_000_000);
    let from0 = run(
        &bytes,
        Options {
            from_ns: Some(0),
            to_ns: Some(20_500_000),
            ..Options::default()
        },
    );
    assert_eq!(from0.window_ns(), 20_500_000);
    assert_eq!(from0.gc.gcs.len(), 2);
    assert_eq!(
        from0.profile(&StackFilter::default()).total(Metric::Cpu),
        20.0
    );
    let late = run(
        &bytes,
        Options {
            from_ns: Some(30_000_000),
            to_ns: Some(99_000_000_000),
            ..Options::default()
        },
    );
    assert_eq!(late.window_ns(), 13_000_000);
    let empty = run(
        &bytes,
        Options {
            from_ns: Some(50_000_000),
            ..Options::default()
        },
    );
    assert_eq!(empty.window_ns(), 0);
}

#[test]
fn snapshots_and_repeated_finishes_agree_with_one_pass() {
    let bytes = write(&workload());
    let once = run(&bytes, Options::default());
    let mut r = TraceReader::new(&bytes).unwrap();
    let mut live = Analysis::new(r.header(), Options::default());
    let mut n = 0;
    let mut snapshots = Vec::new();
    while let Some(ev) = r.next_event().unwrap() {
        live.event(&ev);
        n += 1;
        if n % 15 == 0 {
            snapshots.push(live.snapshot());
            // Finishing in the middle is allowed too: later events still count.
            live.finish();
        }
    }
    live.finish();
    live.finish();
    assert_eq!(summary(&live), summary(&once));
    assert_eq!(live.window_ns(), once.window_ns());
    // Each snapshot is a finished analysis of a prefix: counts only grow.
    assert!(snapshots.len() >= 3);
    for w in snapshots.windows(2) {
        assert!(w[0].events < w[1].events);
        assert!(w[0].gc.gcs.len() <= w[1].gc.gcs.len());
        let t0 = w[0].profile(&StackFilter::default()).total(Metric::Cpu);
        let t1 = w[1].profile(&StackFilter::default()).total(Metric::Cpu);
        assert!(t0 <= t1);
    }
    // A snapshot names its methods even though the live pass had not finished then.
    let first = &snapshots[0];
    let (excl, _) = first
        .profile(&StackFilter::default())
        .top(Metric::Cpu, &first.symbols);
    assert_eq!(excl[0].0, "App.Burn");
}

/// A server-like trace with readings every 20 ms, a sampler at 2 ms (nominal 1 ms): a busy
/// worker, an idle pool worker, a thread blocked in a wait, and the tiered JIT thread (never
/// sampled).
fn server() -> Vec<Ev> {
    server_with(false)
}

/// [`server`]; with `runq`, its readings have run-queue time (3 ms of every 20 for the busy
/// worker, none for the others) and its cgroup's throttling counters are read at the start
/// and the end.
fn server_with(runq: bool) -> Vec<Ev> {
    use clr_events::clrspy::{ids as cs, CgroupCpu, CpuBandwidth, ThreadCpu, ThreadName};
    const CS: &str = clr_events::clrspy::PROVIDER;
    let load = |id, start, ns: &str, name: &str| {
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method_in(id, start, 0x100, ns, name),
        )
    };
    let mut v: Vec<Ev> = vec![
        load(1, 0x1000, "App", "Burn"),
        load(2, 0x2000, "System.Threading.Thread", "StartCallback"),
        load(
            3,
            0x3000,
            "System.Threading.LowLevelLifoSemaphore",
            "WaitForSignal",
        ),
        load(
            4,
            0x4000,
            "System.Threading.PortableThreadPool+WorkerThread",
            "WorkerThreadStart",
        ),
        load(5, 0x5000, "System.Threading.Monitor", "Wait"),
        load(6, 0x6000, "App", "Main"),
    ];
    let cpu = |ms: i64, t: u32, ns: u64| {
        let mut p = Vec::new();
        ThreadCpu {
            thread_id: t,
            cpu_ns: ns,
            state: b'R' as u16,
            runqueue_ns: runq.then(|| if t == 10 { ms as u64 * 150_000 } else { 0 }),
        }
        .encode(&mut p);
        (CS, cs::THREAD_CPU, 0, ms, 0, vec![], p)
    };
    let cgroup = |ms: i64, periods: u64, throttled: u64| {
        let b = CpuBandwidth {
            version: 2,
            periods,
            throttled_periods: throttled,
            throttled_ns: throttled * 1_000_000,
            quota_us: 50_000,
            period_us: 100_000,
        };
        let mut p = Vec::new();
        CgroupCpu::encode(&b, "/sys/fs/cgroup/app", &mut p);
        (CS, cs::CGROUP_CPU, 0, ms, 0, vec![], p)
    };
    if runq {
        v.push(cgroup(0, 5, 1));
        v.push(cgroup(1000, 15, 5));
    }
    let mut name = Vec::new();
    ThreadName::encode(40, ".NET Tiered Com", &mut name);
    v.push((CS, cs::THREAD_NAME, 0, 0, 0, vec![], name));
    for t in [10, 20, 30, 40] {
        v.push(cpu(0, t, 0));
    }
    v.push((CS, cs::TICK, 0, 0, 0, vec![], vec![]));
    for k in 1..=50i64 {
        for s in 0..10 {
            let ms = (k - 1) * 20 + s * 2 + 1;
            v.push((
                SP,
                0,
                0,
                ms,
                10,
                vec![0x1010, 0x4010, 0x2010],
                2u32.to_le_bytes().to_vec(),
            ));
            v.push((
                SP,
                0,
                0,
                ms,
                20,
                vec![0x3010, 0x4010, 0x2010],
                2u32.to_le_bytes().to_vec(),
            ));
            v.push((
                SP,
                0,
                0,
                ms,
                30,
                vec![0x5010, 0x6010],
                1u32.to_le_bytes().to_vec(),
            ));
        }
        let ms = k * 20;
        // 15 ms of 20 for the worker, 1 ms of spinning, 5 ms for the JIT.
        v.push(cpu(ms, 10, k as u64 * 15_000_000));
        v.push(cpu(ms, 20, k as u64 * 1_000_000));
        v.push(cpu(ms, 40, k as u64 * 5_000_000));
        v.push((CS, cs::TICK, 0, ms, 0, vec![], vec![]));
    }
    v
}

#[test]
fn threads_parked_the_whole_window_are_told_apart() {
    let a = run(&write(&server()), Options::default());
    let p = a.profile(&StackFilter::default());
    // Thread 30 only ever waits in Monitor.Wait; the worker (10) runs, the idle pool thread
    // (20) is idle, not waiting; the JIT (40) is never sampled.
    let parked = p.parked_threads(&a.symbols);
    assert_eq!(parked.into_iter().collect::<Vec<_>>(), vec![30]);
    let (all, _) = p.by_blocking_call(&a.symbols);
    assert_eq!(all[0].0, "System.Threading.Monitor.Wait");
    let (others, _) = p.by_blocking_call_except(&a.symbols, &[30].into_iter().collect());
    assert!(
        others
            .iter()
            .all(|m| m.0 != "System.Threading.Monitor.Wait"),
        "{others:?}"
    );
}

#[test]
fn a_thread_stuck_on_a_lock_the_whole_window_is_not_parked() {
    // Thread 60 waits in Monitor.Enter in every round, as a deadlocked thread does: like
    // thread 30 (parked in Monitor.Wait) it never runs work, but it waits for another thread.
    let mut v = server();
    v.push((
        RT,
        ids::METHOD_LOAD_VERBOSE,
        1,
        0,
        1,
        vec![],
        method_in(7, 0x7000, 0x100, "System.Threading.Monitor", "Enter"),
    ));
    for k in 1..=50i64 {
        for s in 0..10 {
            let ms = (k - 1) * 20 + s * 2 + 1;
            let kind = 1u32.to_le_bytes().to_vec();
            v.push((SP, 0, 0, ms, 60, vec![0x7010, 0x6010], kind));
        }
    }
    let a = run(&write(&v), Options::default());
    let p = a.profile(&StackFilter::default());
    let parked = p.parked_threads(&a.symbols);
    assert_eq!(parked.into_iter().collect::<Vec<_>>(), vec![30]);
    let (others, _) = p.by_blocking_call_except(&a.symbols, &[30].into_iter().collect());
    assert_eq!(others[0].0, "System.Threading.Monitor.Enter", "{others:?}");
    // A hang in progress looks for it among the threads that never ran.
    let mut never_ran: Vec<u64> = p.never_ran_threads(&a.symbols).into_iter().collect();
    never_ran.sort();
    assert_eq!(never_ran, vec![30, 60]);
}

#[test]
fn native_callers_of_managed_code_are_left_out_of_the_inclusive_ranking() {
    use clr_events::clrspy::{ids as cs, ModuleMap};
    const CS: &str = clr_events::clrspy::PROVIDER;
    // Thread 70 runs App.Burn, called from a native thread start (0x9F00 in libnative.so),
    // which calls into native code itself (0x9010) below it.
    let mut v = server();
    let mut p = Vec::new();
    ModuleMap::encode(0x9000, 0xA000, 0x100, "/lib/libnative.so", &mut p);
    v.insert(0, (CS, cs::MODULE_MAP, 0, 0, 0, vec![], p));
    for k in 1..=50i64 {
        for s in 0..10 {
            let ms = (k - 1) * 20 + s * 2 + 1;
            let kind = 2u32.to_le_bytes().to_vec();
            v.push((SP, 0, 0, ms, 70, vec![0x9010, 0x1010, 0x9F00], kind));
        }
    }
    let a = run(&write(&v), Options::default());
    // Grouped (the default), the library's runs are its one frame; App.Burn stays.
    let grouped = a.profile(&StackFilter::default());
    let (excl, incl) = grouped.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0].0, "[native: libnative.so]", "{excl:?}");
    assert!(incl.iter().any(|m| m.0 == "App.Burn"), "{incl:?}");
    let callers = grouped.managed_callers(Metric::Cpu, &a.symbols, |f| a.is_native_work(f));
    assert_eq!(
        callers["[native: libnative.so]"],
        ("App.Burn".to_string(), 1.0)
    );
    let p = a.profile(&StackFilter {
        native: NativeView::Show,
        ..StackFilter::default()
    });
    let (_, incl) = p.top(Metric::Cpu, &a.symbols);
    let names: Vec<&str> = incl.iter().map(|m| m.0.as_str()).collect();
    assert!(names.contains(&"App.Burn"), "{names:?}");
    assert!(
        names.contains(&"libnative.so!+0x110"),
        "its native callee stays: {names:?}"
    );
    assert!(!names.contains(&"libnative.so!+0x1000"), "{names:?}");
    assert!(p.heaviest_native_caller(Metric::Cpu, &a.symbols) > 0.0);
    // The call tree keeps it: the thread's root.
    let tree = profile::call_tree(&p, Metric::Cpu, &a.symbols);
    assert!(
        tree.children
            .iter()
            .any(|c| c.name == "libnative.so!+0x1000"),
        "{:?}",
        tree.children.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
}

#[test]
fn cpu_after_a_blocked_last_sample_is_unsampled_not_the_blocking_call() {
    use clr_events::clrspy::{ids as cs, ThreadCpu};
    const CS: &str = clr_events::clrspy::PROVIDER;
    let mut v = server();
    let cpu = |ms: i64, ns: u64| {
        let mut p = Vec::new();
        ThreadCpu {
            thread_id: 50,
            cpu_ns: ns,
            state: b'S' as u16,
            runqueue_ns: None,
        }
        .encode(&mut p);
        (CS, cs::THREAD_CPU, 0, ms, 0, vec![], p)
    };
    v.push(cpu(0, 0));
    for k in 1..=50i64 {
        if k <= 10 {
            for s in 0..10 {
                let ms = (k - 1) * 20 + s * 2 + 1;
                let kind = 1u32.to_le_bytes().to_vec();
                v.push((SP, 0, 0, ms, 50, vec![0x5010, 0x6010], kind));
            }
        }
        // Parked in Monitor.Wait it burns nothing; after its last sample (the wait returned,
        // as a main thread's Join does at exit) it runs 8 ms the sampler never sees.
        v.push(cpu(k * 20, if k >= 30 { 8_000_000 } else { 0 }));
    }
    // In time order, each tick after the readings it closes.
    v.sort_by_key(|e| (e.3, e.0 == CS && e.1 == cs::TICK));
    let a = run(&write(&v), Options::default());
    let p = a.profile(&StackFilter::default());
    let t = p
        .threads(&a.symbols)
        .into_iter()
        .find(|t| t.thread == 50)
        .unwrap();
    assert!((t.cpu - 8.0).abs() < 1e-6, "{t:?}");
    let (excl, _) = p.top(Metric::Cpu, &a.symbols);
    let wait = excl.iter().find(|m| m.0 == "System.Threading.Monitor.Wait");
    assert!(wait.is_none_or(|m| m.1 == 0.0), "{excl:?}");
    let unsampled = excl.iter().find(|m| m.0 == profile::UNSAMPLED_FRAME);
    assert!(
        unsampled.is_some_and(|m| (m.1 - 8.0).abs() < 1e-6),
        "{excl:?}"
    );
}

#[test]
fn readings_set_every_threads_cpu_and_runtime_threads_get_a_frame_group() {
    let a = run(&write(&server()), Options::default());
    assert_eq!(a.cpu.source(), cpu::CpuSource::ThreadCpuTimes);
    let p = a.profile(&StackFilter::default());
    let by: FxHashMap<u64, profile::ThreadTotals> = p
        .threads(&a.symbols)
        .into_iter()
        .map(|t| (t.thread, t))
        .collect();
    let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
    // 50 intervals of 20 ms: CPU is the readings, whatever the 2 ms sampler says.
    assert!(
        close(by[&10].cpu, 750.0) && close(by[&10].wait, 250.0),
        "{:?}",
        by[&10]
    );
    // Its waiting is in Burn, outside any blocking call: ready to run, not blocked.
    assert!(close(by[&10].runnable, 250.0) && close(by[&30].runnable, 0.0));
    assert!(close(by[&20].cpu, 50.0) && close(by[&20].idle, 950.0) && close(by[&20].wait, 0.0));
    assert!(close(by[&30].cpu, 0.0) && close(by[&30].wait, 1000.0));
    assert!(close(by[&40].cpu, 250.0) && by[&40].samples == 0);
    assert_eq!(by[&40].top_frame, "[runtime: tiered JIT]");
    assert_eq!(a.thread_role(40), threads::ThreadRole::Jit);
    assert_eq!(a.thread_role(10), threads::ThreadRole::Managed);
    assert!(close(p.total(Metric::Cpu), 1050.0));
    let (excl, _) = p.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0].0, "App.Burn");
    assert_eq!(excl[1].0, "[runtime: tiered JIT]");
    // The idle worker's spin shows as idle, not as the semaphore or the worker loop.
    assert_eq!(excl[2].0, profile::IDLE_POOL_FRAME);
    assert!(excl.iter().all(|m| !m.0.contains("LowLevelLifoSemaphore")));
    // Waiting is named by the blocking call, and the busy worker's waiting is runnable time.
    let (calls, _) = p.by_blocking_call(&a.symbols);
    assert_eq!(calls[0].0, "System.Threading.Monitor.Wait");
    assert_eq!(calls[1].0, profile::RUNNABLE_FRAME);
    assert_eq!(calls.len(), 2);
    let period = a.cpu.measured_period_ns().unwrap();
    assert!((1_990_000..=2_010_000).contains(&period), "{period}");
}

#[test]
fn clrspy_events_are_read_through_their_definition() {
    use clr_events::clrspy;
    let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
    let md = clrspy::metadata();
    let ids: Vec<u32> = md.iter().map(|m| w.define(m).unwrap()).collect();
    let index = |id: u32| ids[clrspy::EVENTS.iter().position(|e| e.id == id).unwrap()];
    // A ModuleMap whose metadata swaps two fields: it must not be read.
    let mut odd = md[4].clone();
    odd.fields.swap(0, 1);
    let odd_id = w.define(&odd).unwrap();
    let sample = w
        .define(&EventMetadata {
            provider: SP.into(),
            event_id: 0,
            ..EventMetadata::default()
        })
        .unwrap();
    let mut put = |m: u32, ms: i64, thread: u64, stack: &[u64], payload: &[u8]| {
        w.write(&EventRecord {
            metadata_id: m,
            thread_id: thread,
            capture_thread_id: 99,
            timestamp: ms * 1_000_000,
            stack,
            payload,
            ..EventRecord::default()
        })
        .unwrap();
    };
    let mut p = Vec::new();
    clrspy::ModuleMap::encode(0x9000, 0xA000, 0x100, "/lib/libcoreclr.so", &mut p);
    put(index(clrspy::ids::MODULE_MAP), 0, 99, &[], &p);
    put(odd_id, 0, 99, &[], &p);
    let mut n = Vec::new();
    clrspy::ThreadName::encode(7, "worker", &mut n);
    put(index(clrspy::ids::THREAD_NAME), 0, 99, &[], &n);
    for ms in [0i64, 10] {
        let mut c = Vec::new();
        clrspy::ThreadCpu {
            thread_id: 7,
            cpu_ns: ms as u64 * 500_000,
            state: u16::from(b'R'),
            runqueue_ns: None,
        }
        .encode(&mut c);
        put(index(clrspy::ids::THREAD_CPU), ms, 99, &[], &c);
        put(index(clrspy::ids::TICK), ms, 99, &[], &[]);
    }
    for ms in 1..=10 {
        put(sample, ms, 7, &[0x9010], &2u32.to_le_bytes());
    }
    // A cut reading.
    put(index(clrspy::ids::THREAD_CPU), 11, 99, &[], &[7, 0, 0]);
    let bytes = w.finish().unwrap();
    let a = run(&bytes, Options::default());
    assert!(a.has_thread_cpu);
    assert_eq!(a.threads.names[&7], "worker");
    let p = a.profile(&StackFilter {
        native: NativeView::Show,
        ..StackFilter::default()
    });
    // Half the thread's time was CPU, measured.
    assert!((p.total(Metric::Cpu) - 5.0).abs() < 1e-9);
    assert!((p.total(Metric::Wait) - 5.0).abs() < 1e-9);
    assert_eq!(a.cpu.source(), cpu::CpuSource::ThreadCpuTimes);
    let (excl, _) = p.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0].0, "libcoreclr.so!+0x110");
    let (excl, _) = a
        .profile(&StackFilter::default())
        .top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0].0, "[runtime: libcoreclr.so]");
    let errs = a.decode_errors();
    let names: Vec<(&str, u64)> = errs.iter().map(|e| (e.event.as_str(), e.count)).collect();
    assert_eq!(names, [("ModuleMap", 1), ("ThreadCpu", 1)]);
}

/// Kernel samples (clrspy `KernelSample`, the stack in the payload, on no thread) are the
/// samples of the thread their payload names; they hold the thread's measured CPU, and its
/// waiting goes to no stack (the kernel saw the thread only on a CPU).
#[test]
fn kernel_samples_carry_the_cpu_and_no_waiting() {
    use clr_events::clrspy;
    let build = |with_waits: bool| -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let md = clrspy::metadata();
        let ids: Vec<u32> = md.iter().map(|m| w.define(m).unwrap()).collect();
        let index = |id: u32| ids[clrspy::EVENTS.iter().position(|e| e.id == id).unwrap()];
        let mut put = |m: u32, ms: i64, payload: &[u8]| {
            w.write(&EventRecord {
                metadata_id: m,
                thread_id: u64::MAX,
                capture_thread_id: 99,
                timestamp: ms * 1_000_000,
                payload,
                ..EventRecord::default()
            })
            .unwrap();
        };
        let mut p = Vec::new();
        clrspy::ModuleMap::encode(0x9000, 0xA000, 0x100, "/lib/libnative.so", &mut p);
        put(index(clrspy::ids::MODULE_MAP), 0, &p);
        for ms in [0i64, 10] {
            let mut c = Vec::new();
            clrspy::ThreadCpu {
                thread_id: 7,
                cpu_ns: ms as u64 * 400_000,
                state: u16::from(b'R'),
                runqueue_ns: None,
            }
            .encode(&mut c);
            put(index(clrspy::ids::THREAD_CPU), ms, &c);
            put(index(clrspy::ids::TICK), ms, &[]);
        }
        // Four samples on a CPU, three in one function and one in another.
        for (ms, leaf) in [(1i64, 0x9010u64), (2, 0x9010), (3, 0x9010), (4, 0x9800)] {
            let mut k = Vec::new();
            clrspy::KernelSample::encode(7, &[leaf, 0x9F00], &mut k);
            put(index(clrspy::ids::KERNEL_SAMPLE), ms, &k);
        }
        // Waits the kernel sampler took (written at their ends): 5 ms blocked in one place, 1 ms
        // preempted in another; only what falls in the window counts.
        let waits = [(9i64, 5u64, 0x9100u64, false), (10, 1, 0x9200, true)];
        for (end_ms, ms, leaf, preempted) in waits.into_iter().filter(|_| with_waits) {
            let mut k = Vec::new();
            clrspy::KernelWait::encode(7, &[leaf, 0x9F00], ms * 1_000_000, preempted, 0, &mut k);
            put(index(clrspy::ids::KERNEL_WAIT), end_ms, &k);
        }
        // The runtime's synchronization manager, parked 8 ms by design: left out of the stacks.
        if with_waits {
            let mut n = Vec::new();
            clrspy::ThreadName::encode(8, ".NET SynchManag", &mut n);
            put(index(clrspy::ids::THREAD_NAME), 0, &n);
            let mut k = Vec::new();
            clrspy::KernelWait::encode(8, &[0x9300, 0x9F00], 8_000_000, false, 0, &mut k);
            put(index(clrspy::ids::KERNEL_WAIT), 10, &k);
        }
        w.finish().unwrap()
    };
    let bytes = build(true);
    let waits = run(&bytes, Options::default());
    assert!(waits.cpu.kernel_waits());
    let p = waits.profile(&StackFilter::default());
    assert!((p.total(Metric::Wait) - 6.0).abs() < 1e-9);
    assert_eq!(p.plumbing_threads, 1);
    assert!((p.plumbing_wait - 8.0).abs() < 1e-9, "{}", p.plumbing_wait);
    // Asked for by its id, the plumbing thread's waits are all there is.
    let only = waits.profile(&StackFilter {
        thread: Some(8),
        ..StackFilter::default()
    });
    assert!((only.total(Metric::Wait) - 8.0).abs() < 1e-9);
    assert_eq!(only.plumbing_threads, 0);
    let shown = waits.profile(&StackFilter {
        native: NativeView::Show,
        ..StackFilter::default()
    });
    let (excl, _) = shown.top(Metric::Wait, &waits.symbols);
    assert_eq!(excl[0].0, "libnative.so!+0x200");
    assert!((excl[0].1 - 5.0).abs() < 1e-9, "{excl:?}");
    // Native frames grouped (the default) or folded, the waits keep their blocking call
    // (the native leaf), not the group all of them are in.
    for view in [NativeView::Group, NativeView::Fold] {
        let grouped = waits.profile(&StackFilter {
            native: view,
            ..StackFilter::default()
        });
        let (calls, _) = grouped.by_blocking_call(&waits.symbols);
        assert_eq!(calls[0].0, "libnative.so!+0x200", "{view:?} {calls:?}");
        assert!((calls[0].1 - 5.0).abs() < 1e-9, "{calls:?}");
        let (excl, _) = grouped.top(Metric::Wait, &waits.symbols);
        assert_eq!(excl[0].0, "[native: libnative.so]", "{excl:?}");
    }
    let windowed = run(
        &bytes,
        Options {
            from_ns: Some(7_000_000),
            ..Options::default()
        },
    );
    let p = windowed.profile(&StackFilter::default());
    assert!(
        (p.total(Metric::Wait) - 3.0).abs() < 1e-9,
        "2 + 1 ms after 7 ms"
    );
    // Without the waits: the CPU alone.
    let a = run(&build(false), Options::default());
    assert!(a.cpu.kernel_sampled());
    assert!(!a.cpu.kernel_waits());
    assert!(a.decode_errors().is_empty());
    let p = a.profile(&StackFilter {
        native: NativeView::Show,
        ..StackFilter::default()
    });
    // 4 ms of CPU measured, shared 3:1; the 6 ms the thread was off a CPU are on no stack.
    assert!((p.total(Metric::Cpu) - 4.0).abs() < 1e-9);
    assert!(p.total(Metric::Wait).abs() < 1e-9);
    let (excl, _) = p.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl[0].0, "libnative.so!+0x110");
    assert!((excl[0].1 - 3.0).abs() < 1e-9, "{excl:?}");
    // Grouped (the default), each run of native frames is its module's: a library without
    // symbols is one frame that holds all 4 ms.
    let grouped = a.profile(&StackFilter::default());
    let (excl, _) = grouped.top(Metric::Cpu, &a.symbols);
    assert_eq!(excl.len(), 1, "{excl:?}");
    assert_eq!(excl[0].0, "[native: libnative.so]");
    assert!((excl[0].1 - 4.0).abs() < 1e-9, "{excl:?}");
}

#[test]
fn program_names_from_command_lines() {
    use crate::program_name;
    assert_eq!(
        program_name("/usr/share/dotnet/dotnet /srv/WebApp.dll --port 5"),
        Some("WebApp".into())
    );
    assert_eq!(
        program_name("C:\\rt\\corerun.exe  C:\\app\\arraytypesapp.dll"),
        Some("arraytypesapp".into())
    );
    assert_eq!(
        program_name("/opt/app/MyService --urls x"),
        Some("MyService".into())
    );
    assert_eq!(program_name("   "), None);
}

#[test]
fn runtime_thread_names_cut_by_linux_come_back_whole() {
    use crate::thread_names::full_thread_name;
    assert_eq!(
        full_thread_name(".NET Tiered Com"),
        Some(".NET Tiered Compilation Worker")
    );
    assert_eq!(
        full_thread_name(".NET File Watch"),
        Some(".NET File Watcher")
    );
    // Short names are whole already; a program's own cut names are left as they are.
    assert_eq!(full_thread_name(".NET TP Worker"), None);
    assert_eq!(full_thread_name("MyApp.Backgroun"), None);
    let mut t = crate::threads::ThreadModel::new();
    t.name(5, ".NET Tiered Com");
    assert_eq!(t.names[&5], ".NET Tiered Compilation Worker");
}

#[test]
fn run_queue_readings_split_waiting_and_lifetimes_and_the_cgroup_says_throttling() {
    let a = run(&write(&server_with(true)), Options::default());
    assert!(a.cpu.has_runqueue());
    let p = a.profile(&StackFilter::default());
    assert!(p.runqueue_measured);
    let by: FxHashMap<u64, profile::ThreadTotals> = p
        .threads(&a.symbols)
        .into_iter()
        .map(|t| (t.thread, t))
        .collect();
    let close = |x: f64, y: f64| (x - y).abs() < 1e-6;
    // The busy worker's 5 ms of waiting per 20: 3 ms measured on the run queue (not all of
    // it, as the estimate would say), the blocked thread none.
    assert!(close(by[&10].runnable, 150.0), "{:?}", by[&10]);
    assert!(close(by[&30].runnable, 0.0));
    let (calls, _) = p.by_blocking_call(&a.symbols);
    let call: FxHashMap<String, f64> = calls.into_iter().collect();
    assert!(close(call[profile::RUNNABLE_FRAME], 150.0), "{call:?}");
    assert!(close(call["App.Burn"], 100.0), "{call:?}");
    assert!(close(call["System.Threading.Monitor.Wait"], 1000.0));
    // Lifetimes: 50 intervals of 20 ms each, split three ways.
    let times: FxHashMap<u64, crate::runqueue::ThreadTime> = a.cpu.thread_times().collect();
    let w = times[&10];
    assert_eq!(
        (w.lifetime_ns, w.cpu_ns, w.runqueue_ns),
        (1e9, 750e6, 150e6)
    );
    assert!((w.blocked_ns() - 100e6).abs() < 1.0);
    assert!((times[&30].blocked_ns() - 1e9).abs() < 1.0);
    let t = a.cpu.throttling().unwrap();
    assert_eq!((t.periods, t.throttled_periods), (10, 4));
    assert_eq!((t.throttled_ns, t.quota_us), (4_000_000, Some(50_000)));
    assert_eq!(t.cgroup, "/sys/fs/cgroup/app");
}

/// A trace without readings, 2 CPUs: four threads burning, two timer-like threads in
/// `WaitHandle.WaitOneNoCheck` (one caught in native code, one in managed code), the sockets'
/// event loop in its own inlined wait. One round every 2 ms (twice the nominal interval).
fn busy_without_readings() -> Vec<u8> {
    let mut v: Vec<Ev> = vec![
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method(1, 0x1000, 0x100, "Burn"),
        ),
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method(2, 0x2000, 0x100, "Main"),
        ),
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method_in(
                3,
                0x3000,
                0x100,
                "System.Threading.WaitHandle",
                "WaitOneNoCheck",
            ),
        ),
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method_in(
                4,
                0x4000,
                0x100,
                "System.Threading.TimerQueue",
                "TimerThread",
            ),
        ),
        (
            RT,
            ids::METHOD_LOAD_VERBOSE,
            1,
            0,
            1,
            vec![],
            method_in(
                5,
                0x5000,
                0x100,
                "System.Net.Sockets.SocketAsyncEngine",
                "EventLoop",
            ),
        ),
    ];
    let (external, managed) = (1u32.to_le_bytes().to_vec(), 2u32.to_le_bytes().to_vec());
    for r in 0..500i64 {
        let ms = 2 * r;
        for t in 1..=4u64 {
            v.push((SP, 0, 0, ms, t, vec![0x1010, 0x2020], managed.clone()));
        }
        v.push((SP, 0, 0, ms, 5, vec![0x3010, 0x4010], external.clone()));
        v.push((SP, 0, 0, ms, 6, vec![0x3020, 0x4010], managed.clone()));
        // A native address (no method covers it) under the event loop.
        v.push((SP, 0, 0, ms, 7, vec![0x9_0000, 0x5010], external.clone()));
    }
    let options = WriterOptions {
        cpu_count: 2,
        sampling_interval_ns: 1_000_000,
        ..WriterOptions::default()
    };
    write_with(&v, options)
}

#[test]
fn the_estimate_respects_the_cpus_and_blocked_threads_wait_in_every_view() {
    let a = run(&busy_without_readings(), Options::default());
    assert_eq!(a.cpu.source(), cpu::CpuSource::Estimate);
    assert_eq!(a.cpu.cpus(), Some(2));
    // The real period, not the nominal 1 ms.
    assert_eq!(a.cpu.measured_period_ns(), Some(2_000_000));
    let p = a.profile(&StackFilter::default());
    let unit = p.interval_ns as f64;
    let wall = 1000.0 * 1e6; // 500 rounds of 2 ms
    let cpu_ns = p.total(Metric::Cpu) * unit;
    // Four burners on two CPUs: two CPUs' worth, the rest runnable.
    assert!((cpu_ns - 2.0 * wall).abs() < 0.01 * wall, "{cpu_ns}");
    let threads = p.threads(&a.symbols);
    let get = |t: u64| threads.iter().find(|x| x.thread == t).unwrap();
    for t in 1..=4 {
        let x = get(t);
        assert!((x.cpu * unit - wall / 2.0).abs() < 0.01 * wall, "{x:?}");
        assert!(
            (x.runnable * unit - wall / 2.0).abs() < 0.01 * wall,
            "{x:?}"
        );
    }
    // Both timer threads wait, whatever the sample kind; the event loop is idle.
    for t in [5, 6] {
        let x = get(t);
        assert_eq!(x.cpu, 0.0, "{x:?}");
        assert!((x.wait * unit - wall).abs() < 0.01 * wall, "{x:?}");
    }
    let sockets = get(7);
    assert_eq!(sockets.cpu, 0.0, "{sockets:?}");
    assert!(
        (sockets.idle * unit - wall).abs() < 0.01 * wall,
        "{sockets:?}"
    );
    // The waits name the blocking call the same way.
    let (by_call, _) = p.by_blocking_call(&a.symbols);
    assert!(
        by_call
            .iter()
            .any(|(n, _)| n.starts_with("System.Threading.WaitHandle.WaitOneNoCheck")),
        "{by_call:?}"
    );
}
