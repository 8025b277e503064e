//! `counters monitor`'s table: the latest value of every time series, grouped by source. On a
//! terminal it is drawn with ratatui to fit the screen (names cut, a "… N more" line) and
//! redrawn in place, only what changed; without one it is printed as plain blocks, nothing cut.
//!
//! A name cut to fit is cut so that it still tells its row apart: the cut text, read as a
//! pattern where "…" stands for one character or more, matches no other row of its source.
//! The end is cut first; when that would show two rows alike
//! (`dotnet.gc.last_collection.heap.size` and `…heap.fragmentation.size`, both with
//! `[gen0]`), the middle is cut instead, keeping the end from a word on (`…heap.size`,
//! `…fragmentation.size`), else a window of the middle. When none of these tells the row
//! apart in the label's column, the label takes the room its value leaves; only when no cut
//! of that room tells it apart either is the end cut kept.

use std::collections::BTreeMap;
use std::io::{self, Stdout, Write};
use std::time::Duration;

use clrspy_analysis::counters::{CounterKind, CounterRow, CounterValue};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::terminal::{Clear, ClearType};
use ratatui::crossterm::{cursor, execute};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::{Frame, Terminal};

/// Width kept for the value column.
const VALUE_WIDTH: usize = 40;
/// The fewest characters of a name kept when its tags are kept whole.
const NAME_MIN: usize = 8;
/// Where a word begins after: the end of a cut name is kept from one of these on.
const WORD_BREAKS: &[char] = &['.', '_', '-', '/', ' '];
/// A row's indent under its source.
const INDENT: &str = "    ";

/// The latest rows, by (source, name, tags).
#[derive(Debug)]
pub(super) struct Table {
    refresh: Duration,
    rows: BTreeMap<(String, String, String), CounterRow>,
    last_end_ns: i64,
}

/// One line of the table: a source's header, or a row.
#[derive(Debug)]
enum Entry {
    /// `[System.Runtime]`.
    Source(String),
    /// An instrument's time series.
    Row {
        /// The instrument's name.
        name: String,
        /// Its tag values (` [gen0]`), or nothing.
        tags: String,
        /// Its value in words.
        value: String,
    },
}

impl Table {
    /// An empty table.
    pub(super) fn new(refresh: Duration) -> Table {
        Table {
            refresh,
            rows: BTreeMap::new(),
            last_end_ns: 0,
        }
    }

    /// Takes in an interval's rows.
    pub(super) fn add(&mut self, rows: &[CounterRow]) {
        for r in rows {
            self.last_end_ns = self.last_end_ns.max(r.interval_end_ns);
            let tags = r
                .tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            self.rows
                .insert((r.provider.clone(), r.name.clone(), tags), r.clone());
        }
    }

    fn title(&self) -> String {
        let at = if self.last_end_ns > 0 {
            nettrace::format_unix_ns(self.last_end_ns)
                .get(..19)
                .map(|s| format!("  {}Z", s.replace('T', " ")))
                .unwrap_or_default()
        } else {
            String::new()
        };
        format!(
            "clrspy counters (every {} s; rates per second){at}",
            self.refresh.as_secs_f64()
        )
    }

    /// The table's lines, whole. Tags are shown by their values (`[gen0]`); the files keep
    /// their keys.
    fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut source = None;
        for ((provider, name, _), r) in &self.rows {
            if source != Some(provider) {
                out.push(Entry::Source(format!("[{provider}]")));
                source = Some(provider);
            }
            let tags = if r.tags.is_empty() {
                String::new()
            } else {
                let values: Vec<&str> = r.tags.iter().map(|(_, v)| v.as_str()).collect();
                format!(" [{}]", values.join(","))
            };
            out.push(Entry::Row {
                name: name.clone(),
                tags,
                value: value_text(r),
            });
        }
        out
    }

    /// The lines shown on a `width` × `height` terminal, each at most `width` characters
    /// (true for a source's header), and how many more did not fit.
    fn fitted(&self, width: usize, height: usize) -> (Vec<(bool, String)>, usize) {
        let width = width.max(20);
        let room = height.max(3) - 1;
        let entries = self.entries();
        let (shown, more) = if entries.len() > room {
            (room - 1, entries.len() - (room - 1))
        } else {
            (entries.len(), 0)
        };
        let vw = VALUE_WIDTH.min(width / 2);
        let lw = width.saturating_sub(vw + 1);
        // The rows of each source, by their whole label: what a cut must tell apart.
        let mut labels_of_source = Vec::new();
        let mut lines = Vec::with_capacity(shown);
        for (i, e) in entries.iter().enumerate() {
            if let Entry::Source(_) = e {
                labels_of_source = entries[i + 1..]
                    .iter()
                    .take_while(|e| matches!(e, Entry::Row { .. }))
                    .filter_map(|e| match e {
                        Entry::Row { name, tags, .. } => Some(format!("{name}{tags}")),
                        Entry::Source(_) => None,
                    })
                    .collect();
            }
            if i >= shown {
                break;
            }
            lines.push(match e {
                Entry::Source(s) => (true, cut(s, width)),
                Entry::Row { name, tags, value } => {
                    let room = lw.saturating_sub(INDENT.len());
                    // A cut that cannot tell the row apart takes the room the value leaves.
                    let spare = vw.saturating_sub(value.chars().count());
                    let label = label(name, tags, room, &labels_of_source)
                        .or_else(|_| label(name, tags, room + spare, &labels_of_source))
                        .unwrap_or_else(|end_cut| end_cut);
                    let pad = room.saturating_sub(label.chars().count());
                    let line = format!("{INDENT}{label}{} {}", " ".repeat(pad), cut(value, vw));
                    (false, line)
                }
            });
        }
        (lines, more)
    }

    /// Draws the table on `f`: the title, as many lines as fit, and "… N more" when some do
    /// not. Returns the number of lines drawn.
    pub(super) fn draw(&self, f: &mut Frame<'_>) -> u16 {
        let area = f.area();
        let (lines, more) = self.fitted(usize::from(area.width), usize::from(area.height));
        let body = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        let [head, rows, foot] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(body),
            Constraint::Length(u16::from(more > 0)),
        ])
        .areas(area);
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let title = cut(&self.title(), usize::from(area.width).max(20));
        f.render_widget(Paragraph::new(Line::from(title).style(bold)), head);
        let lines: Vec<Line<'_>> = lines
            .into_iter()
            .map(|(header, text)| {
                let line = Line::from(text);
                if header {
                    line.style(bold)
                } else {
                    line
                }
            })
            .collect();
        f.render_widget(Paragraph::new(lines), rows);
        if more > 0 {
            f.render_widget(Paragraph::new(format!("… {more} more")), foot);
        }
        head.height + rows.height + foot.height
    }

    /// The table as a plain block (no terminal): title, lines, an empty line. Nothing is cut:
    /// the values line up after the longest label (from the 41st column at least, as on an
    /// 80-column screen).
    pub(super) fn block(&self) -> String {
        let entries = self.entries();
        let lw = entries
            .iter()
            .map(|e| match e {
                Entry::Row { name, tags, .. } => name.chars().count() + tags.chars().count(),
                Entry::Source(_) => 0,
            })
            .max()
            .unwrap_or(0)
            .max(80 - VALUE_WIDTH - 1 - INDENT.len());
        let mut out = self.title();
        out.push('\n');
        for e in entries {
            match e {
                Entry::Source(s) => out.push_str(&s),
                Entry::Row { name, tags, value } => {
                    let label = format!("{name}{tags}");
                    let pad = lw.saturating_sub(label.chars().count());
                    out.push_str(&format!("{INDENT}{label}{} {value}", " ".repeat(pad)));
                }
            }
            out.push('\n');
        }
        out.push('\n');
        out
    }
}

/// `counters monitor` on a terminal: the main screen cleared and the cursor hidden at the
/// start, the table redrawn in place by ratatui (the last one stays on the screen), and at
/// the end — however it comes — the cursor shown again on the line below the table.
pub(super) struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    /// Lines the last table took.
    used: u16,
}

impl Screen {
    /// Clears the screen and takes it over.
    pub(super) fn enter() -> io::Result<Screen> {
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        // From here on, dropping the screen shows the cursor again.
        let screen = Screen { terminal, used: 0 };
        execute!(
            io::stdout(),
            Clear(ClearType::All),
            cursor::MoveTo(0, 0),
            cursor::Hide
        )?;
        Ok(screen)
    }

    /// Draws `table` (fitted to the terminal's size now).
    pub(super) fn show(&mut self, table: &Table) -> io::Result<()> {
        let mut used = 0;
        self.terminal.draw(|f| used = table.draw(f))?;
        self.used = used;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let mut out = io::stdout();
        let _ = execute!(
            out,
            cursor::MoveTo(0, self.used.saturating_sub(1)),
            cursor::Show
        );
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}

/// A row's label (its name and tags) in at most `width` characters: whole when it fits, else
/// the name cut (the tags kept while the name keeps [`NAME_MIN`] characters, else cut too) so
/// that no other of `labels` (the source's rows, whole) could be read for it; the end cut as
/// an error when no cut in `width` tells it apart.
fn label(name: &str, tags: &str, width: usize, labels: &[String]) -> Result<String, String> {
    let whole = format!("{name}{tags}");
    if whole.chars().count() <= width {
        return Ok(whole);
    }
    let tw = tags.chars().count();
    let (head, keep) = if tw + NAME_MIN <= width {
        (name, tags)
    } else {
        (whole.as_str(), "")
    };
    let room = width - keep.chars().count();
    let head: Vec<char> = head.chars().collect();
    let rivals: Vec<&str> = labels
        .iter()
        .map(String::as_str)
        .filter(|l| *l != whole)
        .collect();
    let told_apart = cuts(&head, room)
        .map(|mut pieces| {
            if let Some(last) = pieces.last_mut() {
                last.push_str(keep);
            }
            pieces
        })
        .find(|pieces| !rivals.iter().any(|r| matches(pieces, r)));
    match told_apart {
        Some(pieces) => Ok(pieces.join("…")),
        None => Err(format!(
            "{}{keep}",
            cut(&head.iter().collect::<String>(), room)
        )),
    }
}

/// The ways to cut `c` to `room` characters, best first, each as the pieces kept between
/// the "…"s: the end cut; the start and an end that begins a word; the start and any end;
/// a window of the middle, after some of the start or none.
fn cuts(c: &[char], room: usize) -> impl Iterator<Item = Vec<String>> + '_ {
    let m = c.len();
    let text = move |from: usize, to: usize| c[from..to].iter().collect::<String>();
    // Nothing to cut, or no room for more than the end cut: the end cut alone.
    let (room, cut_more) = if m <= room || room < 3 {
        (room.min(m).max(1), false)
    } else {
        (room, true)
    };
    let end_cut = std::iter::once(vec![text(0, room - 1), String::new()]);
    // An end of j characters after a start of room - 1 - j (both at least one).
    let tails = if cut_more { 1..room - 1 } else { 1..1 };
    let tail = move |j: usize| vec![text(0, room - 1 - j), text(m - j, m)];
    let word_tails = tails
        .clone()
        .filter(move |&j| WORD_BREAKS.contains(&c[m - j - 1]))
        .map(tail);
    let any_tails = tails.map(tail);
    // A start of k, a window of w = room - 2 - k at i, at least one character cut on each side.
    let starts: Vec<usize> = if cut_more && room >= 4 {
        let mut s = vec![((room - 2) / 3).max(1), 1, 0];
        s.dedup();
        s
    } else {
        Vec::new()
    };
    let windows = starts.into_iter().flat_map(move |k| {
        let w = room - 2 - k;
        (k + 1..m.saturating_sub(w)).map(move |i| vec![text(0, k), text(i, i + w), String::new()])
    });
    end_cut.chain(word_tails).chain(any_tails).chain(windows)
}

/// True when `s` could be the text `pieces` shows: it starts with the first piece, ends with
/// the last, holds the others in order, and each "…" between them stands for one character
/// or more.
fn matches(pieces: &[String], s: &str) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return s.is_empty();
    };
    let Some(s) = s.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return s.is_empty();
    };
    let Some(mut s) = s.strip_suffix(last.as_str()) else {
        return false;
    };
    for p in middle {
        let mut chars = s.chars();
        if chars.next().is_none() {
            return false;
        }
        s = chars.as_str();
        match s.find(p.as_str()) {
            Some(i) => s = &s[i + p.len()..],
            None => return false,
        }
    }
    !s.is_empty()
}

/// `s` cut to `width` characters, with "…" where it was cut.
fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A number in few characters.
fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1e12 {
        format!("{v:.3e}")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 1000.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        // Three significant digits: 0.0123, 0.160.
        let digits = (2.0 - a.log10().floor()) as usize;
        format!("{v:.digits$}")
    } else {
        format!("{v:.2e}")
    }
}

fn value_text(r: &CounterRow) -> String {
    let unit = if r.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", r.unit)
    };
    match r.value {
        CounterValue::Number(v) if r.kind == CounterKind::Rate => {
            let secs = r.interval_sec();
            let per = if secs > 0.0 { v / secs } else { v };
            format!("{}{unit}/s", num(per))
        }
        CounterValue::Number(v) => format!("{}{unit}", num(v)),
        CounterValue::Histogram(h) => {
            // How many values per second (requests, for a request duration), then where
            // they lay; durations in seconds are shown in ms (shorter, and how people read
            // them).
            let secs = r.interval_sec();
            let per = if secs > 0.0 {
                h.count as f64 / secs
            } else {
                h.count as f64
            };
            let (scale, unit) = if r.unit == "s" {
                (1000.0, " ms".to_string())
            } else {
                (1.0, unit)
            };
            let q = |x: Option<f64>| x.map(|v| num(v * scale)).unwrap_or_else(|| "-".into());
            format!(
                "{}/s p50 {} p95 {} p99 {}{unit}",
                num(per),
                q(h.p50),
                q(h.p95),
                q(h.p99)
            )
        }
    }
}

#[cfg(test)]
mod tests;
