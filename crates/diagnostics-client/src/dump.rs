//! The Dump command set: asking the runtime to write a core dump of its own process
//! (GenerateCoreDump 3, 2 or 1: the newest the runtime knows). The runtime runs `createdump`,
//! so the dump is written by the target's side, at a path the target can write.

use std::time::Duration;

use crate::ipc::{put_string, Connector, Error, Result};

const DUMP_COMMAND_SET: u8 = 0x01;
const GENERATE_CORE_DUMP: u8 = 0x01;
const GENERATE_CORE_DUMP2: u8 = 0x02;
const GENERATE_CORE_DUMP3: u8 = 0x03;

/// What a dump holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpType {
    /// Stacks and module lists, little heap ("mini").
    Normal = 1,
    /// Everything the managed heap needs for heap analysis.
    WithHeap = 2,
    /// A small dump with personal data removed.
    Triage = 3,
    /// All process memory.
    Full = 4,
}

impl DumpType {
    /// A dump type by name, as the flags and the rules file write it (any case): `mini`
    /// (or `normal`), `heap` (or `withheap`), `triage`, `full`.
    ///
    /// ```
    /// use diagnostics_client::DumpType;
    /// assert_eq!(DumpType::from_name("Heap"), Some(DumpType::WithHeap));
    /// assert_eq!(DumpType::from_name("tiny"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<DumpType> {
        match name.to_ascii_lowercase().as_str() {
            "mini" | "normal" => Some(DumpType::Normal),
            "heap" | "withheap" => Some(DumpType::WithHeap),
            "triage" => Some(DumpType::Triage),
            "full" => Some(DumpType::Full),
            _ => None,
        }
    }
}

/// Extra dump options (GenerateCoreDump2+).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpFlags {
    /// The runtime logs the dump's progress to the target's console.
    pub logging: bool,
    /// More logging.
    pub verbose_logging: bool,
    /// Also write a crash report (JSON) beside the dump.
    pub crash_report: bool,
}

impl DumpFlags {
    fn bits(self) -> u32 {
        u32::from(self.logging)
            | u32::from(self.verbose_logging) << 1
            | u32::from(self.crash_report) << 2
    }
}

fn payload(path: &str, kind: DumpType, flags: u32) -> Vec<u8> {
    let mut p = Vec::new();
    put_string(&mut p, Some(path));
    p.extend_from_slice(&(kind as u32).to_le_bytes());
    p.extend_from_slice(&flags.to_le_bytes());
    p
}

/// Asks the runtime to write a core dump of its process to `path` (as the target sees the
/// file system). Waits up to `timeout` for the dump to be written: full dumps of large processes
/// take a while.
pub fn generate_core_dump(
    to: &dyn Connector,
    path: &str,
    kind: DumpType,
    flags: DumpFlags,
    timeout: Duration,
) -> Result<()> {
    let mut last = None;
    for (id, version) in [
        (GENERATE_CORE_DUMP3, 3u8),
        (GENERATE_CORE_DUMP2, 2),
        (GENERATE_CORE_DUMP, 1),
    ] {
        // Version 1's last field is a logging on/off switch, not flags.
        let bits = if version == 1 {
            u32::from(flags.logging)
        } else {
            flags.bits()
        };
        let mut c = to.open(timeout)?;
        c.send(DUMP_COMMAND_SET, id, &payload(path, kind, bits))?;
        match c.read_reply_with(version == 3) {
            Ok(body) => {
                return match crate::ipc::PayloadReader::new(&body).u32() {
                    None | Some(0) => Ok(()),
                    Some(hresult) => Err(Error::Runtime {
                        hresult,
                        message: None,
                    }),
                }
            }
            Err(e) if e.is_unknown_command() => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(Error::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_layout() {
        let p = payload(
            "/d",
            DumpType::WithHeap,
            DumpFlags {
                crash_report: true,
                ..Default::default()
            }
            .bits(),
        );
        assert_eq!(&p[..4], &3u32.to_le_bytes());
        assert_eq!(&p[4..10], &[b'/', 0, b'd', 0, 0, 0]);
        assert_eq!(&p[10..14], &2u32.to_le_bytes());
        assert_eq!(&p[14..18], &4u32.to_le_bytes());
    }
}
