use std::collections::HashSet;

use clrspy_analysis::counters::HistogramSummary;
use ratatui::backend::TestBackend;

use super::*;

fn row(provider: &str, name: &str, kind: CounterKind, value: CounterValue) -> CounterRow {
    CounterRow {
        interval_start_ns: 0,
        interval_end_ns: 2_000_000_000,
        provider: provider.into(),
        name: name.into(),
        tags: vec![],
        kind,
        unit: String::new(),
        value,
    }
}

fn tagged(name: &str, tags: &[(&str, &str)]) -> CounterRow {
    let mut r = row(
        "System.Runtime",
        name,
        CounterKind::UpDown,
        CounterValue::Number(1.0),
    );
    r.tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    r
}

/// The lines ratatui draws for `t` on a `w` × `h` terminal, trailing blanks trimmed.
fn screen(t: &Table, w: u16, h: u16) -> Vec<String> {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    let mut used = 0;
    term.draw(|f| used = t.draw(f)).unwrap();
    let buf = term.backend().buffer();
    (0..used)
        .map(|y| {
            let l: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            l.trim_end().to_string()
        })
        .collect()
}

/// The label column of a drawn row on a `w`-wide terminal.
fn label_of(line: &str, w: usize) -> String {
    let lw = w - VALUE_WIDTH.min(w / 2) - 1;
    line.chars()
        .take(lw)
        .collect::<String>()
        .trim_end()
        .to_string()
}

#[test]
fn fits_80x24_with_a_more_line_and_rates_per_second() {
    let mut t = Table::new(Duration::from_secs(1));
    let rows: Vec<CounterRow> = (0..40)
        .map(|i| {
            row(
                "System.Runtime",
                &format!("dotnet.a.very.long.instrument.name.that.goes.on.and.on.{i:02}"),
                CounterKind::Rate,
                CounterValue::Number(10.0),
            )
        })
        .collect();
    t.add(&rows);
    let lines = screen(&t, 80, 24);
    assert_eq!(lines.len(), 24);
    for l in &lines {
        assert!(l.chars().count() <= 80, "{l:?}");
    }
    assert!(
        lines[0].starts_with("clrspy counters (every 1 s"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1], "[System.Runtime]");
    assert!(lines[23].starts_with("… 19 more"), "{}", lines[23]);
    assert!(lines[2].contains("5/s"), "{}", lines[2]);
    assert!(lines[2].contains('…'));
    // Forty names alike but for their end: each keeps its end.
    assert!(lines[2].contains("…00 "), "{}", lines[2]);
    let labels: HashSet<String> = lines[2..23].iter().map(|l| label_of(l, 80)).collect();
    assert_eq!(labels.len(), 21);
}

#[test]
fn histograms_show_percentiles_and_a_block_has_every_row() {
    let mut t = Table::new(Duration::from_secs(1));
    t.add(&[row(
        "M",
        "lat",
        CounterKind::Histogram,
        CounterValue::Histogram(HistogramSummary {
            count: 3,
            sum: 6.0,
            p50: Some(2.0),
            p95: Some(3.0),
            p99: None,
        }),
    )]);
    let b = t.block();
    assert!(b.contains("[M]"));
    // 3 values over the row's 2 s interval.
    assert!(b.contains("1.50/s p50 2 p95 3 p99 -"), "{b}");
    // The value from the 41st column, as on an 80-column screen.
    let l = b.lines().find(|l| l.contains("lat")).unwrap();
    assert_eq!(l.find("1.50/s"), Some(40), "{l:?}");
    assert_eq!(num(0.16), "0.160");
    assert_eq!(num(0.000_123), "1.23e-4");
    assert_eq!(num(0.0123), "0.0123");
}

#[test]
fn a_cut_name_keeps_its_tags() {
    let mut t = Table::new(Duration::from_secs(1));
    t.add(&[tagged(
        "dotnet.gc.last_collection.heap.fragmentation.size",
        &[("gc.heap.generation", "gen2")],
    )]);
    let lines = screen(&t, 60, 10);
    let l = &lines[2];
    assert!(l.contains("… [gen2]"), "{l}");
    assert!(l.chars().count() <= 60);
}

/// The runtime's gc instruments by generation, and others that share long starts.
fn lookalikes() -> Vec<CounterRow> {
    let mut rows = Vec::new();
    for g in ["gen0", "gen1", "gen2", "loh", "poh"] {
        let tag = [("gc.heap.generation", g)];
        rows.push(tagged("dotnet.gc.last_collection.heap.size", &tag));
        rows.push(tagged(
            "dotnet.gc.last_collection.heap.fragmentation.size",
            &tag,
        ));
    }
    for g in ["gen0", "gen1", "gen2"] {
        rows.push(tagged(
            "dotnet.gc.collections",
            &[("gc.heap.generation", g)],
        ));
    }
    for name in [
        "dotnet.gc.last_collection.memory.committed_size",
        "dotnet.gc.heap.total_allocated",
        "dotnet.gc.pause.time",
        "dotnet.jit.compiled_il.size",
        "dotnet.jit.compiled_methods",
        "dotnet.jit.compilation.time",
        "dotnet.thread_pool.thread.count",
        "dotnet.thread_pool.work_item.count",
        "dotnet.thread_pool.queue.length",
        "dotnet.monitor.lock_contentions",
        "dotnet.process.memory.working_set",
        "dotnet.assembly.count",
        "dotnet.timer.count",
    ] {
        rows.push(tagged(name, &[]));
    }
    for cpu in ["user", "system"] {
        rows.push(tagged("dotnet.process.cpu.time", &[("cpu.mode", cpu)]));
    }
    rows.push(tagged(
        "dotnet.exceptions",
        &[("error.type", "System.InvalidOperationException")],
    ));
    rows.push(tagged(
        "dotnet.exceptions",
        &[("error.type", "System.IO.FileNotFoundException")],
    ));
    rows
}

#[test]
fn two_names_are_never_cut_to_one() {
    let mut t = Table::new(Duration::from_secs(1));
    t.add(&lookalikes());
    // On 80 columns: what a piped `counters monitor` once printed twice, told apart.
    let lines = screen(&t, 80, 60);
    let shown: Vec<&String> = lines.iter().filter(|l| l.contains("size [gen0]")).collect();
    assert_eq!(shown.len(), 2, "{lines:#?}");
    assert!(
        shown.iter().any(|l| l.contains("…heap.size [gen0]")),
        "{shown:#?}"
    );
    assert!(
        shown
            .iter()
            .any(|l| l.contains("…fragmentation.size [gen0]")),
        "{shown:#?}"
    );
    // At every width, every row's label is its own (below 40 columns some take room from
    // their value), and each line fits.
    for w in 20..=120u16 {
        let lines = screen(&t, w, 60);
        let rows: Vec<&String> = lines[2..].iter().collect();
        assert_eq!(rows.len(), lookalikes().len(), "{w}: {lines:#?}");
        let labels: HashSet<&str> = rows
            .iter()
            .map(|l| l.strip_suffix(" 1").unwrap().trim_end())
            .collect();
        assert_eq!(labels.len(), rows.len(), "{w} columns: {lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= usize::from(w)));
    }
}

#[test]
fn a_cut_reads_as_its_row_only() {
    let p = |s: &[&str]| s.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    // "…" is one character or more.
    assert!(matches(&p(&["ab", ""]), "abc"));
    assert!(!matches(&p(&["ab", ""]), "ab"));
    assert!(matches(&p(&["a", "z"]), "a.z"));
    assert!(!matches(&p(&["a", "z"]), "az"));
    assert!(matches(&p(&["a", "m", "z"]), "a.m.z"));
    assert!(!matches(&p(&["a", "m", "z"]), "am.z"));
    assert!(!matches(&p(&["a", "m", "z"]), "a.mz"));
    assert!(matches(&p(&["", "m", ""]), ".m."));
    assert!(!matches(&p(&["", "m", ""]), "m."));
    // A name cut once already among two that read alike at their end: the middle goes.
    let rivals = [
        "dotnet.gc.heap.size [gen0]".to_string(),
        "dotnet.gc.heap.fragmentation.size [gen0]".to_string(),
    ];
    let l = label("dotnet.gc.heap.size", " [gen0]", 22, &rivals).unwrap();
    assert_eq!(l.chars().count(), 22, "{l}");
    assert!(l.ends_with("heap.size [gen0]"), "{l}");
    // Alone, the end is cut.
    let l = label("dotnet.gc.heap.size", " [gen0]", 22, &rivals[..1]);
    assert_eq!(l.as_deref(), Ok("dotnet.gc.heap… [gen0]"));
    // A window of the middle when the start and end are alike.
    let l = label("dotnet.gc.heap.size", " [gen0]", 10, &rivals).unwrap();
    assert!(l.contains("heap.s"), "{l}");
    // No cut in 6 characters tells twelve a's from thirteen: the end cut, as an error.
    let l = label("aaaaaaaaaaaa", "", 6, &["aaaaaaaaaaaaa".to_string()]);
    assert_eq!(l, Err("aaaaa…".to_string()));
}

#[test]
fn nothing_is_cut_without_a_terminal() {
    let mut t = Table::new(Duration::from_secs(1));
    t.add(&lookalikes());
    let mut r = row(
        "Microsoft.AspNetCore.Hosting",
        "http.server.request.duration",
        CounterKind::Histogram,
        CounterValue::Histogram(HistogramSummary {
            count: 123_456,
            sum: 6.0,
            p50: Some(0.012_345),
            p95: Some(1.234_56),
            p99: Some(12.345_6),
        }),
    );
    r.unit = "s".into();
    r.tags = vec![
        ("http.request.method".into(), "GET".into()),
        ("http.response.status_code".into(), "200".into()),
        ("http.route".into(), "/api/orders/{id}/lines".into()),
    ];
    t.add(&[r]);
    let b = t.block();
    assert!(!b.contains('…'), "{b}");
    for name in [
        "    dotnet.gc.last_collection.heap.fragmentation.size [gen0] ",
        "    dotnet.gc.last_collection.heap.size [gen0] ",
        "    http.server.request.duration [GET,200,/api/orders/{id}/lines] ",
    ] {
        assert_eq!(b.matches(name).count(), 1, "{name}: {b}");
    }
    assert!(
        b.contains("61728/s p50 12.35 p95 1234.6 p99 12345.6 ms"),
        "{b}"
    );
    // The values line up after the longest label.
    let at: HashSet<usize> = b
        .lines()
        .filter(|l| l.starts_with("    "))
        .map(|l| {
            l.strip_suffix(" 1")
                .map(str::len)
                .or_else(|| l.find(" 61728/s"))
                .unwrap()
        })
        .collect();
    assert_eq!(at.len(), 1, "{b}");
}

#[test]
fn a_thousand_lookalike_rows_fit_the_screen() {
    let mut t = Table::new(Duration::from_secs(1));
    let rows: Vec<CounterRow> = (0..1000)
        .map(|i| {
            tagged(
                "dotnet.a.very.long.instrument.name.that.goes.on.and.on",
                &[("shard", &format!("{i:04}"))],
            )
        })
        .collect();
    t.add(&rows);
    let lines = screen(&t, 80, 24);
    assert_eq!(lines.len(), 24);
    assert!(lines[2].ends_with('1'), "{}", lines[2]);
    assert!(lines[2].contains("… [0000]"), "{}", lines[2]);
}
