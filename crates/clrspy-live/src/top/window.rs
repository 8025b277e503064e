//! The windowed table: a snapshot's cumulative totals ([`Totals`]) and the window that
//! subtracts the totals of a window ago from the newest ([`TopWindow`]).

use std::collections::{HashMap, HashSet, VecDeque};

use clrspy_analysis::symbols::FrameKind;
use clrspy_analysis::{Analysis, Metric, StackFilter};

/// What the table weighs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// CPU time, by method.
    Cpu,
    /// Waiting (off-CPU) time, by method.
    Wait,
    /// Allocated bytes, by allocating method (exclusive: allocated in the method itself).
    AllocByMethod,
    /// Allocated bytes, by type (exclusive and inclusive are the same).
    AllocByType,
}

impl Mode {
    /// Its name in the view's header.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Cpu => "CPU",
            Mode::Wait => "waiting",
            Mode::AllocByMethod => "allocations by method",
            Mode::AllocByType => "allocations by type",
        }
    }

    /// True when the table's figures are bytes (else seconds).
    pub fn is_bytes(self) -> bool {
        matches!(self, Mode::AllocByMethod | Mode::AllocByType)
    }
}

/// Which column orders the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortBy {
    /// Exclusive (self) figures.
    #[default]
    Exclusive,
    /// Inclusive (self and callees) figures.
    Inclusive,
}

impl SortBy {
    /// The other column.
    pub fn next(self) -> SortBy {
        match self {
            SortBy::Exclusive => SortBy::Inclusive,
            SortBy::Inclusive => SortBy::Exclusive,
        }
    }
}

/// Exclusive and inclusive figures of one name.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pair {
    /// The name's own figure (seconds or bytes).
    pub exclusive: f64,
    /// With what it called.
    pub inclusive: f64,
}

/// Cumulative figures of a session at one moment: everything since it started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// The trace's time of the snapshot (first to last event), ns.
    pub time_ns: i64,
    /// CPU seconds by method.
    pub cpu: HashMap<String, Pair>,
    /// Waiting seconds by method.
    pub wait: HashMap<String, Pair>,
    /// Allocated bytes by allocating method.
    pub(crate) alloc_by_method: HashMap<String, Pair>,
    /// Allocated bytes by type.
    pub(crate) alloc_by_type: HashMap<String, Pair>,
    /// The process's CPU seconds: the threads' readings where the trace has them, else
    /// what the samples weigh.
    pub(crate) process_cpu_s: f64,
    /// GC pause, seconds.
    pub(crate) gc_pause_s: f64,
    /// Allocated bytes (what the allocation ticks stand for).
    pub(crate) alloc_bytes: f64,
}

/// Adds a stack's weight: `w` to its leaf (exclusive), `w` once to each distinct name on it.
pub(super) fn add_stack(m: &mut HashMap<String, Pair>, names: &[&str], w: f64) {
    if w <= 0.0 {
        return;
    }
    let leaf = names.first().copied().unwrap_or("[no stack]");
    m.entry(leaf.to_string()).or_default().exclusive += w;
    let mut seen = HashSet::new();
    for &n in names {
        if seen.insert(n) {
            m.entry(n.to_string()).or_default().inclusive += w;
        }
    }
    if names.is_empty() {
        m.entry(leaf.to_string()).or_default().inclusive += w;
    }
}

impl Totals {
    /// The cumulative figures of a finished snapshot.
    pub fn of(a: &Analysis) -> Totals {
        let profile = a.profile(&StackFilter::default());
        let unit_s = profile.interval_ns as f64 / 1e9;
        let mut cpu = HashMap::new();
        let mut wait = HashMap::new();
        let mut names: Vec<&str> = Vec::new();
        for r in &profile.rows {
            names.clear();
            names.extend(r.frames.iter().map(|&f| a.symbols.frame(f).name.as_str()));
            add_stack(&mut cpu, &names, r.weight(Metric::Cpu) * unit_s);
            add_stack(&mut wait, &names, r.weight(Metric::Wait) * unit_s);
        }
        let mut alloc_by_method = HashMap::new();
        let mut alloc_by_type: HashMap<String, Pair> = HashMap::new();
        for (&(t, heap, stack), &(_, bytes)) in &a.alloc.by_stack {
            let bytes = bytes as f64;
            let frames: Vec<&str> = stack
                .map(|s| {
                    a.stacks
                        .ips(s)
                        .iter()
                        .map(|&ip| a.symbols.frame(a.symbols.resolve(ip)))
                        // The runtime's allocation helpers above the allocating method.
                        .skip_while(|f| f.kind != FrameKind::Managed)
                        .map(|f| f.name.as_str())
                        .collect()
                })
                .unwrap_or_default();
            add_stack(&mut alloc_by_method, &frames, bytes);
            let name = match heap {
                clrspy_analysis::alloc::HeapKind::Small => a.alloc.type_name(t).to_string(),
                clrspy_analysis::alloc::HeapKind::Large => {
                    format!("{} (LOH)", a.alloc.type_name(t))
                }
                clrspy_analysis::alloc::HeapKind::Pinned => {
                    format!("{} (POH)", a.alloc.type_name(t))
                }
            };
            let e = alloc_by_type.entry(name).or_default();
            e.exclusive += bytes;
            e.inclusive += bytes;
        }
        let measured: f64 = a.cpu.measured_cpu_ns().map(|(_, ns)| ns).sum();
        let process_cpu_s = if a.cpu.has_readings() {
            measured / 1e9
        } else {
            profile.total(Metric::Cpu) * unit_s
        };
        Totals {
            time_ns: a.duration_ns,
            cpu,
            wait,
            alloc_by_method,
            alloc_by_type,
            process_cpu_s,
            gc_pause_s: a.gc.gcs.iter().map(|g| g.pause_ms).sum::<f64>() / 1e3,
            alloc_bytes: a.alloc.total_bytes as f64,
        }
    }

    fn of_mode(&self, mode: Mode) -> &HashMap<String, Pair> {
        match mode {
            Mode::Cpu => &self.cpu,
            Mode::Wait => &self.wait,
            Mode::AllocByMethod => &self.alloc_by_method,
            Mode::AllocByType => &self.alloc_by_type,
        }
    }
}

/// One row of the window's table.
#[derive(Clone, Debug, PartialEq)]
pub struct TopRow {
    /// The method (`module!Type.Method`) or type.
    pub name: String,
    /// Its figures over the window (seconds or bytes).
    pub value: Pair,
    /// The same as percentages: of one core's time over the window for CPU and waiting (a
    /// thread busy all the time is 100 %), of all bytes allocated for allocations.
    pub percent: Pair,
}

/// The header of the window's table.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TopHeader {
    /// The window's length, seconds (shorter than asked at the start).
    pub span_s: f64,
    /// The process's CPU over the window, % of one core (like `top`).
    pub cpu_percent: f64,
    /// GC pause over the window, % of its time.
    pub gc_percent: f64,
    /// Allocation rate, bytes per second.
    pub alloc_bytes_per_s: f64,
}

/// The table of a window: header and rows, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopTable {
    /// The header's figures.
    pub header: TopHeader,
    /// Rows, heaviest first by the sort column.
    pub rows: Vec<TopRow>,
}

/// The totals of the last refreshes, and the table of the window they span.
#[derive(Clone, Debug)]
pub struct TopWindow {
    window_ns: i64,
    /// Oldest first; the first is at most a window older than the last.
    history: VecDeque<Totals>,
}

impl TopWindow {
    /// A window of `window` (a session's start is its zero: totals are all 0 there).
    pub fn new(window: std::time::Duration) -> TopWindow {
        let mut history = VecDeque::new();
        history.push_back(Totals::default());
        TopWindow {
            window_ns: i64::try_from(window.as_nanos()).unwrap_or(i64::MAX).max(1),
            history,
        }
    }

    /// Adds a refresh's totals (a snapshot's time never goes back: an older one is dropped)
    /// and forgets those the window no longer needs.
    pub fn push(&mut self, t: Totals) {
        if self.history.back().is_some_and(|b| t.time_ns < b.time_ns) {
            return;
        }
        let start = t.time_ns - self.window_ns;
        self.history.push_back(t);
        // Keep the newest totals at or before the window's start as its base.
        while self.history.len() > 2 && self.history[1].time_ns <= start {
            self.history.pop_front();
        }
    }

    /// The newest totals.
    pub fn latest(&self) -> Option<&Totals> {
        self.history.back()
    }

    /// The table of the window in `mode`, ordered by `sort`.
    ///
    /// The window is as long as asked once the session is: refreshes come every second or
    /// two, so no snapshot is taken just a window before the newest; the base is read
    /// between the two snapshots around the window's start, each figure as if it grew
    /// evenly between them.
    pub fn table(&self, mode: Mode, sort: SortBy) -> TopTable {
        let (Some(first), Some(last)) = (self.history.front(), self.history.back()) else {
            return TopTable::default();
        };
        let start = last.time_ns - self.window_ns;
        // The base: `first` (at or before the window's start), or part of the way to the
        // next snapshot, where the window starts.
        let (next, f) = match self.history.get(1) {
            Some(n) if first.time_ns < start && n.time_ns > first.time_ns => {
                let f = (start - first.time_ns) as f64 / (n.time_ns - first.time_ns) as f64;
                (n, f.clamp(0.0, 1.0))
            }
            _ => (first, 0.0),
        };
        let at = |a: f64, b: f64| a + (b - a) * f;
        let base_ns = at(first.time_ns as f64, next.time_ns as f64);
        let span_s = (last.time_ns as f64 - base_ns) / 1e9;
        // Rates of what grew; 0 (never -0) for what did not.
        let per_s = |x: f64| {
            if span_s > 0.0 && x > 0.0 {
                x / span_s
            } else {
                0.0
            }
        };
        let header = TopHeader {
            span_s,
            cpu_percent: per_s(last.process_cpu_s - at(first.process_cpu_s, next.process_cpu_s))
                * 100.0,
            gc_percent: (per_s(last.gc_pause_s - at(first.gc_pause_s, next.gc_pause_s)) * 100.0)
                .min(100.0),
            alloc_bytes_per_s: per_s(last.alloc_bytes - at(first.alloc_bytes, next.alloc_bytes)),
        };
        let (before, after) = (first.of_mode(mode), next.of_mode(mode));
        let mut rows: Vec<TopRow> = last
            .of_mode(mode)
            .iter()
            .filter_map(|(name, now)| {
                let a = before.get(name).copied().unwrap_or_default();
                let b = after.get(name).copied().unwrap_or_default();
                let was = Pair {
                    exclusive: at(a.exclusive, b.exclusive),
                    inclusive: at(a.inclusive, b.inclusive),
                };
                let exclusive = (now.exclusive - was.exclusive).max(0.0);
                // A later snapshot may weigh a sample differently (the estimate moved): the
                // differences keep inclusive at least exclusive, as each snapshot has it.
                let value = Pair {
                    exclusive,
                    inclusive: (now.inclusive - was.inclusive).max(exclusive),
                };
                (value.inclusive > 0.0 || value.exclusive > 0.0).then(|| TopRow {
                    name: name.clone(),
                    value,
                    percent: Pair::default(),
                })
            })
            .collect();
        let whole = if mode.is_bytes() {
            rows.iter().map(|r| r.value.exclusive).sum::<f64>()
        } else {
            span_s
        };
        for r in &mut rows {
            if whole > 0.0 {
                r.percent = Pair {
                    exclusive: r.value.exclusive / whole * 100.0,
                    inclusive: r.value.inclusive / whole * 100.0,
                };
            }
        }
        let key = |p: &Pair| match sort {
            SortBy::Exclusive => (p.exclusive, p.inclusive),
            SortBy::Inclusive => (p.inclusive, p.exclusive),
        };
        rows.sort_by(|a, b| {
            let (ka, kb) = (key(&a.value), key(&b.value));
            kb.0.total_cmp(&ka.0)
                .then_with(|| kb.1.total_cmp(&ka.1))
                .then_with(|| a.name.cmp(&b.name))
        });
        TopTable { header, rows }
    }
}
