//! Prints event counts per (provider, event id, version) for a trace: a quick way to inspect
//! what a trace holds. Usage: `cargo run --example count -- TRACE`.
use std::collections::BTreeMap;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: count TRACE");
        std::process::exit(2);
    };
    let file = match nettrace::TraceFile::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut reader = match file.reader() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut counts: BTreeMap<(String, u32, u8), u64> = BTreeMap::new();
    let result = reader.for_each_event(|ev| {
        *counts
            .entry((ev.provider().to_string(), ev.event_id(), ev.version()))
            .or_default() += 1;
        true
    });
    println!("{:?}", reader.header());
    for ((p, id, v), n) in &counts {
        println!("{n:>8} {p}/{id} v{v}");
    }
    println!("{:?}", reader.stats());
    if let Err(e) = result {
        println!("stopped: {e}");
    }
}
