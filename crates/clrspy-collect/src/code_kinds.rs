//! Which code an address of a kernel-sampled stack is in: native code (an ELF file the
//! process mapped — the runtime, the JIT, libc, the app's own libraries — or the vDSO) or
//! the runtime's managed code (JIT'd code in anonymous or double-mapped memory, ReadyToRun
//! code of a mapped `.dll`). The managed frames of a stack are what the runtime's own sampler
//! would have reported: the projection other readers of the trace are given (they cannot
//! name the rest), while clrspy keeps the whole stack.

use std::time::{Duration, Instant};

/// How often the maps may be read again for an address in no known mapping (the drains are
/// 20 ms apart: once a drain at most).
const REREAD_EVERY: Duration = Duration::from_millis(20);

/// The executable mappings of a process, each marked native or managed.
#[derive(Debug)]
pub(crate) struct CodeKinds {
    pid: u32,
    /// (start, end, native), sorted by start.
    ranges: Vec<(u64, u64, bool)>,
    read_at: Option<Instant>,
    /// Addresses in no mapping even after a read of the maps.
    unmapped: diagnostics_client::procfs::Unmapped,
}

/// True when a mapping of `path` (as `/proc/PID/maps` writes it) holds native code.
pub(crate) fn native_path(path: &str) -> bool {
    if path == "[vdso]" || path == "[vsyscall]" {
        return true;
    }
    if !path.starts_with('/') || path.starts_with("/memfd:") {
        // Anonymous memory, the runtime's double-mapped code: JIT'd code and its stubs.
        return false;
    }
    let file = path.strip_suffix(" (deleted)").unwrap_or(path);
    let lower = file.to_ascii_lowercase();
    !(lower.ends_with(".dll") || lower.ends_with(".exe"))
}

impl CodeKinds {
    /// The mappings of process `pid`, read when first asked.
    pub(crate) fn new(pid: u32) -> CodeKinds {
        CodeKinds {
            pid,
            ranges: Vec::new(),
            read_at: None,
            unmapped: Default::default(),
        }
    }

    fn read(&mut self) {
        self.read_at = Some(Instant::now());
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/maps", self.pid)) else {
            return;
        };
        self.ranges = parse(&text);
    }

    /// True when any of `frames` is managed code.
    pub(crate) fn any_managed(&mut self, frames: &[u64]) -> bool {
        frames.iter().any(|&ip| self.kind(ip) == Some(false))
    }

    /// Whether `ip` is in native code; None when it is in no executable mapping (read again
    /// at most every 20 ms).
    fn kind(&mut self, ip: u64) -> Option<bool> {
        if self.read_at.is_none() {
            self.read();
        }
        if let Some(k) = find(&self.ranges, ip) {
            return Some(k);
        }
        if !self.unmapped.contains(ip) && self.read_at.is_none_or(|t| t.elapsed() >= REREAD_EVERY) {
            self.read();
            let k = find(&self.ranges, ip);
            if k.is_none() {
                self.unmapped.insert(ip);
            }
            return k;
        }
        None
    }

    /// The stack `frames` cut where a walk left code (a return address in no executable
    /// mapping: the frame-pointer chain went through data, and what follows is noise —
    /// measured: one address of the heap 125 times over), and of that the frames in managed
    /// code, both innermost first.
    pub(crate) fn split(&mut self, frames: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let mut whole = Vec::with_capacity(frames.len());
        let mut managed = Vec::new();
        for &ip in frames {
            match self.kind(ip) {
                None => break,
                Some(native) => {
                    whole.push(ip);
                    if !native {
                        managed.push(ip);
                    }
                }
            }
        }
        (whole, managed)
    }
}

/// The executable mappings of a maps text, sorted.
fn parse(text: &str) -> Vec<(u64, u64, bool)> {
    let mut v: Vec<(u64, u64, bool)> = text
        .lines()
        .filter_map(diagnostics_client::procfs::parse_maps_line)
        .filter(|m| m.executable())
        .map(|m| (m.start, m.end, native_path(m.path)))
        .collect();
    v.sort_unstable_by_key(|r| r.0);
    v
}

fn find(ranges: &[(u64, u64, bool)], ip: u64) -> Option<bool> {
    let i = ranges.partition_point(|r| r.0 <= ip).checked_sub(1)?;
    let (_, end, native) = ranges[i];
    (ip < end).then_some(native)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_and_managed_code_are_told_apart() {
        assert!(native_path("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(native_path(
            "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/libcoreclr.so"
        ));
        assert!(native_path("/usr/bin/dotnet"));
        assert!(native_path("[vdso]"));
        assert!(!native_path(
            "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/System.Private.CoreLib.dll"
        ));
        assert!(!native_path("/app/MyApp.DLL (deleted)"));
        assert!(!native_path("/memfd:doublemapper (deleted)"));
        assert!(!native_path(""));
        let maps = "7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n\
                    7f0000002000-7f0000003000 r-xp 00000000 00:00 0 \n\
                    7f0000004000-7f0000005000 rw-p 00000000 00:00 0 /usr/lib/libc.so.6\n\
                    7ffff0000000-7ffff0001000 r-xp 00000000 00:00 0 [vdso]\n";
        let r = parse(maps);
        assert_eq!(r.len(), 3);
        assert_eq!(find(&r, 0x7f00_0000_0800), Some(true));
        assert_eq!(find(&r, 0x7f00_0000_2800), Some(false));
        assert_eq!(find(&r, 0x7f00_0000_4800), None, "not executable");
        assert_eq!(find(&r, 0x7fff_f000_0010), Some(true));
        assert_eq!(find(&r, 1), None);
        let mut k = CodeKinds {
            pid: 0,
            ranges: r,
            read_at: Some(Instant::now()),
            unmapped: Default::default(),
        };
        let (jit, libc, heap) = (0x7f00_0000_2800, 0x7f00_0000_0800, 0x5609_ba1f_b5e0);
        assert_eq!(
            k.split(&[libc, jit, jit + 8, heap, heap, jit]),
            (vec![libc, jit, jit + 8], vec![jit, jit + 8])
        );
    }

    #[test]
    fn this_process_s_own_code_is_native() {
        let mut k = CodeKinds::new(std::process::id());
        let here = this_process_s_own_code_is_native as *const () as u64;
        assert_eq!(k.kind(here), Some(true));
        // Past an address in no code: noise, cut.
        assert_eq!(k.split(&[here, 16, here]), (vec![here], vec![]));
    }
}
