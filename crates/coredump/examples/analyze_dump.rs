//! Runs the worker's side in this process: `analyze_dump DUMP [--dac PATH] [--heap]` prints the
//! analysis as JSON (for trying a dump by hand; clrspy runs it in a child).

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(coredump::worker::worker_main(&args));
}
