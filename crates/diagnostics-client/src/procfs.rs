//! What Linux's `/proc` says about a process, read and parsed in one place: whether it lives,
//! when it started (field 22 of `stat`, in clock ticks after boot — the key a runtime names its
//! diagnostics socket with), its parent and state, its pids in each nested PID namespace
//! (`NSpid`), its real uid, its kernel name (`comm`), its arguments (`cmdline`), its
//! environment (`environ`, and so the temporary folder its runtime uses), its namespaces and
//! the lines of its memory map (`maps`).
//!
//! Each fact has a parser over the file's text (tested on fixtures) and a reader that takes a
//! pid. A reader gives None when the file cannot be read (the process ended, belongs to another
//! user, or the system has no `/proc`); nothing here panics on what `/proc` holds.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The fields of `/proc/PID/stat` clrspy uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// The process state (field 3): `R`, `S`, `D`, `Z` (a zombie: ended, not yet reaped), ...
    pub state: char,
    /// The parent's pid (field 4).
    pub parent: u32,
    /// When the process started, in clock ticks after boot (field 22).
    pub start_ticks: u64,
}

/// Parses the text of `/proc/PID/stat`. The command name (field 2) is in parentheses and may
/// itself hold spaces and parentheses, so the fields are counted after its last `)`.
pub fn parse_stat(stat: &str) -> Option<Stat> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the name: field 3 (state) is the first, field 22 the twentieth.
    let fields: Vec<&str> = rest.split_whitespace().take(20).collect();
    let state = fields.first()?.chars().next()?;
    Some(Stat {
        state,
        parent: fields.get(1)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// The stat fields of `pid`.
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// When `pid` started, in clock ticks after boot (`/proc/PID/stat`, field 22): with the pid,
/// what tells this process from a later one given the same number.
pub fn start_ticks(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_ticks)
}

/// The parent of `pid` (`/proc/PID/stat`, field 4).
pub fn parent_pid(pid: u32) -> Option<u32> {
    stat(pid).map(|s| s.parent)
}

/// True while a process `pid` exists (a zombie too). Always true on systems without `/proc`,
/// where it cannot be told.
pub fn alive(pid: u32) -> bool {
    !cfg!(target_os = "linux") || Path::new(&format!("/proc/{pid}")).exists()
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, the unit of [`Stat::start_ticks`]); None
/// when the system does not say.
pub fn clock_ticks_per_second() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        u64::try_from(hz).ok().filter(|&h| h > 0)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Parses the boot time (`btime`, seconds since the Unix epoch) from the text of `/proc/stat`.
fn parse_boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// The wall-clock time `ticks` clock ticks after boot (a process's start, from
/// [`start_ticks`]), to the millisecond.
pub fn time_after_boot(ticks: u64) -> Option<SystemTime> {
    let btime = parse_boot_time(&std::fs::read_to_string("/proc/stat").ok()?)?;
    let ms = btime.saturating_mul(1000) + ticks.saturating_mul(1000) / clock_ticks_per_second()?;
    Some(std::time::UNIX_EPOCH + Duration::from_millis(ms))
}

/// Parses the seconds since boot (the first number) from the text of `/proc/uptime`.
fn parse_uptime(uptime: &str) -> Option<f64> {
    uptime
        .split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0)
}

/// How long ago `pid` started, to the millisecond.
pub fn age(pid: u32) -> Option<Duration> {
    let ticks = start_ticks(pid)?;
    let hz = clock_ticks_per_second()?;
    let up = parse_uptime(&std::fs::read_to_string("/proc/uptime").ok()?)?;
    let started_ms = ticks.saturating_mul(1000) / hz;
    Some(Duration::from_millis(
        ((up * 1000.0) as u64).saturating_sub(started_ms),
    ))
}

/// Parses the `NSpid` line of `/proc/PID/status`: the process's pid in each PID namespace it
/// is in, from ours (the first) to its own (the last). One value: it is in ours only.
fn parse_nspids(status: &str) -> Option<Vec<u32>> {
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    let pids: Vec<u32> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    (!pids.is_empty()).then_some(pids)
}

/// The pids of `pid` in each PID namespace it is in (the `NSpid` line of its status), from
/// ours (the first) to its own (the last); one value when it is in ours only.
pub fn nspids(pid: u32) -> Option<Vec<u32>> {
    parse_nspids(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The pid `pid` has in its own PID namespace (the last `NSpid` value): what it calls itself,
/// and so what its runtime names its socket and dumps after. The same number for a process of
/// our namespace.
pub fn namespace_pid(pid: u32) -> Option<u32> {
    nspids(pid)?.last().copied()
}

/// Parses the real uid (the first value of the `Uid:` line) of `/proc/PID/status`.
fn parse_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The real uid of `pid`.
pub fn uid(pid: u32) -> Option<u32> {
    parse_uid(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// Parses the file-system uid (the last value of the `Uid:` line) of `/proc/PID/status`: the
/// owner of the files the process (and a program it runs, such as createdump) creates.
fn parse_fs_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    let values: Vec<&str> = line.split_whitespace().skip(1).collect();
    if values.len() != 4 {
        return None;
    }
    values[3].parse().ok()
}

/// The file-system uid of `pid` (the last value of its status's `Uid:` line): the owner of the
/// files the process (and a program it runs, such as createdump) creates.
pub fn fs_uid(pid: u32) -> Option<u32> {
    parse_fs_uid(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The bytes of every readable mapping in `maps` (the text of `/proc/PID/maps`): all the
/// memory a core dump of the process can hold.
fn parse_readable_bytes(maps: &str) -> u64 {
    maps.lines()
        .filter_map(parse_maps_line)
        .filter(|m| m.perms.starts_with('r'))
        .map(|m| m.end.saturating_sub(m.start))
        .fold(0u64, u64::saturating_add)
}

/// The bytes of every readable mapping of `pid`: all the memory a core dump of it can hold.
pub fn readable_bytes(pid: u32) -> Option<u64> {
    Some(parse_readable_bytes(
        &std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?,
    ))
}

/// Parses the resident memory (the `VmRSS:` line, kB) of `/proc/PID/status`, in bytes.
fn parse_resident_bytes(status: &str) -> Option<u64> {
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kb: u64 = kb.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// How many threads `pid` has now (`/proc/PID/task`; None where it cannot be read).
pub fn thread_count(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.count() as u64)
}

/// The resident memory of `pid`, in bytes.
pub fn resident_bytes(pid: u32) -> Option<u64> {
    parse_resident_bytes(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The kernel's name of `pid` (`/proc/PID/comm`: the executable's name cut to 15 bytes, or
/// what the thread set), without its newline.
pub fn comm(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    Some(String::from_utf8_lossy(&raw).trim().to_string())
}

/// Splits the bytes of `/proc/PID/cmdline` (arguments each ended by a NUL) into the
/// arguments, empty ones left out; bytes that are not UTF-8 are replaced.
fn parse_cmdline(raw: &[u8]) -> Vec<String> {
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// The arguments of `pid`, the program first (empty for a kernel thread or a zombie).
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    Some(parse_cmdline(
        &std::fs::read(format!("/proc/{pid}/cmdline")).ok()?,
    ))
}

/// One line of `/proc/PID/maps`: `start-end perms offset dev inode [path]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLine<'a> {
    /// First address.
    pub start: u64,
    /// Address after the last.
    pub end: u64,
    /// `rwxp`-style permissions.
    pub perms: &'a str,
    /// Offset in the file mapped.
    pub offset: u64,
    /// What is mapped, as the kernel writes it (a path, maybe ending in ` (deleted)`, or
    /// `[heap]`, `[stack]`...; empty for anonymous memory).
    pub path: &'a str,
}

impl<'a> MapLine<'a> {
    /// True for code (the mapping may be executed).
    pub fn executable(&self) -> bool {
        self.perms.contains('x')
    }

    /// The file mapped, when it is one with a path still there: not anonymous, not a
    /// pseudo-mapping, not deleted (a memfd is deleted: `/memfd:name (deleted)`).
    pub fn file(&self) -> Option<&'a str> {
        (self.path.starts_with('/') && !self.path.ends_with(" (deleted)")).then_some(self.path)
    }
}

/// The kernel's virtual library as `/proc/PID/maps` names it.
pub const VDSO: &str = "[vdso]";

/// The vDSO's ELF image, read from this process: the kernel maps the same image into every
/// process of an architecture, so its symbols, offsets and unwinding tables are a target's
/// too (and reading ours needs no access to the target's memory). None without a vDSO.
pub fn own_vdso_image() -> Option<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let m = maps
        .lines()
        .filter_map(parse_maps_line)
        .find(|m| m.path == VDSO)?;
    let len = usize::try_from(m.end.checked_sub(m.start)?).ok()?;
    if len == 0 || len > 1 << 20 {
        return None;
    }
    let mut image = vec![0u8; len];
    let mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.read_exact_at(&mut image, m.start).ok()?;
    Some(image)
}

/// Addresses found in no mapping of a process even by a read of its maps made after they were
/// seen: stale frame addresses a stack walk turns up again and again. A reader of the maps
/// reads them again for an address it misses (code mapped since), but not for one of these;
/// a real code address is always mapped by the time the maps are read after it was seen.
#[derive(Debug, Default)]
pub struct Unmapped {
    seen: std::collections::HashSet<u64>,
}

impl Unmapped {
    /// The most addresses remembered (then it starts over).
    const MAX: usize = 1 << 16;

    /// True when `ip` is known to be in no mapping (no reason to read the maps again).
    pub fn contains(&self, ip: u64) -> bool {
        self.seen.contains(&ip)
    }

    /// Remembers `ip`, missed by a read of the maps made after it was seen.
    pub fn insert(&mut self, ip: u64) {
        if self.seen.len() >= Self::MAX {
            self.seen.clear();
        }
        self.seen.insert(ip);
    }
}

/// Parses one line of `/proc/PID/maps` (a path may hold spaces: it is the rest of the line).
pub fn parse_maps_line(line: &str) -> Option<MapLine<'_>> {
    let mut fields = line.splitn(6, ' ');
    let (range, perms, offset) = (fields.next()?, fields.next()?, fields.next()?);
    let (_dev, _inode) = (fields.next()?, fields.next()?);
    let path = fields.next().unwrap_or("").trim_start();
    let (start, end) = range.split_once('-')?;
    Some(MapLine {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        perms,
        offset: u64::from_str_radix(offset, 16).ok()?,
        path,
    })
}

/// A process's environment as `/proc/PID/environ` holds it: `NAME=value` entries, each ended
/// by a NUL, as the program was started with (later changes inside it are not seen).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environ(Vec<u8>);

impl Environ {
    /// The environment in the bytes of an `environ` file.
    pub fn from_bytes(raw: Vec<u8>) -> Environ {
        Environ(raw)
    }

    /// The raw value of `name` (the first entry of that name), None when it is not set.
    pub fn get_bytes(&self, name: &str) -> Option<&[u8]> {
        self.0.split(|&b| b == 0).find_map(|kv| {
            kv.strip_prefix(name.as_bytes())
                .and_then(|rest| rest.strip_prefix(b"="))
        })
    }

    /// The value of `name`, bytes that are not UTF-8 replaced.
    pub fn get(&self, name: &str) -> Option<String> {
        self.get_bytes(name)
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// Every entry as (name, value), in order; entries without `=` are left out and bytes
    /// that are not UTF-8 replaced.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .split(|&b| b == 0)
            .filter_map(|kv| {
                let kv = String::from_utf8_lossy(kv);
                let (k, v) = kv.split_once('=')?;
                Some((k.to_string(), v.to_string()))
            })
            .collect()
    }

    /// The temporary folder a runtime started with this environment uses (and puts its
    /// diagnostics socket in): `TMPDIR` when it is an absolute path, else `/tmp`. The path is
    /// as the process names it (inside its container, for one).
    pub fn temp_dir(&self) -> PathBuf {
        #[cfg(unix)]
        let value = self
            .get_bytes("TMPDIR")
            .map(<OsStr as std::os::unix::ffi::OsStrExt>::from_bytes);
        #[cfg(not(unix))]
        let value = self.get("TMPDIR").map(std::ffi::OsString::from);
        value
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    }
}

/// The environment `pid` was started with (readable for our own user's processes, or as root).
pub fn environ(pid: u32) -> Option<Environ> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .ok()
        .map(Environ)
}

/// The temporary folder of `pid` as it names it (see [`Environ::temp_dir`]); `/tmp` when its
/// environment cannot be read.
pub fn temp_dir(pid: u32) -> PathBuf {
    environ(pid).unwrap_or_default().temp_dir()
}

/// The link naming the namespace of kind `kind` (`mnt`, `pid`, `time`, ...) `pid` is in, e.g.
/// `mnt:[4026531841]`: two processes are in the same namespace when their links are equal.
pub fn namespace(pid: u32, kind: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/{kind}")).ok()
}

/// The namespace of kind `kind` this process is in (see [`namespace`]).
pub fn own_namespace(kind: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/ns/{kind}")).ok()
}

/// `path` as process `pid` names it (in its mount namespace), reached from here through
/// `/proc/PID/root`.
pub fn path_inside(pid: u32, path: &Path) -> PathBuf {
    Path::new(&format!("/proc/{pid}/root")).join(path.strip_prefix("/").unwrap_or(path))
}

/// The lines of a `/proc/<pid>/cgroup` text: (hierarchy id, controllers, group path), one
/// per hierarchy (cgroup v2: one line `0::PATH`); lines without two colons are skipped.
pub fn parse_cgroup_lines(text: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    text.lines().filter_map(|l| {
        let (id, rest) = l.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        Some((id, controllers, path))
    })
}

/// The group paths of a `/proc/<pid>/cgroup` text, one per hierarchy, in order (a path
/// repeated on consecutive lines once).
fn parse_group_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = parse_cgroup_lines(text)
        .map(|(_, _, p)| p.to_string())
        .collect();
    out.dedup();
    out
}

/// The paths of the groups `pid` is in, one per hierarchy, in order (a path repeated on
/// consecutive lines once); None when its `/proc` entry cannot be read.
pub fn group_paths(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cgroup")).ok()?;
    Some(parse_group_paths(&String::from_utf8_lossy(&raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapped_addresses_are_remembered_and_bounded() {
        let mut u = Unmapped::default();
        assert!(!u.contains(0x10));
        u.insert(0x10);
        assert!(u.contains(0x10));
        for ip in 0..Unmapped::MAX as u64 {
            u.insert(0x1000 + ip);
        }
        // Full: it started over.
        assert!(!u.contains(0x10));
        assert!(u.seen.len() <= Unmapped::MAX);
    }

    #[test]
    fn group_paths_one_per_hierarchy() {
        assert_eq!(
            parse_group_paths("0::/system.slice/web.service\n"),
            ["/system.slice/web.service"]
        );
        let v1 = "12:cpu,cpuacct:/docker/abc\n11:memory:/docker/abc\n1:name=systemd:/a:b\nbad\n";
        assert_eq!(parse_group_paths(v1), ["/docker/abc", "/a:b"]);
        assert!(parse_group_paths("").is_empty());
        #[cfg(target_os = "linux")]
        assert!(group_paths(std::process::id()).is_some_and(|p| !p.is_empty()));
    }

    #[test]
    fn the_file_system_uid_and_the_readable_memory() {
        let status = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_fs_uid(status), Some(1003));
        assert_eq!(parse_uid(status), Some(1000));
        assert_eq!(parse_fs_uid("Uid:\t1\t2\n"), None);
        let maps = "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n\
                    00500000-00600000 ---p 00000000 00:00 0 \n\
                    7f0000000000-7f0000002000 rw-p 00000000 00:00 0 [heap]\n";
        assert_eq!(parse_readable_bytes(maps), 0x1000 + 0x2000);
        assert!(readable_bytes(std::process::id()).unwrap() > 0);
    }

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1 2";
        let s = parse_stat(stat).unwrap();
        assert_eq!((s.state, s.parent, s.start_ticks), ('S', 1, 98765));
        // A name that ends in `) ` and holds digits.
        let odd = "7 (x) 1 2) Z 300 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
        let s = parse_stat(odd).unwrap();
        assert_eq!((s.state, s.parent, s.start_ticks), ('Z', 300, 555));
        assert_eq!(parse_stat("42 (x"), None);
        assert_eq!(parse_stat("42 (x) S 1 2 3"), None, "cut before field 22");
        assert_eq!(parse_stat("42 (x) S one 42"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn resident_memory_is_the_vmrss_line_in_bytes() {
        let status = "Name:\tdotnet\nVmPeak:\t  900 kB\nVmRSS:\t  123456 kB\nThreads:\t7\n";
        assert_eq!(parse_resident_bytes(status), Some(123456 * 1024));
        assert_eq!(parse_resident_bytes("VmRSS:\t lots kB\n"), None);
        assert_eq!(parse_resident_bytes("Name:\tx\n"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(!alive(4_294_967), "pid_max is at most 2^22");
        assert_eq!(start_ticks(4_294_967), None);
        let s = stat(me).unwrap();
        assert!(s.parent > 0);
        assert_eq!(s.start_ticks, start_ticks(me).unwrap());
        assert!(age(me).is_some_and(|a| a < Duration::from_secs(24 * 3600)));
        assert!(clock_ticks_per_second().is_some());
        assert!(time_after_boot(s.start_ticks).is_some_and(|t| t <= SystemTime::now()));
        assert_eq!(
            namespace_pid(me),
            nspids(me).and_then(|v| v.last().copied())
        );
        assert!(cmdline(me).is_some_and(|a| !a.is_empty()));
        assert!(comm(me).is_some_and(|c| !c.is_empty() && !c.ends_with('\n')));
        assert!(resident_bytes(me).is_some_and(|b| b > 0));
        assert_eq!(namespace(me, "mnt"), own_namespace("mnt"));
        assert!(environ(me).is_some());
    }

    #[test]
    fn boot_time_and_uptime() {
        let stat = "cpu  1 2 3\nintr 5\nbtime 1764000000\nprocesses 9\n";
        assert_eq!(parse_boot_time(stat), Some(1_764_000_000));
        assert_eq!(parse_boot_time("cpu 1\n"), None);
        assert_eq!(parse_boot_time("btime x\n"), None);
        assert_eq!(parse_uptime("350735.47 234388.90\n"), Some(350_735.47));
        assert_eq!(parse_uptime(""), None);
        assert_eq!(parse_uptime("NaN 1"), None);
    }

    #[test]
    fn nspid_chains() {
        let s = "Name:\tdotnet\nNSpid:\t4242\t7\nPPid:\t1\n";
        assert_eq!(parse_nspids(s), Some(vec![4242, 7]));
        assert_eq!(parse_nspids("NSpid:\t99\n"), Some(vec![99]));
        assert_eq!(parse_nspids("NSpid:\t9\t8\t1\n"), Some(vec![9, 8, 1]));
        assert_eq!(parse_nspids("Name: x\n"), None);
        assert_eq!(parse_nspids("NSpid:\n"), None);
        assert_eq!(parse_nspids("NSpid:\t12\tx\n"), None);
    }

    #[test]
    fn real_uids() {
        let s = "Name:\tx\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_uid(s), Some(1000));
        assert_eq!(parse_uid("Name:\tx\n"), None);
        assert_eq!(parse_uid("Uid:\t\n"), None);
    }

    #[test]
    fn command_lines() {
        assert_eq!(
            parse_cmdline(b"dotnet\0exec\0app.dll\0"),
            ["dotnet", "exec", "app.dll"]
        );
        assert_eq!(parse_cmdline(b"a\0\0b"), ["a", "b"]);
        assert_eq!(parse_cmdline(b"x\xff\0"), ["x\u{fffd}"]);
        assert!(parse_cmdline(b"").is_empty());
    }

    #[test]
    fn map_lines() {
        let libc = "7f0a1c028000-7f0a1c17d000 r-xp 00028000 fe:01 1049                       /usr/lib/x86_64-linux-gnu/lib c.so.6";
        let m = parse_maps_line(libc).unwrap();
        assert_eq!(
            (m.start, m.end, m.offset, m.perms),
            (0x7f0a1c028000, 0x7f0a1c17d000, 0x28000, "r-xp")
        );
        assert!(m.executable());
        assert_eq!(m.file(), Some("/usr/lib/x86_64-linux-gnu/lib c.so.6"));
        let jit = parse_maps_line(
            "7f0a00000000-7f0a00010000 r-xs 00000000 00:01 5    /memfd:doublemapper (deleted)",
        )
        .unwrap();
        assert!(jit.executable() && jit.file().is_none());
        assert_eq!(jit.path, "/memfd:doublemapper (deleted)");
        let anon = parse_maps_line("7f0a00000000-7f0a00010000 rw-p 00000000 00:00 0").unwrap();
        assert!(!anon.executable() && anon.path.is_empty() && anon.file().is_none());
        let heap = parse_maps_line("55d0-55e0 rw-p 00000000 00:00 0          [heap]").unwrap();
        assert_eq!((heap.path, heap.file()), ("[heap]", None));
        for bad in [
            "",
            "garbage",
            "zz-10 r-xp 0 00:00 0",
            "10-20 r-xp xyz 00:00 0",
            "10-20 r-xp",
        ] {
            assert!(parse_maps_line(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn environments() {
        let env = Environ::from_bytes(b"A=1\0TMPDIRX=/no\0TMPDIR=/var/t\0B=x=y\0junk\0".to_vec());
        assert_eq!(env.get("A").as_deref(), Some("1"));
        assert_eq!(env.get("B").as_deref(), Some("x=y"));
        assert_eq!(env.get("C"), None);
        assert_eq!(env.get_bytes("TMPDIR"), Some(&b"/var/t"[..]));
        assert_eq!(env.temp_dir(), PathBuf::from("/var/t"));
        assert_eq!(
            env.pairs(),
            [
                ("A".into(), "1".into()),
                ("TMPDIRX".into(), "/no".into()),
                ("TMPDIR".into(), "/var/t".into()),
                ("B".into(), "x=y".into())
            ]
        );
        let relative = Environ::from_bytes(b"TMPDIR=tmp\0".to_vec());
        assert_eq!(relative.temp_dir(), PathBuf::from("/tmp"));
        assert_eq!(Environ::default().temp_dir(), PathBuf::from("/tmp"));
    }

    #[test]
    fn paths_inside_a_process() {
        assert_eq!(
            path_inside(7, Path::new("/var/tmp")),
            PathBuf::from("/proc/7/root/var/tmp")
        );
    }
}
