//! Reader benchmarks for large traces, printed as one JSON object per run:
//!
//! - `readbench walk TRACE`: every event header and every stack address (memory-mapped file);
//! - `readbench stream TRACE`: the same through the incremental `io::Read` reader;
//! - `readbench decode TRACE`: the incremental walk plus decoding every payload (built-in
//!   layouts for runtime events, metadata for EventSource events);
//! - `readbench generate OUT --mb N [--format v5|v6] [--plain]`: writes a synthetic trace of about N MB
//!   (`--plain`: uncompressed event headers)
//!   shaped like a busy process (samples with deep stacks, allocation ticks, EventSource events
//!   on 16 threads).

use std::io::BufWriter;
use std::time::Instant;

use nettrace::{
    Event, EventMetadata, EventRecord, FieldDesc, FieldType, TraceFile, TraceWriter, WriteFormat,
    WriterOptions,
};

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    events: u64,
    frames: u64,
    ip_sum: u64,
    ts_sum: i64,
    fields: u64,
    decode_errors: u64,
}

impl Tally {
    #[inline]
    fn walk(&mut self, ev: &Event<'_>) {
        self.events += 1;
        self.ts_sum = self.ts_sum.wrapping_add(ev.timestamp);
        self.ip_sum = self.ip_sum.wrapping_add(ev.thread_id);
        self.frames += ev.stack.len() as u64;
        self.ip_sum = ev.stack.ips().fold(self.ip_sum, u64::wrapping_add);
    }

    fn decode(&mut self, ev: &Event<'_>, ps: u8) {
        self.walk(ev);
        if let Some(l) = clr_events::layout(ev.provider(), ev.event_id(), ev.version()) {
            let d = l.decode(ev.payload, ps);
            self.fields += d.fields.len() as u64;
            self.decode_errors += u64::from(d.error.is_some());
        } else if !ev.metadata.fields.is_empty() {
            let d = ev.decode_with_metadata();
            self.fields += d.fields.len() as u64;
            self.decode_errors += u64::from(d.error.is_some());
        }
    }
}

fn report(mode: &str, path: &str, bytes: u64, t: &Tally, secs: f64, err: Option<String>) {
    println!(
        "{{\"mode\":\"{mode}\",\"trace\":\"{path}\",\"bytes\":{bytes},\"events\":{},\"frames\":{},\"fields\":{},\"decode_errors\":{},\"seconds\":{secs:.4},\"mb_per_s\":{:.1},\"events_per_s\":{:.0},\"peak_rss_mb\":{:.1},\"anon_rss_mb\":{:.1},\"checksum\":{},\"error\":{}}}",
        t.events,
        t.frames,
        t.fields,
        t.decode_errors,
        bytes as f64 / 1e6 / secs,
        t.events as f64 / secs,
        status_kb("VmHWM:") as f64 / 1024.0,
        status_kb("RssAnon:") as f64 / 1024.0,
        t.ip_sum.wrapping_add(t.ts_sum as u64),
        err.map_or("null".to_string(), |e| format!("{e:?}")),
    );
}

fn run_read(mode: &str, path: &str) -> Result<(), String> {
    let bytes = std::fs::metadata(path)
        .map_err(|e| format!("{path}: {e}"))?
        .len();
    let mut t = Tally::default();
    let start = Instant::now();
    let err = if mode == "walk" {
        let file = TraceFile::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut r = file.reader().map_err(|e| format!("{path}: {e}"))?;
        r.for_each_event(|ev| {
            t.walk(ev);
            true
        })
        .err()
    } else {
        let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
        let mut r =
            nettrace::StreamReader::from_read(std::io::BufReader::with_capacity(1 << 20, f))
                .map_err(|e| format!("{path}: {e}"))?;
        let ps = r.header().pointer_size;
        let decode = mode == "decode";
        r.for_each_event(|ev| {
            if decode {
                t.decode(ev, ps);
            } else {
                t.walk(ev);
            }
            true
        })
        .err()
    };
    let secs = start.elapsed().as_secs_f64();
    report(mode, path, bytes, &t, secs, err.map(|e| e.to_string()));
    Ok(())
}

fn generate(out: &str, mb: u64, format: WriteFormat, plain: bool) -> Result<(), String> {
    let f = std::fs::File::create(out).map_err(|e| format!("{out}: {e}"))?;
    let opts = WriterOptions {
        format,
        compressed_headers: !plain,
        process_id: 4242,
        cpu_count: 16,
        ..WriterOptions::default()
    };
    let mut w =
        TraceWriter::new(BufWriter::with_capacity(1 << 20, f), opts).map_err(|e| e.to_string())?;
    let e = |e: std::io::Error| e.to_string();
    let sample = w
        .define(&EventMetadata {
            provider: "Microsoft-DotNETCore-SampleProfiler".into(),
            event_id: 0,
            event_name: "ThreadSample".into(),
            level: 4,
            ..Default::default()
        })
        .map_err(e)?;
    let alloc = w
        .define(&EventMetadata {
            provider: "Microsoft-Windows-DotNETRuntime".into(),
            event_id: 10,
            version: 4,
            level: 5,
            keywords: 1,
            ..Default::default()
        })
        .map_err(e)?;
    let tick = w
        .define(&EventMetadata {
            provider: "Clrspy-Workloads".into(),
            event_id: 1,
            event_name: "Tick".into(),
            level: 4,
            fields: vec![
                FieldDesc {
                    name: "iteration".into(),
                    ty: FieldType::I32,
                },
                FieldDesc {
                    name: "value".into(),
                    ty: FieldType::I64,
                },
                FieldDesc {
                    name: "text".into(),
                    ty: FieldType::String16,
                },
            ],
            ..Default::default()
        })
        .map_err(e)?;
    // A pool of stacks: 16 threads × 300 distinct stacks of depth 20-60.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let stacks: Vec<Vec<u64>> = (0..4800)
        .map(|i| {
            let depth = 20 + (i % 41);
            (0..depth)
                .map(|d| 0x7f00_0000_0000 + d as u64 * 0x1000 + (next() % 64) * 16)
                .collect()
        })
        .collect();
    let target = mb * 1_000_000;
    let mut ts = 0i64;
    let mut n = 0u64;
    let mut text = Vec::new();
    for u in "some workload text".encode_utf16() {
        text.extend_from_slice(&u.to_le_bytes());
    }
    text.extend_from_slice(&[0, 0]);
    let mut alloc_payload = vec![0u8; 90];
    loop {
        for _ in 0..10_000 {
            n += 1;
            ts += 1_000 + (next() % 500) as i64;
            let thread = 1000 + (n % 16);
            let stack = &stacks[(thread as usize % 16) * 300 + (next() % 300) as usize];
            let (id, payload): (u32, &[u8]) = match n % 10 {
                0 => {
                    alloc_payload[..8].copy_from_slice(&n.to_le_bytes());
                    (alloc, &alloc_payload)
                }
                1 | 2 => (tick, &text),
                _ => (sample, &[2, 0, 0, 0]),
            };
            w.write(&EventRecord {
                metadata_id: id,
                thread_id: thread,
                capture_thread_id: thread,
                processor: (n % 16) as u32,
                timestamp: ts,
                stack,
                payload,
                ..Default::default()
            })
            .map_err(e)?;
        }
        if std::fs::metadata(out).map(|m| m.len()).unwrap_or(0) >= target {
            break;
        }
    }
    w.finish().map_err(e)?;
    eprintln!("wrote {n} events to {out}");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let res = match args.get(1).map(String::as_str) {
        Some(m @ ("walk" | "stream" | "decode")) if args.len() == 3 => run_read(m, &args[2]),
        Some("generate") if args.len() >= 5 && args[3] == "--mb" => {
            let format = if args.get(5).map(String::as_str) == Some("--format")
                && args.get(6).map(String::as_str) == Some("v5")
            {
                WriteFormat::V5
            } else {
                WriteFormat::V6
            };
            let plain = args.iter().any(|a| a == "--plain");
            match args[4].parse() {
                Ok(mb) => generate(&args[2], mb, format, plain),
                Err(_) => Err("--mb takes a number".to_string()),
            }
        }
        _ => Err("usage: readbench walk|stream|decode TRACE | readbench generate OUT --mb N [--format v5|v6] [--plain]".into()),
    };
    if let Err(e) = res {
        eprintln!("readbench: {e}");
        std::process::exit(1);
    }
}
