//! Samples a process with the kernel sampler for a while and prints what it took: a bench
//! helper (`bench/switch_cost.sh`), since `clrspy record` needs a .NET target.
//!
//! `cargo run --release -p clrspy-sampler --example sample_pid -- PID SECONDS [waits|nowaits]`

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(pid), Some(secs)) = (
        args.get(1).and_then(|a| a.parse::<u32>().ok()),
        args.get(2).and_then(|a| a.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: sample_pid PID SECONDS [waits|nowaits]");
        std::process::exit(2);
    };
    let waits = args.get(3).map(String::as_str) != Some("nowaits");
    let mut sampler = match clrspy_sampler::Sampler::open_with(pid, 999, waits) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    let (mut samples, mut waits_out) = (Vec::new(), Vec::new());
    let (mut n_samples, mut n_waits) = (0usize, 0usize);
    while std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let _ = sampler.follow_threads();
        let _ = sampler.drain(&mut samples);
        n_samples += samples.len();
        samples.clear();
        n_waits += sampler.take_waits(&mut waits_out);
        waits_out.clear();
    }
    let c = sampler.counts();
    println!(
        "samples {n_samples} waits {n_waits} lost {} short_waits {}",
        c.lost, c.short_waits
    );
}
