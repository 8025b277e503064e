//! `top`'s words and numbers: the header's figures, each row's cells, the keys' footer, and
//! the plain-text snapshot printed every interval when stdout is not a terminal.

use std::io::Write;
use std::time::Instant;

use clrspy_live::top::{Mode, SortBy, TopHeader, TopRow, TopTable};
use clrspy_values::human_bytes;

use super::live::{Live, ViewState};

/// The keys, as the full-screen view's footer lists them.
pub(super) const KEYS: &str =
    "c CPU  w waiting  a allocations (again: by type)  s/Tab sort  p/space pause  q quit";

/// The table's column titles (the last is the method's or the type's).
pub(super) fn titles(mode: Mode) -> [&'static str; 5] {
    let name = if mode == Mode::AllocByType {
        "TYPE"
    } else {
        "METHOD"
    };
    if mode.is_bytes() {
        ["EXCL%", "INCL%", "EXCL", "INCL", name]
    } else {
        ["EXCL%", "INCL%", "EXCL s", "INCL s", name]
    }
}

/// A figure of `mode`: seconds with two decimals, or bytes for people.
fn amount(mode: Mode, v: f64) -> String {
    if mode.is_bytes() {
        human_bytes(v.max(0.0).round() as u64)
    } else {
        format!("{v:.2}")
    }
}

/// A row's cells, in the titles' order.
pub(super) fn cells(mode: Mode, r: &TopRow) -> [String; 5] {
    [
        format!("{:.1}", r.percent.exclusive),
        format!("{:.1}", r.percent.inclusive),
        amount(mode, r.value.exclusive),
        amount(mode, r.value.inclusive),
        r.name.clone(),
    ]
}

/// What the table shows, in words: `CPU, by exclusive`.
pub(super) fn showing(mode: Mode, sort: SortBy) -> String {
    let by = match sort {
        SortBy::Exclusive => "exclusive",
        SortBy::Inclusive => "inclusive",
    };
    format!("{}, by {by}", mode.label())
}

/// The header's figures: process CPU, GC, allocation rate, threads, the window.
pub(super) fn figures(h: &TopHeader, threads: Option<u64>) -> String {
    let threads = threads.map_or_else(|| "?".to_string(), |n| n.to_string());
    format!(
        "CPU {:.1}%  GC {:.1}%  alloc {}/s  threads {threads}  window {:.1} s",
        h.cpu_percent,
        h.gc_percent,
        human_bytes(h.alloc_bytes_per_s.max(0.0).round() as u64),
        h.span_s,
    )
}

/// A plain-text snapshot: a header line, the column titles, the first `top` rows, a blank
/// line.
pub(super) fn snapshot(
    title: &str,
    table: &TopTable,
    mode: Mode,
    sort: SortBy,
    threads: Option<u64>,
    top: usize,
) -> String {
    let mut s = format!(
        "clrspy top: {title}  {}  [{}]\n",
        figures(&table.header, threads),
        showing(mode, sort)
    );
    let t = titles(mode);
    s.push_str(&format!(
        "{:>6} {:>6} {:>9} {:>9}  {}\n",
        t[0], t[1], t[2], t[3], t[4]
    ));
    for r in table.rows.iter().take(top) {
        let c = cells(mode, r);
        s.push_str(&format!(
            "{:>6} {:>6} {:>9} {:>9}  {}\n",
            c[0], c[1], c[2], c[3], c[4]
        ));
    }
    if table.rows.is_empty() {
        s.push_str("(nothing in the window yet)\n");
    }
    s.push('\n');
    s
}

/// Prints a snapshot every refresh until the session ends (the target exited, `--duration`)
/// or Ctrl+C; the last one after it ended.
pub(super) fn run(live: &Live, state: &mut ViewState, top: usize) -> std::io::Result<()> {
    let mut next = Instant::now() + state.refresh;
    loop {
        let ended = live.ended() || clrspy_cli::interrupted();
        let now = Instant::now();
        if !ended && now < next {
            std::thread::sleep((next - now).min(std::time::Duration::from_millis(100)));
            continue;
        }
        // A refresh slower than the interval (a big process) is not made up for.
        next += state.refresh;
        if next < Instant::now() {
            next = Instant::now() + state.refresh;
        }
        state.refresh(live);
        if state.window.latest().is_some_and(|t| t.time_ns > 0) {
            let table = state.window.table(state.mode, state.sort);
            let out = snapshot(
                &live.title(),
                &table,
                state.mode,
                state.sort,
                state.threads,
                top,
            );
            let mut o = std::io::stdout().lock();
            o.write_all(out.as_bytes())?;
            o.flush()?;
        }
        if ended {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use clrspy_live::top::Pair;

    use super::*;

    fn row(name: &str, e: f64, i: f64, pe: f64, pi: f64) -> TopRow {
        TopRow {
            name: name.into(),
            value: Pair {
                exclusive: e,
                inclusive: i,
            },
            percent: Pair {
                exclusive: pe,
                inclusive: pi,
            },
        }
    }

    #[test]
    fn a_snapshot_has_its_header_titles_and_first_rows() {
        let table = TopTable {
            header: TopHeader {
                span_s: 5.0,
                cpu_percent: 99.84,
                gc_percent: 0.0,
                alloc_bytes_per_s: 2048.0,
            },
            rows: vec![
                row(
                    "Workloads!Workloads.Cpu.Burn(float64)",
                    4.99,
                    4.99,
                    99.8,
                    99.8,
                ),
                row(
                    "Workloads!Workloads.Cpu+<>c.<Run>b__1_0()",
                    0.0,
                    4.99,
                    0.0,
                    99.8,
                ),
                row(
                    "System.Private.CoreLib!System.Threading.Thread.StartCallback()",
                    0.0,
                    4.99,
                    0.0,
                    99.8,
                ),
            ],
        };
        let s = snapshot(
            "Workloads (pid 7)",
            &table,
            Mode::Cpu,
            SortBy::Exclusive,
            Some(12),
            2,
        );
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "clrspy top: Workloads (pid 7)  CPU 99.8%  GC 0.0%  alloc 2.0 KB/s  threads 12  window 5.0 s  [CPU, by exclusive]"
        );
        assert_eq!(lines[1], " EXCL%  INCL%    EXCL s    INCL s  METHOD");
        assert_eq!(
            lines[2],
            "  99.8   99.8      4.99      4.99  Workloads!Workloads.Cpu.Burn(float64)"
        );
        assert_eq!(lines.len(), 5, "{s}");
        assert_eq!(lines[4], "");
    }

    #[test]
    fn allocations_are_in_bytes_and_an_empty_window_says_so() {
        let table = TopTable {
            rows: vec![row(
                "System.String",
                3.0 * 1048576.0,
                3.0 * 1048576.0,
                100.0,
                100.0,
            )],
            ..TopTable::default()
        };
        let s = snapshot("x", &table, Mode::AllocByType, SortBy::Inclusive, None, 10);
        assert!(s.contains("threads ?"), "{s}");
        assert!(s.contains("[allocations by type, by inclusive]"), "{s}");
        assert!(s.contains(" EXCL%  INCL%      EXCL      INCL  TYPE"), "{s}");
        assert!(
            s.contains("\n 100.0  100.0    3.0 MB    3.0 MB  System.String\n"),
            "{s}"
        );
        let empty = snapshot(
            "x",
            &TopTable::default(),
            Mode::Wait,
            SortBy::Exclusive,
            None,
            10,
        );
        assert!(empty.contains("(nothing in the window yet)"), "{empty}");
    }
}
