//! Tests of the windowed table: subtraction of totals, the base's choice, order and percentages.

use std::time::Duration;

use std::collections::HashMap;

use clrspy_analysis::{Analysis, Metric, StackFilter};

use super::session::RUNTIME_KEYWORDS;
use super::window::add_stack;
use super::*;

const S: i64 = 1_000_000_000;

fn pair(exclusive: f64, inclusive: f64) -> Pair {
    Pair {
        exclusive,
        inclusive,
    }
}

/// Totals at `secs` with the given CPU seconds per method and process CPU.
fn totals(secs: i64, cpu: &[(&str, f64, f64)], process_cpu_s: f64) -> Totals {
    Totals {
        time_ns: secs * S,
        cpu: cpu
            .iter()
            .map(|&(n, e, i)| (n.to_string(), pair(e, i)))
            .collect(),
        process_cpu_s,
        ..Totals::default()
    }
}

#[test]
fn the_window_subtracts_the_totals_from_a_window_ago() {
    let mut w = TopWindow::new(Duration::from_secs(2));
    // A method hot for the first 3 s, then idle; another that starts at 3 s.
    w.push(totals(1, &[("a!Hot", 1.0, 1.0)], 1.0));
    w.push(totals(2, &[("a!Hot", 2.0, 2.0)], 2.0));
    w.push(totals(3, &[("a!Hot", 3.0, 3.0)], 3.0));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    // Base: the totals at 1 s (the window's start).
    assert_eq!(t.header.span_s, 2.0);
    assert_eq!(t.rows.len(), 1);
    assert_eq!(t.rows[0].value, pair(2.0, 2.0));
    assert_eq!(t.rows[0].percent, pair(100.0, 100.0));
    assert_eq!(t.header.cpu_percent, 100.0);
    w.push(totals(
        4,
        &[
            ("a!Hot", 3.0, 3.0),
            ("a!New", 0.5, 0.5),
            ("a!Main", 0.0, 0.5),
        ],
        3.5,
    ));
    w.push(totals(
        5,
        &[
            ("a!Hot", 3.0, 3.0),
            ("a!New", 1.5, 1.5),
            ("a!Main", 0.0, 2.0),
        ],
        4.5,
    ));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert_eq!(t.header.span_s, 2.0);
    // Hot did nothing in the window (3..5 s): gone from the table.
    let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a!New", "a!Main"]);
    assert_eq!(t.rows[0].value, pair(1.5, 1.5));
    assert_eq!(t.rows[0].percent, pair(75.0, 75.0));
    assert_eq!(t.header.cpu_percent, 75.0);
    // By inclusive time, Main (which called New and more) comes first.
    let t = w.table(Mode::Cpu, SortBy::Inclusive);
    let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a!Main", "a!New"]);
}

#[test]
fn the_window_is_as_long_as_asked_between_refreshes() {
    // Refreshes 2 s apart, a window of 3 s: the base is read halfway between the snapshots
    // at 2 s and 4 s (at 3 s), not taken at 2 s (a window of 4 s).
    let mut w = TopWindow::new(Duration::from_secs(3));
    w.push(totals(2, &[("a!M", 1.0, 1.0)], 1.0));
    w.push(totals(4, &[("a!M", 3.0, 3.0)], 3.0));
    w.push(totals(6, &[("a!M", 5.0, 5.0)], 5.0));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert_eq!(t.header.span_s, 3.0);
    assert_eq!(t.rows[0].value, pair(3.0, 3.0));
    assert_eq!(t.header.cpu_percent, 100.0);
    // A name new since the base's first snapshot counts from its share of the base.
    w.push(totals(8, &[("a!M", 5.0, 5.0), ("a!N", 2.0, 2.0)], 7.0));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert_eq!(t.header.span_s, 3.0);
    assert_eq!(t.rows[0].name, "a!N");
    assert_eq!(t.rows[0].value, pair(2.0, 2.0));
    assert_eq!(t.rows[1].value, pair(1.0, 1.0));
}

#[test]
fn the_start_is_the_base_until_a_window_has_passed() {
    let mut w = TopWindow::new(Duration::from_secs(5));
    w.push(totals(1, &[("a!M", 0.5, 0.5)], 0.5));
    w.push(totals(2, &[("a!M", 1.0, 1.0)], 1.0));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert_eq!(t.header.span_s, 2.0);
    assert_eq!(t.rows[0].value, pair(1.0, 1.0));
    assert_eq!(t.header.cpu_percent, 50.0);
}

#[test]
fn an_older_snapshot_is_dropped_and_figures_never_go_negative() {
    let mut w = TopWindow::new(Duration::from_secs(1));
    w.push(totals(2, &[("a!M", 2.0, 2.0)], 2.0));
    w.push(totals(1, &[("a!M", 9.0, 9.0)], 9.0));
    assert_eq!(w.latest().map(|t| t.time_ns), Some(2 * S));
    // A later snapshot weighs a sample differently (the estimate moved): no negative rows.
    w.push(totals(3, &[("a!M", 1.5, 1.5)], 2.5));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert!(t.rows.is_empty());
    assert_eq!(t.header.cpu_percent, 50.0);
    // Exclusive grew more than inclusive between two snapshots: inclusive is not less.
    w.push(totals(4, &[("a!M", 2.5, 1.8)], 3.5));
    let t = w.table(Mode::Cpu, SortBy::Exclusive);
    assert_eq!(t.rows[0].value, pair(1.0, 1.0));
}

#[test]
fn allocations_are_percent_of_the_bytes_and_the_header_has_rates() {
    let mut w = TopWindow::new(Duration::from_secs(10));
    let mut t = Totals {
        time_ns: 2 * S,
        gc_pause_s: 0.1,
        alloc_bytes: 400.0,
        ..Totals::default()
    };
    t.alloc_by_type
        .insert("System.String".into(), pair(300.0, 300.0));
    t.alloc_by_type
        .insert("System.Byte[] (LOH)".into(), pair(100.0, 100.0));
    w.push(t);
    let table = w.table(Mode::AllocByType, SortBy::Exclusive);
    assert_eq!(table.rows[0].name, "System.String");
    assert_eq!(table.rows[0].percent, pair(75.0, 75.0));
    assert_eq!(table.rows[1].percent, pair(25.0, 25.0));
    assert_eq!(table.header.alloc_bytes_per_s, 200.0);
    assert!((table.header.gc_percent - 5.0).abs() < 1e-9);
    // Nothing in the other modes.
    assert!(w.table(Mode::Wait, SortBy::Exclusive).rows.is_empty());
}

#[test]
fn a_stack_adds_to_its_leaf_and_once_to_each_method_on_it() {
    let mut m = HashMap::new();
    add_stack(&mut m, &["a!Leaf", "a!Rec", "a!Rec", "a!Main"], 2.0);
    add_stack(&mut m, &["a!Main"], 1.0);
    add_stack(&mut m, &[], 0.5);
    assert_eq!(m["a!Leaf"], pair(2.0, 2.0));
    assert_eq!(m["a!Rec"], pair(0.0, 2.0));
    assert_eq!(m["a!Main"], pair(1.0, 3.0));
    assert_eq!(m["[no stack]"], pair(0.5, 0.5));
}

#[test]
fn the_session_asks_for_samples_and_allocation_ticks() {
    let c = session_config();
    assert!(c
        .providers
        .iter()
        .any(|p| p.name == clr_events::SAMPLE_PROFILER_PROVIDER));
    let rt = c
        .providers
        .iter()
        .find(|p| p.name == clr_events::RUNTIME_PROVIDER);
    // Allocation ticks: the GC keyword at the verbose level.
    assert!(rt.is_some_and(|p| p.keywords & 1 == 1 && p.level >= 5));
    assert!(c.stackwalk);
}

#[test]
fn the_runtime_keywords_are_the_cpu_profiles() {
    let cpu = clr_events::provider_spec::resolve(Some("cpu"), None, None, None);
    let Ok(cpu) = cpu else {
        panic!("the cpu profile")
    };
    let rt = cpu
        .iter()
        .find(|p| p.name == clr_events::RUNTIME_PROVIDER)
        .map(|p| p.keywords);
    assert_eq!(rt, Some(RUNTIME_KEYWORDS));
    // The sampler as the profile has it.
    assert!(cpu
        .iter()
        .any(|p| p.name == clr_events::SAMPLE_PROFILER_PROVIDER));
}

/// A real trace (.NET Core 3.0: samples, allocation ticks, GCs) fed in steps, as a live
/// session feeds it: every step's totals add up to what the analysis says of the whole.
#[test]
fn a_real_traces_totals_add_up_and_the_window_is_their_difference() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../nettrace/tests/data/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip");
    let Ok(trace) = clrspy_analysis::trace_file::OpenTrace::open(&path) else {
        panic!("open {}", path.display())
    };
    let Ok(mut reader) = trace.reader() else {
        panic!("read {}", path.display())
    };
    let mut a = Analysis::new(reader.header(), clrspy_analysis::Options::default());
    let mut steps: Vec<Totals> = Vec::new();
    let read = reader.for_each_event(|ev| {
        a.event(ev);
        if a.events.is_multiple_of(25_000) {
            steps.push(Totals::of(&a.snapshot()));
        }
        true
    });
    assert!(read.is_ok());
    let whole = a.snapshot();
    steps.push(Totals::of(&whole));
    assert!(steps.len() >= 4, "{} steps", steps.len());
    let last = steps.last().cloned().unwrap_or_default();

    // What the methods add up to is what the analysis weighs.
    let profile = whole.profile(&StackFilter::default());
    let unit_s = profile.interval_ns as f64 / 1e9;
    let sum = |m: &HashMap<String, Pair>| m.values().map(|p| p.exclusive).sum::<f64>();
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-6 * y.abs().max(1.0);
    assert!(profile.total(Metric::Cpu) > 0.0);
    assert!(close(sum(&last.cpu), profile.total(Metric::Cpu) * unit_s));
    assert!(close(sum(&last.wait), profile.total(Metric::Wait) * unit_s));
    // No thread CPU readings in this trace: the process's CPU is what the samples weigh.
    assert!(close(
        last.process_cpu_s,
        profile.total(Metric::Cpu) * unit_s
    ));
    let allocated = whole.alloc.total_bytes as f64;
    assert!(allocated > 0.0);
    assert!(close(last.alloc_bytes, allocated));
    assert!(close(sum(&last.alloc_by_type), allocated));
    assert!(close(sum(&last.alloc_by_method), allocated));
    let paused: f64 = whole.gc.gcs.iter().map(|g| g.pause_ms).sum();
    assert!(paused > 0.0 && close(last.gc_pause_s, paused / 1e3));
    for m in [&last.cpu, &last.wait, &last.alloc_by_method] {
        for (name, p) in m {
            assert!(p.inclusive + 1e-9 >= p.exclusive, "{name}: {p:?}");
        }
    }

    // A window reaching back to the second step: each row is the difference.
    let base = &steps[1];
    let span = Duration::from_nanos(u64::try_from(last.time_ns - base.time_ns).unwrap_or(0));
    let mut w = TopWindow::new(span);
    for s in &steps {
        w.push(s.clone());
    }
    let t = w.table(Mode::AllocByType, SortBy::Exclusive);
    assert!(!t.rows.is_empty());
    for r in &t.rows {
        let was = base.alloc_by_type.get(&r.name).map_or(0.0, |p| p.exclusive);
        assert!(close(
            r.value.exclusive,
            last.alloc_by_type[&r.name].exclusive - was
        ));
    }
    let t = w.table(Mode::Cpu, SortBy::Inclusive);
    let first = &t.rows[0];
    let was = base.cpu.get(&first.name).map_or(0.0, |p| p.inclusive);
    assert!(close(
        first.value.inclusive,
        last.cpu[&first.name].inclusive - was
    ));
    assert!(t
        .rows
        .windows(2)
        .all(|p| p[0].value.inclusive >= p[1].value.inclusive));
}
