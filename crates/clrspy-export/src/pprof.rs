//! pprof's profile.proto, gzip-compressed — what `go tool pprof`, Grafana Pyroscope and Parca
//! read. Written with a small protobuf encoder of our own: the string table (index 0 is ""),
//! one function and one location per distinct frame, and one sample per distinct (thread,
//! stack) with its location ids leaf first. Sample types: CPU and waiting time are
//! `[samples/count, cpu|wait/nanoseconds]` with the sampling interval as period; allocations
//! are `[alloc_objects/count, alloc_space/bytes]`, counting allocation ticks. Time samples carry a
//! `thread` label.

use std::io::{self, Write};

use clrspy_analysis::{Analysis, StackFilter};
use flate2::write::GzEncoder;
use flate2::Compression;
use rustc_hash::FxHashMap;

use crate::{thread_label, weighted_stacks, StackMetric};

/// A protobuf message being built.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn msg(&mut self, field: u32, m: &Msg) {
        self.bytes(field, &m.0);
    }

    fn packed(&mut self, field: u32, vals: &[i64]) {
        if vals.is_empty() {
            return;
        }
        let mut p = Msg::default();
        for &v in vals {
            p.varint(v as u64);
        }
        self.bytes(field, &p.0);
    }
}

/// The string table.
#[derive(Default)]
struct Strings {
    index: FxHashMap<String, i64>,
    list: Vec<String>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.list.len() as i64;
        self.list.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

fn value_type(strings: &mut Strings, ty: &str, unit: &str) -> Msg {
    let mut m = Msg::default();
    m.int(1, strings.get(ty));
    m.int(2, strings.get(unit));
    m
}

/// The uncompressed profile.proto bytes.
pub fn encode(a: &mut Analysis, metric: StackMetric) -> Vec<u8> {
    let stacks = weighted_stacks(a, metric, &StackFilter::default());
    let mut strings = Strings::new();
    let mut p = Msg::default();
    let (types, period_type, period) = match metric {
        StackMetric::Cpu => (
            ("samples", "count", "cpu", "nanoseconds"),
            ("cpu", "nanoseconds"),
            a.sampling_interval_ns as i64,
        ),
        StackMetric::Wait => (
            ("samples", "count", "wait", "nanoseconds"),
            ("wait", "nanoseconds"),
            a.sampling_interval_ns as i64,
        ),
        StackMetric::Alloc => (
            ("alloc_objects", "count", "alloc_space", "bytes"),
            ("space", "bytes"),
            0,
        ),
    };
    p.msg(1, &value_type(&mut strings, types.0, types.1));
    p.msg(1, &value_type(&mut strings, types.2, types.3));
    // Allocation tick counts per stack, for alloc_objects.
    let mut alloc_counts: FxHashMap<Vec<String>, u64> = FxHashMap::default();
    if metric == StackMetric::Alloc {
        let entries: Vec<_> = a.alloc.by_stack.iter().map(|(k, v)| (*k, *v)).collect();
        for ((t, _, stack), (count, _)) in entries {
            let mut frames = a.frames(stack);
            frames.reverse();
            frames.push(format!("[type] {}", a.alloc.type_name(t)));
            *alloc_counts.entry(frames).or_default() += count;
        }
    }
    let mut location_of: FxHashMap<String, u64> = FxHashMap::default();
    let mut functions = Vec::new();
    let mut locations = Vec::new();
    let interval = a.sampling_interval_ns.max(1) as f64;
    let thread_key = strings.get("thread");
    for s in &stacks {
        let mut ids: Vec<i64> = Vec::with_capacity(s.frames.len());
        // pprof lists a sample's locations leaf first.
        for f in s.frames.iter().rev() {
            let next = location_of.len() as u64 + 1;
            let id = *location_of.entry(f.clone()).or_insert_with(|| {
                let name = strings.get(f);
                let mut func = Msg::default();
                func.int(1, next as i64);
                func.int(2, name);
                func.int(3, name);
                functions.push(func);
                let mut line = Msg::default();
                line.int(1, next as i64);
                let mut loc = Msg::default();
                loc.int(1, next as i64);
                loc.msg(4, &line);
                locations.push(loc);
                next
            });
            ids.push(id as i64);
        }
        let values = match metric {
            StackMetric::Cpu | StackMetric::Wait => {
                let ns = s.weight * 1e6;
                [(ns / interval).round().max(1.0) as i64, ns.round() as i64]
            }
            StackMetric::Alloc => [
                alloc_counts.get(&s.frames).copied().unwrap_or(1) as i64,
                s.weight.round() as i64,
            ],
        };
        let mut sample = Msg::default();
        sample.packed(1, &ids);
        sample.packed(2, &values);
        if metric != StackMetric::Alloc {
            let mut label = Msg::default();
            label.int(1, thread_key);
            label.int(2, strings.get(&thread_label(a, s.thread)));
            sample.msg(3, &label);
        }
        p.msg(2, &sample);
    }
    // The period type's names go into the string table before it is written.
    let pt = value_type(&mut strings, period_type.0, period_type.1);
    for l in &locations {
        p.msg(4, l);
    }
    for f in &functions {
        p.msg(5, f);
    }
    for s in &strings.list {
        p.bytes(6, s.as_bytes());
    }
    p.int(10, a.duration_ns);
    p.msg(11, &pt);
    p.int(12, period);
    p.0
}

/// Writes the gzip-compressed profile.
pub fn write(a: &mut Analysis, metric: StackMetric, out: &mut dyn Write) -> io::Result<()> {
    let bytes = encode(a, metric);
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}
