//! The CPU limit of the cgroup a process runs in, and how often it was throttled: finding the
//! group (`/proc/<pid>/cgroup`, the mounts of `/proc/self/mountinfo`; cgroup v2 and the v1
//! `cpu` controller) and reading its bandwidth counters (`cpu.stat`, `cpu.max` or
//! `cpu.cfs_quota_us`/`cpu.cfs_period_us`). The limit may sit on an ancestor (a container's
//! group above the process's own): the nearest group with a quota is the one read. Linux only;
//! elsewhere nothing is found. The memory controller's group too ([`find_memory`]: its limit
//! and usage, `memory.max`/`memory.current` or v1's `memory.limit_in_bytes`/`usage_in_bytes`).

use std::path::{Path, PathBuf};

use diagnostics_client::procfs::parse_cgroup_lines;

pub(crate) use clr_events::clrspy::CpuBandwidth;

/// The cgroup whose CPU bandwidth limits a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CpuCgroup {
    /// Its directory (`/sys/fs/cgroup/...`).
    pub(crate) dir: PathBuf,
    /// 1 or 2.
    pub(crate) version: u16,
}

/// A cgroup mount of `/proc/self/mountinfo`: (root inside the hierarchy, mount point, fs
/// type, super options).
fn cgroup_mounts(text: &str) -> impl Iterator<Item = (&str, &str, &str, &str)> {
    text.lines().filter_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mut f = left.split_whitespace();
        let root = f.nth(3)?;
        let point = f.next()?;
        let mut r = right.split_whitespace();
        let fstype = r.next()?;
        let _source = r.next()?;
        let opts = r.next().unwrap_or("");
        fstype
            .starts_with("cgroup")
            .then_some((root, point, fstype, opts))
    })
}

/// The directory of the process's group on a mount: the mount point joined with the group's
/// path below the mount's root (a container sees its own group as the root of the mount).
fn dir_on_mount(root: &str, point: &str, path: &str) -> PathBuf {
    let below = if root == "/" {
        path
    } else {
        match path.strip_prefix(root) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => path,
        }
    };
    let mut dir = PathBuf::from(unescape_mount(point));
    for part in below.split('/').filter(|p| !p.is_empty() && *p != "..") {
        dir.push(part);
    }
    dir
}

/// mountinfo escapes spaces and a few other bytes as `\ooo`.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match oct {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Finds the group of a process from the texts of its `/proc/<pid>/cgroup` and of
/// `/proc/self/mountinfo`: the v1 `cpu` controller's group where the process has one and it
/// is mounted, else its v2 group. `None` when neither is mounted here.
pub(crate) fn find_in(cgroup: &str, mountinfo: &str) -> Option<CpuCgroup> {
    find_controller_in(cgroup, mountinfo, "cpu")
}

/// The group of a process for one v1 controller (`cpu`, `memory`) where it has one and it is
/// mounted, else its v2 group; the texts as for [`find_in`].
fn find_controller_in(cgroup: &str, mountinfo: &str, controller: &str) -> Option<CpuCgroup> {
    let v1 = parse_cgroup_lines(cgroup)
        .find(|(id, ctl, _)| *id != "0" && ctl.split(',').any(|c| c == controller));
    if let Some((_, _, path)) = v1 {
        let mount = cgroup_mounts(mountinfo)
            .find(|(_, _, ty, opts)| *ty == "cgroup" && opts.split(',').any(|o| o == controller));
        if let Some((root, point, _, _)) = mount {
            return Some(CpuCgroup {
                dir: dir_on_mount(root, point, path),
                version: 1,
            });
        }
    }
    let (_, _, path) =
        parse_cgroup_lines(cgroup).find(|(id, ctl, _)| *id == "0" && ctl.is_empty())?;
    let (root, point, _, _) = cgroup_mounts(mountinfo).find(|(_, _, ty, _)| *ty == "cgroup2")?;
    Some(CpuCgroup {
        dir: dir_on_mount(root, point, path),
        version: 2,
    })
}

/// The group of process `pid`, as seen from here.
pub(crate) fn find(pid: u32) -> Option<CpuCgroup> {
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    find_in(&cgroup, &mountinfo)
}

/// The memory cgroup of process `pid` as seen from here: the v1 `memory` controller's group,
/// else its v2 group. Read with [`MemoryCgroup::read`].
pub(crate) fn find_memory(pid: u32) -> Option<MemoryCgroup> {
    let cgroup = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    find_memory_in(&cgroup, &mountinfo)
}

/// [`find_memory`] from the texts of `/proc/<pid>/cgroup` and `/proc/self/mountinfo`.
pub(crate) fn find_memory_in(cgroup: &str, mountinfo: &str) -> Option<MemoryCgroup> {
    let g = find_controller_in(cgroup, mountinfo, "memory")?;
    Some(MemoryCgroup {
        dir: g.dir,
        version: g.version,
    })
}

/// The cgroup whose memory limit applies to a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MemoryCgroup {
    /// Its directory (`/sys/fs/cgroup/...`).
    pub(crate) dir: PathBuf,
    /// 1 or 2.
    pub(crate) version: u16,
}

/// A memory cgroup's limit and usage, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemoryReading {
    /// The limit (`memory.max`, v1 `memory.limit_in_bytes`); `None` when unlimited.
    pub(crate) limit: Option<u64>,
    /// What the group uses now (`memory.current`, v1 `memory.usage_in_bytes`).
    pub(crate) usage: u64,
}

/// v1 writes "no limit" as a huge number (a page-rounded `i64::MAX`): anything above this is
/// no limit.
const V1_NO_LIMIT: u64 = 1 << 60;

/// Parses a memory limit file (`memory.max`, `memory.limit_in_bytes`): `None` for `max`, the
/// v1 "unlimited" number or an unreadable text.
pub(crate) fn parse_memory_limit(text: &str) -> Option<u64> {
    let t = text.trim();
    if t == "max" {
        return None;
    }
    t.parse::<u64>().ok().filter(|v| *v < V1_NO_LIMIT)
}

impl MemoryCgroup {
    fn files(&self) -> (&'static str, &'static str) {
        if self.version == 2 {
            ("memory.max", "memory.current")
        } else {
            ("memory.limit_in_bytes", "memory.usage_in_bytes")
        }
    }

    /// The group itself or its nearest ancestor with a memory limit (a container's limit sits
    /// above the process's own group); the group itself when none has one.
    pub(crate) fn limiting(&self) -> MemoryCgroup {
        let (limit_file, usage_file) = self.files();
        let mut dir = self.dir.as_path();
        // Bounded by the path's depth.
        for _ in 0..64 {
            if !dir.join(usage_file).exists() {
                break;
            }
            let limit = std::fs::read_to_string(dir.join(limit_file)).unwrap_or_default();
            if parse_memory_limit(&limit).is_some() {
                return MemoryCgroup {
                    dir: dir.to_path_buf(),
                    version: self.version,
                };
            }
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
        self.clone()
    }

    /// Reads the group's limit and usage now; `None` when its usage cannot be read.
    pub(crate) fn read(&self) -> Option<MemoryReading> {
        let (limit_file, usage_file) = self.files();
        let usage = std::fs::read_to_string(self.dir.join(usage_file))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let limit = std::fs::read_to_string(self.dir.join(limit_file)).unwrap_or_default();
        Some(MemoryReading {
            limit: parse_memory_limit(&limit),
            usage,
        })
    }
}

/// Parses a `cpu.stat`: (periods, throttled periods, throttled ns). v2 says `throttled_usec`,
/// v1 `throttled_time` (ns). A group without the counters (v2 without the cpu controller)
/// reads as zeros.
pub(crate) fn parse_cpu_stat(text: &str) -> (u64, u64, u64) {
    let (mut periods, mut throttled, mut ns) = (0, 0, 0);
    for l in text.lines() {
        let Some((k, v)) = l.split_once(' ') else {
            continue;
        };
        let Ok(v) = v.trim().parse::<u64>() else {
            continue;
        };
        match k {
            "nr_periods" => periods = v,
            "nr_throttled" => throttled = v,
            "throttled_usec" => ns = v.saturating_mul(1000),
            "throttled_time" => ns = v,
            _ => {}
        }
    }
    (periods, throttled, ns)
}

/// Parses v2's `cpu.max` (`"50000 100000"` or `"max 100000"`): (quota µs or `u64::MAX`,
/// period µs).
pub(crate) fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let quota = f.next()?;
    let period = f.next()?.parse().ok()?;
    let quota = if quota == "max" {
        u64::MAX
    } else {
        quota.parse().ok()?
    };
    Some((quota, period))
}

/// The quota and period of one group directory.
fn limit_of(dir: &Path, version: u16) -> Option<(u64, u64)> {
    if version == 2 {
        return parse_cpu_max(&std::fs::read_to_string(dir.join("cpu.max")).ok()?);
    }
    let read = |f: &str| -> Option<i64> {
        std::fs::read_to_string(dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let quota = read("cpu.cfs_quota_us")?;
    let period = u64::try_from(read("cpu.cfs_period_us")?).ok()?;
    Some((u64::try_from(quota).unwrap_or(u64::MAX), period))
}

impl CpuCgroup {
    /// The group itself or its nearest ancestor with a CPU quota (the one that throttles the
    /// process); the group itself when none has one.
    pub(crate) fn limiting(&self) -> CpuCgroup {
        let mut dir = self.dir.as_path();
        // Bounded by the path's depth.
        for _ in 0..64 {
            if !dir.join("cpu.stat").exists() {
                break;
            }
            if limit_of(dir, self.version).is_some_and(|(q, _)| q != u64::MAX) {
                return CpuCgroup {
                    dir: dir.to_path_buf(),
                    version: self.version,
                };
            }
            match dir.parent() {
                Some(p) => dir = p,
                None => break,
            }
        }
        self.clone()
    }

    /// Reads the group's counters now; `None` when its `cpu.stat` cannot be read.
    pub(crate) fn read(&self) -> Option<CpuBandwidth> {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
        let (periods, throttled_periods, throttled_ns) = parse_cpu_stat(&stat);
        let (quota_us, period_us) = limit_of(&self.dir, self.version).unwrap_or((u64::MAX, 0));
        Some(CpuBandwidth {
            version: self.version,
            periods,
            throttled_periods,
            throttled_ns,
            quota_us,
            period_us,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_cpu_controller_wins_over_an_empty_v2_line() {
        let cg = "4:memory:/x\n2:cpuacct:/\n1:cpu:/clrspy-test-7\n0::/\n";
        assert_eq!(
            find_in(cg, MOUNTS_V1),
            Some(CpuCgroup {
                dir: "/sys/fs/cgroup/cpu/clrspy-test-7".into(),
                version: 1
            })
        );
        // The usual combined mount.
        let m = "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
        let g = find_in("3:cpu,cpuacct:/docker/abc\n", m).unwrap();
        assert_eq!(
            g.dir,
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/docker/abc")
        );
    }

    #[test]
    fn v2_and_container_roots() {
        let m = "29 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
        let g = find_in("0::/system.slice/app.service\n", m).unwrap();
        assert_eq!(g.version, 2);
        assert_eq!(
            g.dir,
            PathBuf::from("/sys/fs/cgroup/system.slice/app.service")
        );
        // Inside a container without a cgroup namespace the mount's root is the container's
        // group: the path below it is what is left.
        let m = "29 23 0:26 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n";
        let g = find_in("0::/docker/abc/inner\n", m).unwrap();
        assert_eq!(g.dir, PathBuf::from("/sys/fs/cgroup/inner"));
        assert_eq!(find_in("0::/\n", "").map(|g| g.version), None);
        assert_eq!(find_in("garbage", MOUNTS_V1), None);
        assert_eq!(unescape_mount("/a\\040b"), "/a b");
    }

    #[test]
    fn counters_and_limits() {
        let v2 = "usage_usec 100\nnr_periods 40\nnr_throttled 12\nthrottled_usec 3000\n";
        assert_eq!(parse_cpu_stat(v2), (40, 12, 3_000_000));
        let v1 = "nr_periods 5\nnr_throttled 2\nthrottled_time 777\nnr_bursts 0\n";
        assert_eq!(parse_cpu_stat(v1), (5, 2, 777));
        assert_eq!(parse_cpu_stat("usage_usec 5\n"), (0, 0, 0));
        assert_eq!(parse_cpu_max("max 100000\n"), Some((u64::MAX, 100_000)));
        assert_eq!(parse_cpu_max("50000 100000"), Some((50_000, 100_000)));
        assert_eq!(parse_cpu_max("x"), None);
    }

    /// The nearest group with a quota is the one read: a container's limit sits above the
    /// process's own group.
    #[test]
    fn the_limit_may_sit_on_a_parent() {
        let root = std::env::temp_dir().join(format!("clrspy-cgroup-test-{}", std::process::id()));
        let inner = root.join("app/worker");
        std::fs::create_dir_all(&inner).unwrap();
        let put = |dir: &Path, f: &str, v: &str| std::fs::write(dir.join(f), v).unwrap();
        for d in [&root, &root.join("app"), &inner] {
            put(
                d,
                "cpu.stat",
                "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
            );
            put(d, "cpu.max", "max 100000\n");
        }
        put(&root.join("app"), "cpu.max", "50000 100000\n");
        put(
            &root.join("app"),
            "cpu.stat",
            "usage_usec 9\nnr_periods 40\nnr_throttled 12\nthrottled_usec 3000\n",
        );
        let g = CpuCgroup {
            dir: inner.clone(),
            version: 2,
        };
        let l = g.limiting();
        assert_eq!(l.dir, root.join("app"));
        let b = l.read().unwrap();
        assert_eq!(
            (b.periods, b.throttled_periods, b.throttled_ns),
            (40, 12, 3_000_000)
        );
        assert_eq!((b.quota_us, b.period_us), (50_000, 100_000));
        // No quota anywhere: the process's own group, with no limit.
        put(&root.join("app"), "cpu.max", "max 100000\n");
        let own = g.limiting();
        assert_eq!(own.dir, inner);
        assert_eq!(own.read().unwrap().quota_us, u64::MAX);
        // v1 says "no limit" with -1.
        let v1 = root.join("v1");
        std::fs::create_dir_all(&v1).unwrap();
        put(
            &v1,
            "cpu.stat",
            "nr_periods 5\nnr_throttled 2\nthrottled_time 777\n",
        );
        put(&v1, "cpu.cfs_quota_us", "-1\n");
        put(&v1, "cpu.cfs_period_us", "100000\n");
        let g1 = CpuCgroup {
            dir: v1.clone(),
            version: 1,
        };
        assert_eq!(g1.read().unwrap().quota_us, u64::MAX);
        put(&v1, "cpu.cfs_quota_us", "5000\n");
        assert_eq!(g1.limiting().read().unwrap().quota_us, 5000);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn memory_groups_and_limits() {
        // This machine's: the memory controller on its own v1 mount.
        let m = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                 41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let cg = "4:memory:/process_api/3469e2\n1:cpu:/\n0::/\n";
        let g = find_memory_in(cg, m).unwrap();
        assert_eq!(
            (g.dir, g.version),
            (PathBuf::from("/sys/fs/cgroup/memory/process_api/3469e2"), 1)
        );
        // Only v2 mounted: the unified group.
        let m2 = "29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        let g = find_memory_in("0::/kubepods/pod1\n", m2).unwrap();
        assert_eq!(g.version, 2);
        assert_eq!(find_memory_in("1:cpu:/\n", ""), None);
        assert_eq!(parse_memory_limit("max\n"), None);
        assert_eq!(parse_memory_limit("9223372036854771712\n"), None);
        assert_eq!(parse_memory_limit("536870912\n"), Some(536_870_912));
        assert_eq!(parse_memory_limit("x"), None);
    }

    /// The nearest group with a memory limit is read, as for the CPU.
    #[test]
    fn the_memory_limit_may_sit_on_a_parent() {
        let root = std::env::temp_dir().join(format!("clrspy-memcg-test-{}", std::process::id()));
        let inner = root.join("pod/app");
        std::fs::create_dir_all(&inner).unwrap();
        let put = |dir: &Path, f: &str, v: &str| std::fs::write(dir.join(f), v).unwrap();
        for d in [&root, &root.join("pod"), &inner] {
            put(d, "memory.max", "max\n");
            put(d, "memory.current", "4096\n");
        }
        put(&root.join("pod"), "memory.max", "1073741824\n");
        put(&root.join("pod"), "memory.current", "52428800\n");
        let g = MemoryCgroup {
            dir: inner.clone(),
            version: 2,
        };
        let l = g.limiting();
        assert_eq!(l.dir, root.join("pod"));
        assert_eq!(
            l.read(),
            Some(MemoryReading {
                limit: Some(1 << 30),
                usage: 52_428_800
            })
        );
        put(&root.join("pod"), "memory.max", "max\n");
        assert_eq!(g.limiting().dir, inner);
        assert_eq!(g.read().map(|r| (r.limit, r.usage)), Some((None, 4096)));
        let v1 = root.join("v1");
        std::fs::create_dir_all(&v1).unwrap();
        put(&v1, "memory.limit_in_bytes", "268435456\n");
        put(&v1, "memory.usage_in_bytes", "1000\n");
        let g1 = MemoryCgroup {
            dir: v1,
            version: 1,
        };
        assert_eq!(g1.read().and_then(|r| r.limit), Some(268_435_456));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_in_the_groups_found_for_it() {
        // Every Linux process is in some group: /proc/self/cgroup has at least one line.
        let pid = std::process::id();
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(text.lines().count() > 0, "{text:?}");
        // A group found whose directory is readable here lists this process among its own
        // (a wrong mount or path would name a sibling or parent group, which does not).
        let dirs = [find(pid).map(|g| g.dir), find_memory(pid).map(|g| g.dir)];
        for dir in dirs.into_iter().flatten() {
            let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
                continue;
            };
            assert!(
                procs.lines().any(|l| l.trim() == pid.to_string()),
                "pid {pid} is not in {}",
                dir.display()
            );
        }
        // Readable counters read as counters that can be true.
        if let Some(g) = find(pid) {
            let g = g.limiting();
            if std::fs::read_to_string(g.dir.join("cpu.stat")).is_ok() {
                let b = g.read().unwrap();
                assert!(b.throttled_periods <= b.periods, "{b:?}");
            }
        }
    }
}
