//! System and process metrics of one target, sampled at an interval from /proc and the
//! target's cgroups: CPU per core and of the process, memory, disk and network throughput,
//! load, threads and open files, the container's CPU and memory limits and throttling. Each
//! call of [`SysSampler::sample`] returns the rates and levels over the time since the last
//! call (the first only primes the counters). The sampler holds one previous reading and
//! nothing that grows with the samples. The pure file parsers are in [`parse`]. Linux only:
//! elsewhere the first reading fails.

pub mod parse;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::cgroup::{self, CpuCgroup, MemoryCgroup};
use parse::CpuTimes;

/// Why a sample could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SysMetricsError {
    /// The target process is gone (or a zombie waiting for its parent).
    #[error("process {pid} has ended")]
    Ended {
        /// The target.
        pid: u32,
    },
    /// A file every sample needs could not be read or understood.
    #[error("reading {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// Bytes per second in and out of one device or interface over the interval.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IoRate {
    /// The device (`vda`, `nvme0n1`) or interface (`eth0`).
    pub(crate) name: String,
    /// Read (disk) or received (network), bytes/s.
    pub(crate) in_bps: f64,
    /// Written (disk) or sent (network), bytes/s.
    pub(crate) out_bps: f64,
}

/// One sample: rates over the interval that just ended, levels at its end.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsRow {
    /// The sample's wall-clock time, ms since the Unix epoch (UTC).
    pub unix_ms: u64,
    /// The interval's real length, seconds.
    pub(crate) interval_s: f64,
    /// All CPUs busy, % of the machine (100 = every core busy).
    pub(crate) cpu_pct: f64,
    /// Each core busy, % (index = core number).
    pub(crate) core_pct: Vec<f64>,
    /// The process's CPU (user + system), % of one core (200 = two cores' worth).
    pub(crate) process_cpu_pct: f64,
    /// The machine's memory (`MemTotal`), bytes.
    pub(crate) mem_total_bytes: u64,
    /// Memory available for new work without swapping (`MemAvailable`), bytes.
    pub(crate) mem_available_bytes: u64,
    /// `MemTotal - MemAvailable`, bytes.
    pub(crate) mem_used_bytes: u64,
    /// The process's resident set (`VmRSS`), bytes.
    pub rss_bytes: u64,
    /// The .NET GC heap size, bytes: not in /proc, so the sampler leaves it `None`; a caller
    /// that also reads the runtime's counters (the support bundle) fills it in.
    pub gc_heap_bytes: Option<u64>,
    /// Whole disks (from `/sys/block`, without loop and RAM devices), in `/sys/block` order.
    pub(crate) disks: Vec<IoRate>,
    /// Network interfaces of the target's network namespace (`/proc/PID/net/dev`).
    pub(crate) nets: Vec<IoRate>,
    /// Load averages over 1, 5 and 15 minutes.
    pub load: [f64; 3],
    /// The process's threads.
    pub threads: u64,
    /// The process's open file descriptors; `None` when `/proc/PID/fd` cannot be read (another
    /// user's process).
    pub(crate) fds: Option<u64>,
    /// The CPU cgroup's limit in cores (quota / period); `None` without a limit or cgroup.
    pub(crate) cgroup_cpu_limit_cores: Option<f64>,
    /// Enforcement periods throttled during the interval; `None` without a CPU cgroup.
    pub(crate) cgroup_throttled_periods: Option<u64>,
    /// Time throttled during the interval, ms; `None` without a CPU cgroup.
    pub(crate) cgroup_throttled_ms: Option<f64>,
    /// The memory cgroup's limit, bytes; `None` without a limit or cgroup.
    pub(crate) cgroup_mem_limit_bytes: Option<u64>,
    /// The memory cgroup's usage, bytes; `None` without a memory cgroup.
    pub(crate) cgroup_mem_usage_bytes: Option<u64>,
}

/// A device or interface name as part of a column name: letters, digits, `-` and `.` kept,
/// anything else (`:`, `@`, spaces) as `_`.
fn column_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl MetricsRow {
    /// The row as named values, in the CSV's column order (after its time columns):
    /// `cpu_pct`, `cpu0_pct`..., `process_cpu_pct`, `mem_total_bytes`, `mem_available_bytes`,
    /// `mem_used_bytes`, `process_rss_bytes`, `gc_heap_bytes`, `disk_<dev>_read_bps`,
    /// `disk_<dev>_write_bps`..., `net_<if>_rx_bps`, `net_<if>_tx_bps`..., `load1`, `load5`,
    /// `load15`, `threads`, `fds`, `cgroup_cpu_limit_cores`, `cgroup_throttled_periods`,
    /// `cgroup_throttled_ms`, `cgroup_mem_limit_bytes`, `cgroup_mem_usage_bytes`; `None` for a
    /// value not known.
    pub fn columns(&self) -> Vec<(String, Option<f64>)> {
        let mut out =
            Vec::with_capacity(24 + self.core_pct.len() + 2 * (self.disks.len() + self.nets.len()));
        let mut put = |name: String, v: Option<f64>| out.push((name, v));
        put("cpu_pct".into(), Some(self.cpu_pct));
        for (i, v) in self.core_pct.iter().enumerate() {
            put(format!("cpu{i}_pct"), Some(*v));
        }
        put("process_cpu_pct".into(), Some(self.process_cpu_pct));
        put("mem_total_bytes".into(), Some(self.mem_total_bytes as f64));
        put(
            "mem_available_bytes".into(),
            Some(self.mem_available_bytes as f64),
        );
        put("mem_used_bytes".into(), Some(self.mem_used_bytes as f64));
        put("process_rss_bytes".into(), Some(self.rss_bytes as f64));
        put("gc_heap_bytes".into(), self.gc_heap_bytes.map(|v| v as f64));
        for d in &self.disks {
            let n = column_part(&d.name);
            put(format!("disk_{n}_read_bps"), Some(d.in_bps));
            put(format!("disk_{n}_write_bps"), Some(d.out_bps));
        }
        for d in &self.nets {
            let n = column_part(&d.name);
            put(format!("net_{n}_rx_bps"), Some(d.in_bps));
            put(format!("net_{n}_tx_bps"), Some(d.out_bps));
        }
        for (name, v) in ["load1", "load5", "load15"].iter().zip(self.load) {
            put((*name).into(), Some(v));
        }
        put("threads".into(), Some(self.threads as f64));
        put("fds".into(), self.fds.map(|v| v as f64));
        put("cgroup_cpu_limit_cores".into(), self.cgroup_cpu_limit_cores);
        put(
            "cgroup_throttled_periods".into(),
            self.cgroup_throttled_periods.map(|v| v as f64),
        );
        put("cgroup_throttled_ms".into(), self.cgroup_throttled_ms);
        put(
            "cgroup_mem_limit_bytes".into(),
            self.cgroup_mem_limit_bytes.map(|v| v as f64),
        );
        put(
            "cgroup_mem_usage_bytes".into(),
            self.cgroup_mem_usage_bytes.map(|v| v as f64),
        );
        out
    }
}

/// The levels read now (no rate).
struct Levels {
    mem_total: u64,
    mem_available: u64,
    rss: u64,
    threads: u64,
    fds: Option<u64>,
    load: [f64; 3],
    cpu: Option<cgroup::CpuBandwidth>,
    memory: Option<cgroup::MemoryReading>,
}

/// Counters that rates are made from.
#[derive(Debug, Default)]
struct Counters {
    at: Option<Instant>,
    all: CpuTimes,
    cores: Vec<CpuTimes>,
    process_ticks: u64,
    /// Sectors read and written, one per entry of [`SysSampler::disks`].
    disks: Vec<(u64, u64)>,
    /// (interface, received, sent).
    nets: Vec<(String, u64, u64)>,
    /// (throttled periods, throttled ns).
    throttle: Option<(u64, u64)>,
}

/// Samples one process and the machine it runs on.
#[derive(Debug)]
pub struct SysSampler {
    pid: u32,
    ticks_per_second: u64,
    cpu_group: Option<CpuCgroup>,
    memory_group: Option<MemoryCgroup>,
    /// Whole disks, fixed when the sampler is made.
    disks: Vec<String>,
    prev: Counters,
    cur: Counters,
    /// One read buffer for every file.
    buf: String,
}

/// Reads a whole file into `buf` (cleared first).
fn read_into(path: &str, buf: &mut String) -> std::io::Result<()> {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(path)?.read_to_string(buf).map(|_| ())
}

fn read_error(path: &str, reason: impl std::fmt::Display) -> SysMetricsError {
    SysMetricsError::Read {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

/// The whole disks of `/sys/block` (without loop and RAM devices), sorted.
fn whole_disks() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| parse::is_real_disk(n))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

impl SysSampler {
    /// A sampler of process `pid` (as seen from here): finds its cgroups and the machine's
    /// disks now.
    pub fn new(pid: u32) -> SysSampler {
        SysSampler {
            pid,
            ticks_per_second: diagnostics_client::procfs::clock_ticks_per_second().unwrap_or(100),
            cpu_group: cgroup::find(pid).map(|g| g.limiting()),
            memory_group: cgroup::find_memory(pid).map(|g| g.limiting()),
            disks: whole_disks(),
            prev: Counters::default(),
            cur: Counters::default(),
            buf: String::new(),
        }
    }

    /// The target.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Reads everything now. The first call only primes the counters and returns `Ok(None)`;
    /// every later one the row over the time since the call before.
    pub fn sample(&mut self) -> Result<Option<MetricsRow>, SysMetricsError> {
        let now = Instant::now();
        let pid = self.pid;
        // The process first: its end is the likeliest failure.
        let stat_path = format!("/proc/{pid}/stat");
        if read_into(&stat_path, &mut self.buf).is_err() {
            return Err(SysMetricsError::Ended { pid });
        }
        let (state, _, ticks) = crate::procstat::parse_stat(self.buf.trim_end())
            .ok_or_else(|| read_error(&stat_path, "not a stat line"))?;
        if state == b'Z' || state == b'X' {
            return Err(SysMetricsError::Ended { pid });
        }
        self.cur.process_ticks = ticks;
        let status_path = format!("/proc/{pid}/status");
        read_into(&status_path, &mut self.buf).map_err(|_| SysMetricsError::Ended { pid })?;
        let (rss, threads) = parse::parse_status(&self.buf);
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .ok()
            .map(|d| d.count() as u64);

        read_into("/proc/stat", &mut self.buf).map_err(|e| read_error("/proc/stat", e))?;
        self.cur.all = parse::parse_stat_cpus(&self.buf, &mut self.cur.cores)
            .ok_or_else(|| read_error("/proc/stat", "no cpu line"))?;
        read_into("/proc/meminfo", &mut self.buf).map_err(|e| read_error("/proc/meminfo", e))?;
        let (mem_total, mem_available) = parse::parse_meminfo(&self.buf)
            .ok_or_else(|| read_error("/proc/meminfo", "no MemTotal or MemAvailable"))?;
        read_into("/proc/loadavg", &mut self.buf).map_err(|e| read_error("/proc/loadavg", e))?;
        let load = parse::parse_loadavg(&self.buf).unwrap_or_default();
        self.read_disks();
        self.read_nets();
        let cpu = self.cpu_group.as_ref().and_then(|g| g.read());
        self.cur.throttle = cpu.map(|b| (b.throttled_periods, b.throttled_ns));
        let memory = self.memory_group.as_ref().and_then(|g| g.read());
        self.cur.at = Some(now);

        let levels = Levels {
            mem_total,
            mem_available,
            rss: rss.unwrap_or(0),
            threads: threads.unwrap_or(0),
            fds,
            load,
            cpu,
            memory,
        };
        let row = self
            .prev
            .at
            .map(|before| self.row(now.duration_since(before), &levels));
        std::mem::swap(&mut self.prev, &mut self.cur);
        Ok(row)
    }

    /// The row over `elapsed` from the previous counters to the current ones.
    fn row(&self, elapsed: Duration, l: &Levels) -> MetricsRow {
        let secs = elapsed.as_secs_f64().max(1e-6);
        let (p, c) = (&self.prev, &self.cur);
        let rate = |a: u64, b: u64| b.saturating_sub(a) as f64 / secs;
        let disks = self
            .disks
            .iter()
            .zip(c.disks.iter().zip(&p.disks))
            .map(|(name, (now, was))| IoRate {
                name: name.clone(),
                in_bps: rate(was.0, now.0) * 512.0,
                out_bps: rate(was.1, now.1) * 512.0,
            })
            .collect();
        let nets = c
            .nets
            .iter()
            .map(|(name, rx, tx)| {
                let was = p.nets.iter().find(|(n, _, _)| n == name);
                let (rx0, tx0) = was.map_or((*rx, *tx), |(_, a, b)| (*a, *b));
                IoRate {
                    name: name.clone(),
                    in_bps: rate(rx0, *rx),
                    out_bps: rate(tx0, *tx),
                }
            })
            .collect();
        let throttled = c.throttle.zip(p.throttle);
        MetricsRow {
            unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            interval_s: secs,
            cpu_pct: c.all.busy_pct_since(&p.all),
            core_pct: c
                .cores
                .iter()
                .enumerate()
                .map(|(i, t)| p.cores.get(i).map_or(0.0, |b| t.busy_pct_since(b)))
                .collect(),
            process_cpu_pct: rate(p.process_ticks, c.process_ticks) * 100.0
                / self.ticks_per_second as f64,
            mem_total_bytes: l.mem_total,
            mem_available_bytes: l.mem_available,
            mem_used_bytes: l.mem_total.saturating_sub(l.mem_available),
            rss_bytes: l.rss,
            gc_heap_bytes: None,
            disks,
            nets,
            load: l.load,
            threads: l.threads,
            fds: l.fds,
            cgroup_cpu_limit_cores: l
                .cpu
                .filter(|b| b.quota_us != u64::MAX && b.period_us > 0)
                .map(|b| b.quota_us as f64 / b.period_us as f64),
            cgroup_throttled_periods: throttled.map(|(n, w)| n.0.saturating_sub(w.0)),
            cgroup_throttled_ms: throttled.map(|(n, w)| n.1.saturating_sub(w.1) as f64 / 1e6),
            cgroup_mem_limit_bytes: l.memory.and_then(|m| m.limit),
            cgroup_mem_usage_bytes: l.memory.map(|m| m.usage),
        }
    }

    /// Reads `/proc/diskstats` into the current counters, one per known disk (zeros for a disk
    /// that went away).
    fn read_disks(&mut self) {
        self.cur.disks.clear();
        self.cur.disks.resize(self.disks.len(), (0, 0));
        if read_into("/proc/diskstats", &mut self.buf).is_err() {
            return;
        }
        for line in self.buf.lines() {
            if let Some((name, r, w)) = parse::parse_diskstats_line(line) {
                if let Some(i) = self.disks.iter().position(|d| d == name) {
                    self.cur.disks[i] = (r, w);
                }
            }
        }
    }

    /// Reads the target's `/proc/PID/net/dev` into the current counters.
    fn read_nets(&mut self) {
        self.cur.nets.clear();
        let path = format!("/proc/{}/net/dev", self.pid);
        if read_into(&path, &mut self.buf).is_err() {
            return;
        }
        for line in self.buf.lines() {
            if let Some((name, rx, tx)) = parse::parse_net_dev_line(line) {
                self.cur.nets.push((name.to_string(), rx, tx));
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Samples this test process while a thread burns CPU: the process's share shows, the
    /// first call only primes, and memory levels are plausible.
    #[test]
    fn samples_this_process() {
        let mut s = SysSampler::new(std::process::id());
        assert!(s.sample().unwrap().is_none(), "the first call only primes");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let burner = std::thread::spawn(move || {
            let mut x = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_mul(31).wrapping_add(7);
            }
            x
        });
        std::thread::sleep(std::time::Duration::from_millis(600));
        let row = s.sample().unwrap().expect("a row");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = burner.join();
        assert!(row.process_cpu_pct > 30.0, "{row:?}");
        assert!(row.threads >= 2, "{row:?}");
        assert!(row.rss_bytes > 0 && row.mem_total_bytes >= row.mem_used_bytes);
        assert!(!row.core_pct.is_empty());
        assert!(row.fds.is_some_and(|n| n >= 3));
        assert!((row.interval_s - 0.6).abs() < 0.3, "{}", row.interval_s);
        assert!(row.nets.iter().any(|n| n.name == "lo"), "{:?}", row.nets);
        assert!(row.disks.iter().all(|d| parse::is_real_disk(&d.name)));
    }

    #[test]
    fn column_names() {
        let row = MetricsRow {
            unix_ms: 0,
            interval_s: 1.0,
            cpu_pct: 50.0,
            core_pct: vec![40.0, 60.0],
            process_cpu_pct: 99.5,
            mem_total_bytes: 4,
            mem_available_bytes: 1,
            mem_used_bytes: 3,
            rss_bytes: 2,
            gc_heap_bytes: None,
            disks: vec![IoRate {
                name: "sda".into(),
                in_bps: 1.0,
                out_bps: 2.0,
            }],
            nets: vec![IoRate {
                name: "veth@1".into(),
                in_bps: 3.0,
                out_bps: 4.0,
            }],
            load: [1.0, 2.0, 3.0],
            threads: 7,
            fds: Some(9),
            cgroup_cpu_limit_cores: Some(0.5),
            cgroup_throttled_periods: Some(3),
            cgroup_throttled_ms: Some(12.5),
            cgroup_mem_limit_bytes: None,
            cgroup_mem_usage_bytes: Some(100),
        };
        let cols = row.columns();
        let names: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "cpu_pct",
                "cpu0_pct",
                "cpu1_pct",
                "process_cpu_pct",
                "mem_total_bytes",
                "mem_available_bytes",
                "mem_used_bytes",
                "process_rss_bytes",
                "gc_heap_bytes",
                "disk_sda_read_bps",
                "disk_sda_write_bps",
                "net_veth_1_rx_bps",
                "net_veth_1_tx_bps",
                "load1",
                "load5",
                "load15",
                "threads",
                "fds",
                "cgroup_cpu_limit_cores",
                "cgroup_throttled_periods",
                "cgroup_throttled_ms",
                "cgroup_mem_limit_bytes",
                "cgroup_mem_usage_bytes"
            ]
        );
        assert_eq!(cols[3].1, Some(99.5));
        assert_eq!(cols[8].1, None);
        assert_eq!(cols[12].1, Some(4.0));
    }

    #[test]
    fn a_gone_process_is_an_error_value() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let _ = child.wait();
        let mut s = SysSampler::new(pid);
        assert!(matches!(s.sample(), Err(SysMetricsError::Ended { pid: p }) if p == pid));
    }
}
