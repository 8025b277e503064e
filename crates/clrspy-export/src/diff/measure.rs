//! One trace's figures as a diff compares them: tables of named rows (a method's CPU, a
//! type's allocated bytes, a route's p99), each row a [`Figure`] that knows what its noise is
//! counted in.

use clrspy_analysis::exceptions::{rethrow_helper, throw_site};
use clrspy_analysis::sketch::Sketch;
use clrspy_analysis::sources::http::HttpModel;
use clrspy_analysis::sources::requests::RequestModel;
use clrspy_analysis::{Analysis, Metric, StackFilter};
use rustc_hash::FxHashMap;

use super::limits::Class;
use crate::report::alloc::first_managed;
use crate::report::contention::waiter;

/// One row's figure in one trace.
#[derive(Clone, Debug)]
pub(crate) enum Figure {
    /// A total over the trace (ms, bytes, a count), compared per unit of work.
    Rate {
        /// The total.
        value: f64,
        /// The effective Poisson count behind it (samples, ticks, events).
        count: f64,
        /// What it is compared per: `None` for the trace's units of work, else its own (the
        /// trace's seconds for time paused, a route's requests for its error rate).
        exposure: Option<f64>,
    },
    /// A percentile of durations, ms.
    Quantile {
        /// The durations.
        sketch: Sketch,
        /// Which (0..1).
        q: f64,
    },
}

impl Figure {
    fn rate(value: f64, count: f64) -> Figure {
        Figure::Rate {
            value,
            count,
            exposure: None,
        }
    }
}

/// How a table's figures read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Milliseconds.
    Ms,
    /// Bytes.
    Bytes,
    /// A count.
    Count,
    /// A percentage (a rate over its own exposure, × 100).
    Percent,
}

/// One table of one trace: its rows by name.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    /// Stable id (`cpu.exclusive`): the JSON key.
    pub(crate) id: &'static str,
    /// Its heading.
    pub(crate) title: &'static str,
    /// What a row is called (`method`, `type`).
    pub(crate) key: &'static str,
    /// Its unit.
    pub(crate) unit: Unit,
    /// The threshold class of its rows, unless a row says its own ([`Table::classes`]).
    pub(crate) class: Class,
    /// Rows of another class than the table's (a route's p99), by their measure.
    pub(crate) classes: &'static [(&'static str, Class)],
    /// The total the rows' shares are of (`None`: every row is material).
    pub(crate) total: Option<f64>,
    /// The rows shown but never called a regression or an improvement (only "changed"):
    /// inclusive time, which async resumption, inlining and tiering move between callers from
    /// one run to the next; allocations with no frame of the app's, which the framework's
    /// pools and the recording's own event sources make and which vary from run to run.
    pub(crate) unjudged: fn(&str) -> bool,
    /// Rows by name and measure (`""` in a table of one measure; `p99`, `errors`).
    pub(crate) rows: FxHashMap<(String, &'static str), Figure>,
    /// The rows' keys in the order they came (the order of a table without a total).
    pub(crate) order: Vec<(String, &'static str)>,
}

impl Table {
    fn new(
        id: &'static str,
        title: &'static str,
        key: &'static str,
        unit: Unit,
        class: Class,
    ) -> Table {
        Table {
            id,
            title,
            key,
            unit,
            class,
            classes: &[],
            total: None,
            unjudged: |_| false,
            rows: FxHashMap::default(),
            order: Vec::new(),
        }
    }

    /// The class of a row of `measure`.
    pub(crate) fn class_of(&self, measure: &str) -> Class {
        self.classes
            .iter()
            .find(|(m, _)| *m == measure)
            .map_or(self.class, |c| c.1)
    }

    /// The unit of a row of `measure` with `figure`: a percentile is ms, a rate over its own
    /// exposure a percentage, `pause` ms; else the table's.
    pub(crate) fn unit_of(&self, measure: &str, figure: &Figure) -> Unit {
        match figure {
            Figure::Quantile { .. } => Unit::Ms,
            Figure::Rate {
                exposure: Some(_), ..
            } => Unit::Percent,
            Figure::Rate { .. } if measure == "pause" => Unit::Ms,
            Figure::Rate { .. } => self.unit,
        }
    }

    fn put(&mut self, name: impl Into<String>, measure: &'static str, f: Figure) {
        let key = (name.into(), measure);
        if self.rows.insert(key.clone(), f).is_none() {
            self.order.push(key);
        }
    }
}

/// One trace as the diff reads it.
#[derive(Clone, Debug)]
pub(crate) struct Measures {
    /// The analysed window, seconds.
    pub(crate) seconds: f64,
    /// Requests the app finished.
    pub(crate) requests: u64,
    /// Its tables, in the diff's order.
    pub(crate) tables: Vec<Table>,
}

/// Reads `a`'s figures.
pub(crate) fn measure(a: &Analysis) -> Measures {
    let requests = a.model::<RequestModel>();
    let mut tables = time_tables(a);
    tables.extend(alloc_tables(a));
    tables.extend(exception_tables(a));
    tables.push(contention_table(a));
    tables.push(gc_table(a));
    tables.push(route_table(requests));
    tables.push(http_table(a.model::<HttpModel>()));
    Measures {
        seconds: a.window_ns().max(0) as f64 / 1e9,
        requests: requests.map_or(0, |m| m.finished),
        tables,
    }
}

/// CPU and waiting time by method, exclusive and inclusive: ms, with the samples behind them.
fn time_tables(a: &Analysis) -> Vec<Table> {
    let profile = a.profile(&StackFilter::default());
    let ms_per = a.sampling_interval_ns as f64 / 1e6;
    let mut out = Vec::new();
    for (metric, class, ids) in [
        (
            Metric::Cpu,
            Class::Cpu,
            [
                ("cpu.exclusive", "CPU by method, exclusive"),
                ("cpu.inclusive", "CPU by method, inclusive"),
            ],
        ),
        (
            Metric::Wait,
            Class::Wait,
            [
                ("wait.exclusive", "Waiting by method, exclusive"),
                ("wait.inclusive", "Waiting by method, inclusive"),
            ],
        ),
    ] {
        let total = profile.total(metric) * ms_per;
        let (excl, incl) = profile.top(metric, &a.symbols);
        let (excl_n, incl_n) = profile.top_samples(metric, &a.symbols);
        for ((id, title), ranked, samples, inclusive) in
            [(ids[0], excl, excl_n, false), (ids[1], incl, incl_n, true)]
        {
            let samples: FxHashMap<String, f64> = samples.into_iter().collect();
            let mut t = Table::new(id, title, "method", Unit::Ms, class);
            t.total = Some(total);
            if inclusive {
                t.unjudged = |_| true;
            }
            for (name, w) in ranked {
                let n = samples.get(&name).copied().unwrap_or(0.0);
                t.put(name, "", Figure::rate(w * ms_per, n));
            }
            out.push(t);
        }
    }
    out
}

/// What an allocation row without a frame of the app's starts with.
const FRAMEWORK: &str = "[framework] ";

/// Allocated bytes by type and by allocating method (the first of the app's frames; else
/// `[framework] ` and the first managed frame), from the allocation ticks.
fn alloc_tables(a: &Analysis) -> [Table; 2] {
    let total = Some(a.alloc.total_bytes as f64);
    let mut types = Table::new(
        "alloc.types",
        "Allocations by type",
        "type",
        Unit::Bytes,
        Class::Alloc,
    );
    types.total = total;
    for (&(t, _heap), v) in &a.alloc.by_type {
        add(
            &mut types,
            a.alloc.type_name(t),
            v.bytes as f64,
            v.count as f64,
        );
    }
    let mut methods = Table::new(
        "alloc.methods",
        "Allocations by the app's allocating method",
        "method",
        Unit::Bytes,
        Class::Alloc,
    );
    methods.total = total;
    methods.unjudged = |name| name.starts_with(FRAMEWORK);
    let app = a.symbols.app_code();
    let is_app = |f: &str| {
        if app.is_empty() {
            // No module events: the app's code is what is not the runtime's or a framework's.
            !(f.starts_with('[')
                || f.starts_with("System.")
                || f.starts_with("Microsoft.")
                || f.starts_with("Interop")
                || f.starts_with("dynamicClass"))
        } else {
            app.contains(f)
        }
    };
    for (&(_, _, stack), &(count, bytes)) in &a.alloc.by_stack {
        let frames = a.frames(stack);
        let name = match frames.iter().find(|f| is_app(f)) {
            Some(f) => f.clone(),
            None => format!("{FRAMEWORK}{}", first_managed(&frames)),
        };
        add(&mut methods, &name, bytes as f64, count as f64);
    }
    [types, methods]
}

/// Adds to a rate row.
fn add(t: &mut Table, name: &str, value: f64, count: f64) {
    match t.rows.get_mut(&(name.to_string(), "")) {
        Some(Figure::Rate {
            value: v, count: c, ..
        }) => {
            *v += value;
            *c += count;
        }
        _ => t.put(name, "", Figure::rate(value, count)),
    }
}

/// Exceptions by type, and their original throws by throw site (rethrows left out).
fn exception_tables(a: &Analysis) -> [Table; 2] {
    let total = Some(a.exceptions.total as f64);
    let mut types = Table::new(
        "exceptions.types",
        "Exceptions by type",
        "type",
        Unit::Count,
        Class::Exceptions,
    );
    types.total = total;
    let mut sites = Table::new(
        "exceptions.sites",
        "Exceptions by throw site (original throws)",
        "site",
        Unit::Count,
        Class::Exceptions,
    );
    sites.total = total;
    for (name, t) in &a.exceptions.types {
        add(&mut types, name, t.count as f64, t.count as f64);
        for (&s, &c) in &t.stacks {
            let frames = a.frames(s);
            let rethrows = if rethrow_helper(&frames).is_some() {
                c
            } else {
                t.flagged.get(&s).copied().unwrap_or(0).min(c)
            };
            if c > rethrows {
                let site = throw_site(&frames).unwrap_or("[no stack]");
                let n = (c - rethrows) as f64;
                add(&mut sites, &format!("{name} at {site}"), n, n);
            }
        }
    }
    [types, sites]
}

/// Lock waits by the method that waited: ms, counted in waits (of unknown lengths: each
/// counts as half a wait, as if their lengths were spread like an exponential's).
fn contention_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "contention.sites",
        "Lock waits by waiting method",
        "method",
        Unit::Ms,
        Class::Contention,
    );
    t.total = Some(a.contention.total_ns / 1e6);
    for (&(_, stack), &(count, ns)) in &a.contention.by_stack {
        add(
            &mut t,
            &waiter(&a.frames(stack)),
            ns / 1e6,
            count as f64 / 2.0,
        );
    }
    t
}

/// The GCs: how many (all, per generation, induced), their pauses, and the time paused.
fn gc_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        "gc",
        "Garbage collections",
        "measure",
        Unit::Count,
        Class::Gc,
    );
    let gcs = &a.gc.gcs;
    let count = |keep: &dyn Fn(&clrspy_analysis::gc::GcRow) -> bool| {
        let n = gcs.iter().filter(|g| keep(g)).count() as f64;
        Figure::rate(n, n)
    };
    t.put("all", "count", count(&|_| true));
    for (g, name) in ["gen0", "gen1", "gen2"].into_iter().enumerate() {
        t.put(name, "count", count(&|r| r.generation == g as u64));
    }
    t.put("induced", "count", count(&|r| r.reason.is_induced()));
    let pause: f64 = gcs.iter().map(|g| g.pause_ms).sum();
    let eff = super::stats::effective_count(gcs.iter().map(|g| g.pause_ms));
    t.put("all", "pause", Figure::rate(pause, eff));
    let window_ms = a.window_ns().max(0) as f64 / 1e6;
    t.put(
        "all",
        "time paused",
        Figure::Rate {
            value: pause,
            count: eff,
            exposure: Some(window_ms),
        },
    );
    t
}

/// Requests by route: how many per unit of work, p50, p95, p99 and the share that failed
/// (5xx).
fn route_table(m: Option<&RequestModel>) -> Table {
    let mut t = Table::new(
        "requests.routes",
        "Requests by route",
        "route",
        Unit::Count,
        Class::Requests,
    );
    t.classes = &[
        ("p50", Class::P50),
        ("p95", Class::P95),
        ("p99", Class::P99),
        ("errors", Class::Errors),
    ];
    let Some(m) = m else { return t };
    for r in m.routes.values() {
        let name = format!("{} {}", r.method, r.route);
        let n = r.durations.count() as f64;
        t.put(name.clone(), "count", Figure::rate(n, n));
        quantiles(&mut t, &name, &r.durations);
        t.put(
            name,
            "errors",
            Figure::Rate {
                value: r.errors as f64,
                count: r.errors as f64,
                exposure: Some(n),
            },
        );
    }
    t
}

/// The p50, p95 and p99 rows of `name`.
fn quantiles(t: &mut Table, name: &str, s: &Sketch) {
    for (measure, q) in [("p50", 0.50), ("p95", 0.95), ("p99", 0.99)] {
        t.put(
            name,
            measure,
            Figure::Quantile {
                sketch: s.clone(),
                q,
            },
        );
    }
}

/// Outgoing HTTP by host: calls per unit of work, p50, p95, p99, the share that failed, and
/// new connections per unit of work.
fn http_table(m: Option<&HttpModel>) -> Table {
    let mut t = Table::new(
        "http.hosts",
        "Outgoing HTTP by host",
        "host",
        Unit::Count,
        Class::Http,
    );
    t.classes = &[
        ("p50", Class::P50),
        ("p95", Class::P95),
        ("p99", Class::P99),
        ("errors", Class::Errors),
    ];
    let Some(m) = m else { return t };
    for (host, c) in &m.hosts {
        let n = c.duration.count() as f64;
        t.put(host.clone(), "calls", Figure::rate(n, n));
        quantiles(&mut t, host, &c.duration);
        let errors: u64 = c.errors.values().map(|e| e.count).sum();
        t.put(
            host.clone(),
            "errors",
            Figure::Rate {
                value: errors as f64,
                count: errors as f64,
                exposure: Some(n),
            },
        );
        let fresh = c.new_connections as f64;
        t.put(host.clone(), "new connections", Figure::rate(fresh, fresh));
    }
    t
}
