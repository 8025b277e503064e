//! Walks every event header and stack address of a trace and prints throughput: the reader's
//! raw speed. Usage: `cargo run --release --example walk -- TRACE`.
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: walk TRACE");
        std::process::exit(2);
    };
    let file = match nettrace::TraceFile::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let start = Instant::now();
    let mut r = match file.reader() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let (mut events, mut frames, mut sum) = (0u64, 0u64, 0u64);
    let walk_stacks = std::env::var_os("NOSTACK").is_none();
    let res = r.for_each_event(|e| {
        events += 1;
        sum = sum.wrapping_add(e.timestamp as u64 ^ e.thread_id);
        if walk_stacks {
            frames += e.stack.len() as u64;
            sum = e.stack.ips().fold(sum, u64::wrapping_add);
        } else {
            frames += e.stack.len() as u64;
        }
        true
    });
    let s = start.elapsed().as_secs_f64();
    let mb = file.bytes().len() as f64 / 1e6;
    println!(
        "{events} events, {frames} frames in {s:.3} s: {:.0} MB/s, {:.1} M events/s (checksum {sum:x}){}",
        mb / s,
        events as f64 / s / 1e6,
        res.err().map(|e| format!(", stopped: {e}")).unwrap_or_default()
    );
}
