//! What a dump is asked to be (kind, compression, limits) and what writing it gave.

use std::path::PathBuf;
use std::time::Duration;

use diagnostics_client::DumpType;

/// How a dump is compressed as it is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Not at all: the runtime writes the file itself.
    #[default]
    None,
    /// gzip (deflate, level 6 like `gzip -6`): `.dmp.gz`, readable by `gunzip`.
    Gzip,
    /// zstd (level 3): `.dmp.zst`, readable by `zstd -d`.
    Zstd,
}

impl Compression {
    /// Parses `none`, `gzip` (`gz`) or `zstd` (`zst`).
    pub fn parse(s: &str) -> Option<Compression> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "raw" | "" => Some(Compression::None),
            "gzip" | "gz" => Some(Compression::Gzip),
            "zstd" | "zst" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The dump file's extension: `dmp`, `dmp.gz` or `dmp.zst`.
    pub fn extension(self) -> &'static str {
        match self {
            Compression::None => "dmp",
            Compression::Gzip => "dmp.gz",
            Compression::Zstd => "dmp.zst",
        }
    }

    /// What a file compressed so ends in: `.gz`, `.zst`, nothing for none.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Zstd => ".zst",
        }
    }

    /// The command that turns a file compressed so back into the raw core (`gunzip`,
    /// `zstd -d`; None for none).
    pub fn unpack_command(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Gzip => Some("gunzip"),
            Compression::Zstd => Some("zstd -d"),
        }
    }

    /// The name in words (`none`, `gzip`, `zstd`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// What dump to write and how.
#[derive(Clone, Copy, Debug)]
pub struct DumpSpec {
    /// What the dump holds.
    pub kind: DumpType,
    /// How it is compressed.
    pub compress: Compression,
    /// Also have createdump write `<dump>.crashreport.json` (threads, stacks, exception).
    pub crash_report: bool,
    /// How long the runtime may take.
    pub timeout: Duration,
    /// The file written may hold at most this many bytes (a watcher rule's disk budget): a
    /// dump that outgrows it is stopped and removed. None: as large as the disk allows.
    pub max_file_bytes: Option<u64>,
}

impl Default for DumpSpec {
    fn default() -> DumpSpec {
        DumpSpec {
            kind: DumpType::Normal,
            compress: Compression::None,
            crash_report: false,
            timeout: Duration::from_secs(120),
            max_file_bytes: None,
        }
    }
}

/// Bounds on a core read from a stream or file the target's side could feed (a FIFO it can
/// open, a file in its folder), so that an endless or huge source cannot fill the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyLimits {
    /// The most raw bytes read: a larger core cannot be the process's (see `core_limit`).
    pub raw: Option<u64>,
    /// The most bytes written to the file.
    pub file: Option<u64>,
}

/// Room for a core's headers and notes on top of the memory it copies.
const CORE_SLACK: u64 = 256 << 20;

/// The most a core dump of a process with `readable` bytes of readable memory can hold:
/// twice that (it may grow between the reading and the dump), plus room for headers and notes.
pub fn core_limit_for(readable: u64) -> u64 {
    readable.saturating_mul(2).saturating_add(CORE_SLACK)
}

/// [`core_limit_for`] process `pid` as it is now; None when its memory cannot be read.
pub(crate) fn core_limit(pid: u32) -> Option<u64> {
    diagnostics_client::procfs::readable_bytes(pid).map(core_limit_for)
}

/// What writing one dump gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpReport {
    /// The dump file (compressed when asked).
    pub path: PathBuf,
    /// The core's size as createdump wrote it.
    pub raw_bytes: u64,
    /// The file's size on disk (equal to `raw_bytes` without compression).
    pub file_bytes: u64,
    /// True when the core was compressed as it streamed (never on disk raw).
    pub streamed: bool,
    /// From the dump command to the finished file.
    pub elapsed: Duration,
    /// Without streaming: how long the raw write took (the rest of `elapsed` is compression).
    pub(crate) raw_write: Option<Duration>,
    /// The crash report createdump wrote, when asked and present.
    pub crash_report: Option<PathBuf>,
    /// The copy of the target's data access library stored beside the dump (what reads the
    /// dump's runtime structures anywhere: `clrspy dump analyze`), when it could be read.
    pub dac: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_names() {
        assert_eq!(Compression::parse("GZIP"), Some(Compression::Gzip));
        assert_eq!(Compression::parse("zst"), Some(Compression::Zstd));
        assert_eq!(Compression::parse("none"), Some(Compression::None));
        assert_eq!(Compression::parse("lz4"), None);
        assert_eq!(Compression::Gzip.extension(), "dmp.gz");
        assert_eq!(Compression::Zstd.extension(), "dmp.zst");
    }

    #[test]
    fn a_core_may_be_twice_the_memory_and_some() {
        assert_eq!(core_limit_for(0), 256 << 20);
        assert_eq!(core_limit_for(1 << 30), (2 << 30) + (256 << 20));
        assert_eq!(core_limit_for(u64::MAX), u64::MAX);
        assert!(core_limit(std::process::id()).unwrap() > 256 << 20);
    }
}
