//! pprof's profile.proto, gzip-compressed — what `go tool pprof`, Grafana Pyroscope, Parca and
//! speedscope read. Written with a small protobuf encoder of our own.
//!
//! What the file holds (field numbers of `perftools.profiles.Profile`):
//!
//! | field | content |
//! |---|---|
//! | `sample_type` (1) | CPU: `samples/count`, `cpu/nanoseconds`; waiting: `samples/count`, `wait/nanoseconds`; allocations: `alloc_objects/count` (allocation ticks), `alloc_space/bytes` |
//! | `sample` (2) | one per distinct (thread, stack): location ids **leaf first**, the two values, and for time metrics a `thread` label (string: the thread's name and id) |
//! | `location` (4) | one per distinct frame name, id 1.., one `line` pointing at its function |
//! | `function` (5) | one per distinct frame name, same id as its location; `name` = `system_name` = the frame name, `filename` = the module for native frames (`libcoreclr.so!+0x…`), else "" |
//! | `string_table` (6) | index 0 is "" |
//! | `time_nanos` (9) | the session start, ns since the Unix epoch, when known |
//! | `duration_nanos` (10) | first to last event |
//! | `period_type` (11), `period` (12) | time metrics: `cpu`/`wait` `nanoseconds`, the sampling interval; allocations: `space/bytes`, 0 |
//!
//! Time values are the weights of [`weighted_stacks`] (fractional samples where clrspy measured
//! the thread's CPU time) in nanoseconds; the sample count is that time over the interval,
//! rounded.

use std::io::{self, Write};
use std::sync::Arc;

use clrspy_analysis::{Analysis, StackFilter};
use flate2::write::GzEncoder;
use flate2::Compression;
use rustc_hash::FxHashMap;

use crate::{thread_label, weighted_stacks, Metric, WeightedStack};

/// What a profile holds besides the stacks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    /// Which stacks (thread, focus, exclusions).
    pub filter: StackFilter,
    /// The session start, ns since the Unix epoch (`time_nanos`); left out when `None`.
    pub start_unix_ns: Option<i64>,
}

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

    /// An int64/uint64 field; proto3 leaves zeros out.
    fn int(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            // Negative int64 values are their two's complement, ten bytes long.
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

    /// A packed repeated int64/uint64 field.
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

/// The string table; index 0 is "".
struct Strings {
    index: FxHashMap<String, i64>,
    list: Vec<String>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings {
            index: FxHashMap::default(),
            list: Vec::new(),
        };
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

/// The module of a native frame (`libcoreclr.so!+0x1f2e` → `libcoreclr.so`), else "".
fn module_of(frame: &str) -> &str {
    match frame.find("!+0x") {
        Some(i) if !frame.starts_with('[') => &frame[..i],
        _ => "",
    }
}

/// Everything the encoder needs, taken from the analysis.
struct Input<'a> {
    metric: Metric,
    stacks: &'a [WeightedStack],
    /// Allocation ticks per stack (root first, type leaf included), for `alloc_objects`.
    alloc_counts: FxHashMap<Vec<Arc<str>>, u64>,
    interval_ns: u64,
    duration_ns: i64,
    start_unix_ns: Option<i64>,
    label: &'a dyn Fn(u64) -> String,
}

/// Encodes one profile (uncompressed).
fn encode_input(input: &Input) -> Vec<u8> {
    let mut strings = Strings::new();
    let mut p = Msg::default();
    let (types, period_type, period) = match input.metric {
        Metric::Cpu => (
            [("samples", "count"), ("cpu", "nanoseconds")],
            ("cpu", "nanoseconds"),
            input.interval_ns as i64,
        ),
        Metric::Wait => (
            [("samples", "count"), ("wait", "nanoseconds")],
            ("wait", "nanoseconds"),
            input.interval_ns as i64,
        ),
        Metric::Alloc => (
            [("alloc_objects", "count"), ("alloc_space", "bytes")],
            ("space", "bytes"),
            0,
        ),
    };
    for (ty, unit) in types {
        p.msg(1, &value_type(&mut strings, ty, unit));
    }
    let mut location_of: FxHashMap<&str, i64> = FxHashMap::default();
    let mut functions = Vec::new();
    let mut locations = Vec::new();
    let interval = input.interval_ns.max(1) as f64;
    let thread_key = strings.get("thread");
    let mut thread_names: FxHashMap<u64, i64> = FxHashMap::default();
    for s in input.stacks {
        // pprof lists a sample's locations leaf first; our frames are root first.
        let mut ids: Vec<i64> = Vec::with_capacity(s.frames.len());
        for f in s.frames.iter().rev() {
            let next = location_of.len() as i64 + 1;
            let id = *location_of.entry(&**f).or_insert_with(|| {
                let name = strings.get(f);
                let file = strings.get(module_of(f));
                let mut func = Msg::default();
                func.int(1, next);
                func.int(2, name);
                func.int(3, name);
                func.int(4, file);
                functions.push(func);
                let mut line = Msg::default();
                line.int(1, next);
                let mut loc = Msg::default();
                loc.int(1, next);
                loc.msg(4, &line);
                locations.push(loc);
                next
            });
            ids.push(id);
        }
        let values = match input.metric {
            Metric::Cpu | Metric::Wait => {
                let ns = s.weight * 1e6;
                [(ns / interval).round() as i64, ns.round() as i64]
            }
            Metric::Alloc => [
                input.alloc_counts.get(&s.frames).copied().unwrap_or(1) as i64,
                s.weight.round() as i64,
            ],
        };
        let mut sample = Msg::default();
        sample.packed(1, &ids);
        sample.packed(2, &values);
        if input.metric != Metric::Alloc {
            let name = *thread_names
                .entry(s.thread)
                .or_insert_with(|| strings.get(&(input.label)(s.thread)));
            let mut label = Msg::default();
            label.int(1, thread_key);
            label.int(2, name);
            sample.msg(3, &label);
        }
        p.msg(2, &sample);
    }
    // The period type's names go into the string table before the table is written.
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
    if let Some(t) = input.start_unix_ns {
        p.int(9, t);
    }
    p.int(10, input.duration_ns);
    p.msg(11, &pt);
    p.int(12, period);
    p.0
}

/// Allocation ticks per stack, keyed like [`weighted_stacks`]' allocation rows.
fn alloc_counts(a: &Analysis, filter: &StackFilter) -> FxHashMap<Vec<Arc<str>>, u64> {
    let mut counts: FxHashMap<Vec<Arc<str>>, u64> = FxHashMap::default();
    let group = filter
        .just_my_code
        .as_ref()
        .map(|g| g.for_symbols(&a.symbols));
    let entries: Vec<_> = a.alloc.by_stack.iter().map(|(k, v)| (*k, *v)).collect();
    for ((t, _, stack), (count, _)) in entries {
        let mut frames = a.frames(stack);
        frames.reverse();
        if let Some(g) = &group {
            frames = g.fold_names(frames);
        }
        frames.push(format!("[type] {}", a.alloc.type_name(t)));
        *counts
            .entry(frames.into_iter().map(Arc::from).collect())
            .or_default() += count;
    }
    counts
}

/// The uncompressed profile.proto bytes of `metric`.
pub(crate) fn encode(a: &Analysis, metric: Metric, options: &Options) -> Vec<u8> {
    let stacks = weighted_stacks(a, metric, &options.filter);
    let alloc_counts = if metric == Metric::Alloc {
        alloc_counts(a, &options.filter)
    } else {
        FxHashMap::default()
    };
    let label = |t: u64| thread_label(a, t);
    encode_input(&Input {
        metric,
        stacks: &stacks,
        alloc_counts,
        interval_ns: a.sampling_interval_ns,
        duration_ns: a.duration_ns,
        start_unix_ns: options.start_unix_ns,
        label: &label,
    })
}

/// Writes the gzip-compressed profile of `metric`, all threads, no start time.
#[cfg(test)]
fn write(a: &Analysis, metric: Metric, out: &mut dyn Write) -> io::Result<()> {
    write_with(a, metric, &Options::default(), out)
}

/// Writes the gzip-compressed profile of `metric` with `options`.
pub(crate) fn write_with(
    a: &Analysis,
    metric: Metric,
    options: &Options,
    out: &mut dyn Write,
) -> io::Result<()> {
    let bytes = encode(a, metric, options);
    let mut gz = GzEncoder::new(out, Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A field of a decoded message.
    #[derive(Clone, Debug, PartialEq)]
    enum Val {
        Int(u64),
        Bytes(Vec<u8>),
    }

    fn read_varint(b: &[u8], pos: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[*pos];
            *pos += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return v;
            }
            shift += 7;
            assert!(shift < 70, "varint too long");
        }
    }

    /// Every (field, value) of a message, in order (only wire types 0 and 2 are expected).
    fn fields(b: &[u8]) -> Vec<(u32, Val)> {
        let mut pos = 0;
        let mut out = Vec::new();
        while pos < b.len() {
            let key = read_varint(b, &mut pos);
            let (field, wire) = ((key >> 3) as u32, key & 7);
            match wire {
                0 => out.push((field, Val::Int(read_varint(b, &mut pos)))),
                2 => {
                    let n = read_varint(b, &mut pos) as usize;
                    out.push((field, Val::Bytes(b[pos..pos + n].to_vec())));
                    pos += n;
                }
                w => panic!("unexpected wire type {w} for field {field}"),
            }
        }
        out
    }

    fn ints(m: &[(u32, Val)], field: u32) -> Vec<u64> {
        m.iter()
            .filter(|(f, _)| *f == field)
            .map(|(_, v)| match v {
                Val::Int(i) => *i,
                v => panic!("field {field} is not an int: {v:?}"),
            })
            .collect()
    }

    fn int(m: &[(u32, Val)], field: u32) -> u64 {
        ints(m, field).first().copied().unwrap_or(0)
    }

    fn msgs(m: &[(u32, Val)], field: u32) -> Vec<Vec<(u32, Val)>> {
        m.iter()
            .filter(|(f, _)| *f == field)
            .map(|(_, v)| match v {
                Val::Bytes(b) => fields(b),
                v => panic!("field {field} is not a message: {v:?}"),
            })
            .collect()
    }

    fn packed(m: &[(u32, Val)], field: u32) -> Vec<u64> {
        let mut out = Vec::new();
        for (f, v) in m {
            if *f != field {
                continue;
            }
            match v {
                Val::Bytes(b) => {
                    let mut pos = 0;
                    while pos < b.len() {
                        out.push(read_varint(b, &mut pos));
                    }
                }
                Val::Int(i) => out.push(*i),
            }
        }
        out
    }

    /// A decoded profile: the raw fields plus the string table and location → name map.
    struct Decoded {
        top: Vec<(u32, Val)>,
        strings: Vec<String>,
        /// Location id → function name.
        names: FxHashMap<u64, String>,
        /// Function id → filename.
        files: FxHashMap<u64, String>,
    }

    impl Decoded {
        fn new(bytes: &[u8]) -> Decoded {
            let top = fields(bytes);
            let strings: Vec<String> = top
                .iter()
                .filter(|(f, _)| *f == 6)
                .map(|(_, v)| match v {
                    Val::Bytes(b) => String::from_utf8(b.clone()).unwrap(),
                    v => panic!("string is not bytes: {v:?}"),
                })
                .collect();
            let mut fname = FxHashMap::default();
            let mut files = FxHashMap::default();
            for f in msgs(&top, 5) {
                assert_eq!(int(&f, 2), int(&f, 3), "name and system_name");
                fname.insert(int(&f, 1), strings[int(&f, 2) as usize].clone());
                files.insert(int(&f, 1), strings[int(&f, 4) as usize].clone());
            }
            let mut names = FxHashMap::default();
            for l in msgs(&top, 4) {
                let lines = msgs(&l, 4);
                assert_eq!(lines.len(), 1);
                names.insert(int(&l, 1), fname[&int(&lines[0], 1)].clone());
            }
            Decoded {
                top,
                strings,
                names,
                files,
            }
        }

        fn s(&self, i: u64) -> &str {
            &self.strings[i as usize]
        }

        fn value_types(&self, field: u32) -> Vec<String> {
            msgs(&self.top, field)
                .iter()
                .map(|t| format!("{}/{}", self.s(int(t, 1)), self.s(int(t, 2))))
                .collect()
        }

        /// (leaf-first names, values, thread label) per sample.
        fn samples(&self) -> Vec<(Vec<String>, Vec<u64>, Option<String>)> {
            msgs(&self.top, 2)
                .iter()
                .map(|s| {
                    let names = packed(s, 1)
                        .iter()
                        .map(|id| self.names[id].clone())
                        .collect();
                    let labels = msgs(s, 3);
                    let thread = labels.first().map(|l| {
                        assert_eq!(self.s(int(l, 1)), "thread");
                        self.s(int(l, 2)).to_string()
                    });
                    (names, packed(s, 2), thread)
                })
                .collect()
        }
    }

    fn stack(thread: u64, frames: &[&str], weight: f64) -> WeightedStack {
        WeightedStack {
            thread,
            frames: frames.iter().map(|s| Arc::from(*s)).collect(),
            weight,
        }
    }

    fn input<'a>(
        metric: Metric,
        stacks: &'a [WeightedStack],
        label: &'a dyn Fn(u64) -> String,
    ) -> Input<'a> {
        Input {
            metric,
            stacks,
            alloc_counts: FxHashMap::default(),
            interval_ns: 1_000_000,
            duration_ns: 3_000_000_000,
            start_unix_ns: Some(1_763_800_000_000_000_000),
            label,
        }
    }

    #[test]
    fn varints_and_negative_ints() {
        let mut m = Msg::default();
        m.int(1, 300);
        m.int(2, 0);
        m.int(3, -1);
        assert_eq!(m.0[..3], [0x08, 0xac, 0x02]);
        // Field 2 (zero) is left out; -1 is ten bytes.
        assert_eq!(m.0[3], 0x18);
        assert_eq!(m.0.len(), 3 + 1 + 10);
        assert_eq!(
            fields(&m.0),
            vec![(1, Val::Int(300)), (3, Val::Int(u64::MAX))]
        );
    }

    #[test]
    fn cpu_profile() {
        let stacks = vec![
            stack(7, &["Main", "Work", "Burn"], 5.0),
            stack(8, &["Main", "Work"], 1.5),
            stack(7, &["Main", "libcoreclr.so!+0x1f2e"], 0.25),
        ];
        let label = |t: u64| format!("worker ({t})");
        let bytes = encode_input(&input(Metric::Cpu, &stacks, &label));
        let d = Decoded::new(&bytes);
        assert_eq!(d.strings[0], "");
        // Every string once.
        let mut sorted = d.strings.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), d.strings.len());
        assert_eq!(
            d.value_types(1),
            ["samples/count", "cpu/nanoseconds"].map(String::from)
        );
        assert_eq!(d.value_types(11), ["cpu/nanoseconds".to_string()]);
        assert_eq!(int(&d.top, 12), 1_000_000);
        assert_eq!(int(&d.top, 10), 3_000_000_000);
        assert_eq!(int(&d.top, 9), 1_763_800_000_000_000_000);
        // One location and one function per distinct frame, ids 1..
        assert_eq!(d.names.len(), 4);
        assert_eq!(msgs(&d.top, 5).len(), 4);
        let mut ids: Vec<u64> = d.names.keys().copied().collect();
        ids.sort();
        assert_eq!(ids, [1, 2, 3, 4]);
        let samples = d.samples();
        assert_eq!(samples.len(), 3);
        // Leaf first.
        assert_eq!(samples[0].0, ["Burn", "Work", "Main"]);
        assert_eq!(samples[0].1, [5, 5_000_000]);
        assert_eq!(samples[0].2.as_deref(), Some("worker (7)"));
        assert_eq!(samples[1].0, ["Work", "Main"]);
        assert_eq!(samples[1].1, [2, 1_500_000]);
        assert_eq!(samples[1].2.as_deref(), Some("worker (8)"));
        assert_eq!(samples[2].0, ["libcoreclr.so!+0x1f2e", "Main"]);
        assert_eq!(samples[2].1, [0, 250_000]);
        // The module of a native frame is its function's file.
        let native = d
            .names
            .iter()
            .find(|(_, n)| n.starts_with("libcoreclr"))
            .map(|(id, _)| *id)
            .unwrap();
        assert_eq!(d.files[&native], "libcoreclr.so");
        assert_eq!(d.files[&1], "");
    }

    #[test]
    fn wait_profile_types() {
        let stacks = vec![stack(3, &["Main", "Monitor.Wait"], 20.0)];
        let label = |t: u64| format!("thread {t}");
        let d = Decoded::new(&encode_input(&input(Metric::Wait, &stacks, &label)));
        assert_eq!(
            d.value_types(1),
            ["samples/count", "wait/nanoseconds"].map(String::from)
        );
        assert_eq!(d.value_types(11), ["wait/nanoseconds".to_string()]);
        assert_eq!(d.samples()[0].1, [20, 20_000_000]);
    }

    #[test]
    fn alloc_profile() {
        let stacks = vec![
            stack(0, &["Main", "Make", "[type] Thing"], 1_000_000.0),
            stack(0, &["Main", "[type] System.String"], 200_000.0),
        ];
        let label = |t: u64| format!("thread {t}");
        let mut inp = input(Metric::Alloc, &stacks, &label);
        inp.start_unix_ns = None;
        inp.alloc_counts.insert(stacks[0].frames.clone(), 10);
        let d = Decoded::new(&encode_input(&inp));
        assert_eq!(
            d.value_types(1),
            ["alloc_objects/count", "alloc_space/bytes"].map(String::from)
        );
        assert_eq!(int(&d.top, 12), 0);
        assert_eq!(int(&d.top, 9), 0);
        let samples = d.samples();
        assert_eq!(samples[0].0, ["[type] Thing", "Make", "Main"]);
        assert_eq!(samples[0].1, [10, 1_000_000]);
        assert_eq!(samples[0].2, None);
        // A stack with no tick count counts one.
        assert_eq!(samples[1].1, [1, 200_000]);
        // "Main" is shared: four distinct frames in five frame slots.
        assert_eq!(d.names.len(), 4);
    }

    #[test]
    fn written_gzip_decodes() {
        let header = nettrace::TraceHeader {
            format: nettrace::FormatVersion::NetTrace4,
            v6_minor: 0,
            trace_object_version: 4,
            sync_time_utc: Default::default(),
            sync_time_ticks: 0,
            ticks_per_second: 1_000_000_000,
            pointer_size: 8,
            process_id: None,
            cpu_count: None,
            sampling_interval_ns: Some(1_000_000),
            key_values: Vec::new(),
        };
        let a = Analysis::new(&header, Default::default());
        let mut out = Vec::new();
        write(&a, Metric::Cpu, &mut out).unwrap();
        assert_eq!(out[..2], [0x1f, 0x8b]);
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_end(&mut raw)
            .unwrap();
        let d = Decoded::new(&raw);
        assert_eq!(d.strings[0], "");
        assert_eq!(d.samples().len(), 0);
        assert_eq!(int(&d.top, 12), 1_000_000);
    }
}
