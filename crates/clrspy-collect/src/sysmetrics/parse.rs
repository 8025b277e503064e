//! The pure readers of the /proc files the metrics sampler reads, one per file: text in,
//! counters out, nothing read from the machine here (so each is tested on real samples).

/// One CPU's times from a `cpu`/`cpuN` line of `/proc/stat`, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CpuTimes {
    /// Every tick counted (user, nice, system, idle, iowait, irq, softirq, steal; guest time
    /// is already inside user and nice, so it is not added again).
    pub(crate) total: u64,
    /// The ticks idle or waiting for I/O.
    pub(crate) idle: u64,
}

impl CpuTimes {
    /// % busy between an earlier reading and this one (0 when no tick passed).
    pub(crate) fn busy_pct_since(&self, before: &CpuTimes) -> f64 {
        let total = self.total.saturating_sub(before.total);
        let idle = self.idle.saturating_sub(before.idle);
        if total == 0 {
            return 0.0;
        }
        total.saturating_sub(idle) as f64 * 100.0 / total as f64
    }
}

/// Parses one `cpu`/`cpuN` line of `/proc/stat`: the core (`None` for the all-CPU line) and
/// its times; `None` for any other line.
pub(crate) fn parse_stat_cpu_line(line: &str) -> Option<(Option<usize>, CpuTimes)> {
    let mut f = line.split_whitespace();
    let label = f.next()?.strip_prefix("cpu")?;
    let core = if label.is_empty() {
        None
    } else {
        Some(label.parse().ok()?)
    };
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, field) in v.iter_mut().zip(f.by_ref()) {
        *slot = field.parse().ok()?;
        n += 1;
    }
    // Kernels since 2.6.11 have at least eight fields; older ones at least four.
    if n < 4 {
        return None;
    }
    let total = v.iter().fold(0u64, |a, x| a.saturating_add(*x));
    Some((
        core,
        CpuTimes {
            total,
            idle: v[3].saturating_add(v[4]),
        },
    ))
}

/// Parses `/proc/stat`'s CPU lines: the all-CPU times, and each core's into `cores` (cleared
/// first; index = core number, a missing (offline) core reads as zeros).
pub(crate) fn parse_stat_cpus(text: &str, cores: &mut Vec<CpuTimes>) -> Option<CpuTimes> {
    cores.clear();
    let mut all = None;
    for line in text.lines() {
        if !line.starts_with("cpu") {
            // The CPU lines come first.
            if all.is_some() {
                break;
            }
            continue;
        }
        match parse_stat_cpu_line(line) {
            Some((None, t)) => all = Some(t),
            // Bounded: a core number this high is not a real CPU.
            Some((Some(i), t)) if i < 4096 => {
                if cores.len() <= i {
                    cores.resize(i + 1, CpuTimes::default());
                }
                cores[i] = t;
            }
            _ => {}
        }
    }
    all
}

/// `/proc/meminfo`'s `MemTotal` and `MemAvailable`, bytes.
pub(crate) fn parse_meminfo(text: &str) -> Option<(u64, u64)> {
    let (mut total, mut available) = (None, None);
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("MemTotal:") {
            total = kb(v);
        } else if let Some(v) = line.strip_prefix("MemAvailable:") {
            available = kb(v);
        }
        if total.is_some() && available.is_some() {
            break;
        }
    }
    Some((total?, available?))
}

/// A `  1234 kB` value of meminfo or status, in bytes.
fn kb(v: &str) -> Option<u64> {
    let n: u64 = v.split_whitespace().next()?.parse().ok()?;
    Some(n.saturating_mul(1024))
}

/// `/proc/PID/status`'s resident set (`VmRSS`, bytes) and thread count (`Threads`); either
/// `None` when absent (a kernel thread has no `VmRSS`).
pub(crate) fn parse_status(text: &str) -> (Option<u64>, Option<u64>) {
    let (mut rss, mut threads) = (None, None);
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            rss = kb(v);
        } else if let Some(v) = line.strip_prefix("Threads:") {
            threads = v.trim().parse().ok();
        }
    }
    (rss, threads)
}

/// One `/proc/diskstats` line: the device name and the sectors (512 bytes each, whatever the
/// device's own sector size) read and written so far.
pub(crate) fn parse_diskstats_line(line: &str) -> Option<(&str, u64, u64)> {
    let f: Vec<&str> = line.split_whitespace().take(10).collect();
    let name = *f.get(2)?;
    let read = f.get(5)?.parse().ok()?;
    let written = f.get(9)?.parse().ok()?;
    Some((name, read, written))
}

/// True for a `/sys/block` entry worth a column: a whole disk, not a loop or RAM device
/// (`loop*`, `ram*`, `zram*`). Partitions are not in `/sys/block` at all.
pub(crate) fn is_real_disk(name: &str) -> bool {
    !(name.starts_with("loop") || name.starts_with("ram") || name.starts_with("zram"))
}

/// One interface line of `/proc/PID/net/dev`: its name and the bytes received and sent so
/// far; `None` for the two header lines.
pub(crate) fn parse_net_dev_line(line: &str) -> Option<(&str, u64, u64)> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim();
    if name.is_empty() || name.contains('|') {
        return None;
    }
    let mut f = rest.split_whitespace();
    let rx = f.next()?.parse().ok()?;
    // Received: bytes packets errs drop fifo frame compressed multicast; then transmitted.
    let tx = f.nth(7)?.parse().ok()?;
    Some((name, rx, tx))
}

/// `/proc/loadavg`'s 1, 5 and 15 minute load averages.
pub(crate) fn parse_loadavg(text: &str) -> Option<[f64; 3]> {
    let mut f = text.split_whitespace();
    let mut out = [0.0; 3];
    for slot in &mut out {
        *slot = f.next()?.parse().ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines copied from this machine's /proc files (2 cores, a virtio disk, loop and zram
    // devices, lo and eth0).
    const STAT: &str = "\
cpu  5961521 558879 919736 3594636 265531 0 31262 10201 0 0
cpu0 2912220 280971 439072 1935109 84015 0 13234 4965 0 0
cpu1 3049300 277907 480664 1659526 181516 0 18027 5235 0 0
intr 62153962 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 14 0
ctxt 1234
";

    #[test]
    fn stat_cpus() {
        let mut cores = Vec::new();
        let all = parse_stat_cpus(STAT, &mut cores).unwrap();
        assert_eq!(cores.len(), 2);
        assert_eq!(
            all.total,
            5961521 + 558879 + 919736 + 3594636 + 265531 + 31262 + 10201
        );
        assert_eq!(all.idle, 3594636 + 265531);
        assert_eq!(cores[1].idle, 1659526 + 181516);
        // One second later on core 0: 60 ticks busy, 40 idle.
        let later = CpuTimes {
            total: cores[0].total + 100,
            idle: cores[0].idle + 40,
        };
        assert!((later.busy_pct_since(&cores[0]) - 60.0).abs() < 1e-9);
        assert_eq!(cores[0].busy_pct_since(&cores[0]), 0.0);
        // An offline core leaves a hole; garbage lines are skipped; no cpu line: none.
        let holes = "cpu 1 2 3 4\ncpu3 1 1 1 1 0 0 0 0\ncpux 1 2\ncpu2 1\n";
        assert!(parse_stat_cpus(holes, &mut cores).is_some());
        assert_eq!(cores.len(), 4);
        assert_eq!(cores[0], CpuTimes::default());
        assert_eq!(parse_stat_cpus("intr 1 2\n", &mut cores), None);
        assert!(cores.is_empty());
    }

    #[test]
    fn meminfo() {
        let t = "MemTotal:       24684084 kB\nMemFree:          677196 kB\nMemAvailable:   23225016 kB\nBuffers:          104388 kB\n";
        assert_eq!(parse_meminfo(t), Some((24684084 * 1024, 23225016 * 1024)));
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn status() {
        let t = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nVmPeak:\t    8372 kB\nVmRSS:\t    2056 kB\nRssAnon:\t     128 kB\nThreads:\t1\nSigQ:\t0/95734\n";
        assert_eq!(parse_status(t), (Some(2056 * 1024), Some(1)));
        assert_eq!(
            parse_status("Name:\tkthreadd\nThreads:\t1\n"),
            (None, Some(1))
        );
        assert_eq!(parse_status(""), (None, None));
    }

    #[test]
    fn diskstats() {
        let vda = " 254       0 vda 5849613 140559 229261674 222025043 847027 1566552 1199086592 9911846 0 4369708 232942710 1269152 57 1099262704 1001778 17435 4041";
        assert_eq!(
            parse_diskstats_line(vda),
            Some(("vda", 229261674, 1199086592))
        );
        let loop0 = "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert_eq!(parse_diskstats_line(loop0), Some(("loop0", 0, 0)));
        assert_eq!(parse_diskstats_line("   7 0 loop0 1 2"), None);
        assert!(is_real_disk("vda") && is_real_disk("nvme0n1") && is_real_disk("dm-0"));
        assert!(!is_real_disk("loop3") && !is_real_disk("zram0") && !is_real_disk("ram1"));
    }

    #[test]
    fn net_dev() {
        let t = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 17859274796 84948893    0    0    0     0          0         0 17859274796 84948893    0    0    0     0       0          0
  eth0: 519389278   12688    0    0    0     0          0         0   628704    7925    0    0    0     0       0          0
";
        let rows: Vec<_> = t.lines().filter_map(parse_net_dev_line).collect();
        assert_eq!(
            rows,
            [
                ("lo", 17859274796, 17859274796),
                ("eth0", 519389278, 628704)
            ]
        );
        // Old kernels put no space after the colon.
        assert_eq!(
            parse_net_dev_line("  eth1:123 4 0 0 0 0 0 0 99 1 0 0 0 0 0 0"),
            Some(("eth1", 123, 99))
        );
    }

    #[test]
    fn loadavg() {
        assert_eq!(
            parse_loadavg("13.53 10.86 8.55 19/224 13510\n"),
            Some([13.53, 10.86, 8.55])
        );
        assert_eq!(parse_loadavg("1.0 2.0"), None);
    }
}
