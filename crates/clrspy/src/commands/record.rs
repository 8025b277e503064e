//! `clrspy record`: an EventPipe trace from a running process, streamed to disk.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clrspy_collect::{record, StopReason, StopSignal};
use diagnostics_client::{find_endpoints, Endpoint, Provider, SessionConfig};

use crate::cli::RecordArgs;
use crate::output::{CliError, CliResult};

/// Named profiles: what each enables.
pub const PROFILES: &[(&str, &str, &str)] = &[
    (
        "cpu",
        "CPU samples every 1 ms plus the runtime's common events (GC, JIT, loader, exceptions)",
        "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4",
    ),
    (
        "gc-collect",
        "GC events only, low overhead",
        "Microsoft-Windows-DotNETRuntime:0x1:4",
    ),
    (
        "gc-verbose",
        "GC events with allocation ticks (every ~100 KB allocated)",
        "Microsoft-Windows-DotNETRuntime:0x1:5",
    ),
    (
        "exceptions",
        "exceptions with their stacks",
        "Microsoft-Windows-DotNETRuntime:0x8000:4",
    ),
    (
        "dotnet-common",
        "the runtime's common events (GC, JIT, loader, exceptions), no samples",
        "Microsoft-Windows-DotNETRuntime:0x14C14FCCBD:4",
    ),
];

/// Parses one `Name[:Keywords[:Level[:Key=Value;...]]]` provider spec.
pub fn parse_provider(spec: &str) -> Result<Provider, String> {
    let mut parts = spec.splitn(4, ':');
    let name = parts.next().unwrap_or_default().trim();
    if name.is_empty() {
        return Err(format!("provider spec '{spec}' has no provider name"));
    }
    let keywords = match parts.next().map(str::trim) {
        None | Some("") | Some("*") => u64::MAX,
        Some(k) => {
            let hex = k
                .strip_prefix("0x")
                .or_else(|| k.strip_prefix("0X"))
                .unwrap_or(k);
            u64::from_str_radix(hex, 16)
                .map_err(|_| format!("keywords '{k}' in '{spec}' are not a hex number"))?
        }
    };
    let level = match parts.next().map(str::trim) {
        None | Some("") => 5,
        Some(l) => match l.to_ascii_lowercase().as_str() {
            "logalways" => 0,
            "critical" => 1,
            "error" => 2,
            "warning" => 3,
            "informational" => 4,
            "verbose" => 5,
            n => n
                .parse()
                .ok()
                .filter(|v: &u32| *v <= 5)
                .ok_or_else(|| format!("level '{l}' in '{spec}' is not 0-5 or a level name"))?,
        },
    };
    let arguments = parts
        .next()
        .map(|a| a.to_string())
        .filter(|a| !a.is_empty());
    Ok(Provider {
        name: name.to_string(),
        keywords,
        level,
        arguments,
    })
}

/// Parses "5s", "250ms", "2m", "1h" or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mul) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a duration (try 5s, 250ms, 2m)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("duration '{s}' must be positive"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

fn target(args: &RecordArgs) -> CliResult<(Endpoint, String)> {
    if let Some(pid) = args.process_id {
        return Ok((super::endpoint_for_pid(pid)?, format!("pid {pid}")));
    }
    let endpoints = find_endpoints();
    let name = args.name.as_deref().unwrap_or_default();
    let timeout = Duration::from_millis(1500);
    let matches: Vec<(Endpoint, String)> = endpoints
        .into_iter()
        .filter_map(|ep| {
            let info = diagnostics_client::process_info(&ep, timeout).ok()?;
            let n = info.entrypoint_assembly.unwrap_or_default();
            let comm =
                std::fs::read_to_string(format!("/proc/{}/comm", ep.pid)).unwrap_or_default();
            (n.eq_ignore_ascii_case(name) || comm.trim().eq_ignore_ascii_case(name))
                .then_some((ep, n))
        })
        .collect();
    match matches.len() {
        0 => Err(CliError::new(format!("no .NET process named '{name}'"))
            .hint("`clrspy ps` lists the .NET processes and their names")),
        1 => {
            let (ep, n) = matches
                .into_iter()
                .next()
                .ok_or_else(|| CliError::new("no match"))?;
            let label = format!("{n} (pid {})", ep.pid);
            Ok((ep, label))
        }
        k => Err(CliError::new(format!(
            "{k} .NET processes are named '{name}': {}",
            matches
                .iter()
                .map(|(e, _)| e.pid.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .hint("pick one with -p PID")),
    }
}

fn default_output(label: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    // yyyyMMdd_HHmmss in UTC
    let iso = nettrace::format_unix_ns(now);
    let stamp: String = iso
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '_' } else { c })
        .collect();
    let base: String = label
        .split_whitespace()
        .next()
        .unwrap_or("trace")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.')
        .collect();
    PathBuf::from(format!(
        "{}_{stamp}.nettrace",
        if base.is_empty() { "trace" } else { &base }
    ))
}

/// Runs `clrspy record`.
pub fn run(args: &RecordArgs) -> CliResult<std::process::ExitCode> {
    if args.list_profiles {
        for (name, what, providers) in PROFILES {
            println!("{name:<14} {what}\n{:<14} {providers}", "");
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let mut providers = Vec::new();
    let profile = args.profile.as_deref().or(if args.providers.is_none() {
        Some("cpu")
    } else {
        None
    });
    if let Some(p) = profile {
        let (_, _, spec) = PROFILES
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(p))
            .ok_or_else(|| {
                CliError::new(format!("unknown profile '{p}'"))
                    .hint("`clrspy record --list-profiles` lists them")
            })?;
        for s in spec.split(',') {
            providers.push(parse_provider(s).map_err(CliError::new)?);
        }
    }
    if let Some(list) = &args.providers {
        for s in list.split(',').filter(|s| !s.trim().is_empty()) {
            let p = parse_provider(s).map_err(|e| CliError::new(e).code(2))?;
            // A provider given explicitly replaces the profile's entry of the same name.
            providers.retain(|q: &Provider| !q.name.eq_ignore_ascii_case(&p.name));
            providers.push(p);
        }
    }
    let duration = args
        .duration
        .as_deref()
        .map(parse_duration)
        .transpose()
        .map_err(|e| CliError::new(e).code(2))?;
    let (endpoint, label) = target(args)?;
    let out = args
        .output
        .clone()
        .unwrap_or_else(|| default_output(&label));
    let config = SessionConfig {
        circular_buffer_mb: args.buffer_size,
        request_rundown: !args.no_rundown,
        providers,
    };
    // Ctrl+C, SIGTERM and SIGHUP count as stop requests (the second one stops waiting for the
    // rundown). The handler lives as long as the process, so the signal is a static.
    static STOP: StopSignal = StopSignal::new();
    let stop = &STOP;
    let _ = ctrlc::set_handler(|| STOP.request());
    let terminal = std::io::stderr().is_terminal();
    eprintln!(
        "Recording {label} to {}{}; press Ctrl+C to stop",
        out.display(),
        duration
            .map(|d| format!(" for {:.1} s", d.as_secs_f64()))
            .unwrap_or_default(),
    );
    let mut last = std::time::Instant::now();
    let mut progress = |elapsed: Duration, bytes: u64| {
        if terminal && last.elapsed() >= Duration::from_millis(250) {
            last = std::time::Instant::now();
            eprint!("\r  {:>7.1} s  {:>10} bytes", elapsed.as_secs_f64(), bytes);
        }
    };
    let summary = record(&endpoint, &config, &out, duration, stop, &mut progress).map_err(|e| {
        let msg = e.to_string();
        let err = CliError::new(msg.clone());
        if msg.contains("Permission denied") {
            err.hint("run clrspy as the same user as the target process, or as root")
        } else {
            err
        }
    })?;
    if terminal {
        eprintln!();
    }
    let why = match summary.reason {
        StopReason::Duration => "the duration passed",
        StopReason::Requested => "stopped on request",
        StopReason::TargetEnded => "the target ended the session",
    };
    eprintln!(
        "Wrote {} bytes to {} in {:.1} s ({why}).",
        summary.bytes,
        summary.path.display(),
        summary.elapsed.as_secs_f64()
    );
    if !summary.complete {
        eprintln!("The trace was cut short: it has no rundown, so methods jitted before the recording may be unnamed. `clrspy info` reads what it holds.");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_specs() {
        let p = parse_provider("Microsoft-Windows-DotNETRuntime:0x1:4").unwrap();
        assert_eq!((p.keywords, p.level), (1, 4));
        let p = parse_provider("My-Source").unwrap();
        assert_eq!((p.keywords, p.level), (u64::MAX, 5));
        let p = parse_provider("A:ff:Verbose:Key=V;K2=W").unwrap();
        assert_eq!(
            (p.keywords, p.level, p.arguments.as_deref()),
            (0xff, 5, Some("Key=V;K2=W"))
        );
        assert!(parse_provider(":1:2").is_err());
        assert!(parse_provider("A:zz").is_err());
        assert!(parse_provider("A:1:9").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("-1").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
