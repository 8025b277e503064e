//! clrspy's own provider: the events `clrspy record` splices into a trace (each thread's CPU
//! time and name at every reading, how readings were taken, the reading ticks, the process's
//! executable mappings, and the names of the precompiled (ReadyToRun) functions the samples
//! fell into, with the identity of their images). One definition serves both sides: the recorder builds the events'
//! metadata ([`metadata`]) and payloads (each view's `encode`) from it, and the analysis reads
//! them back with the views' `parse`.
//!
//! The events are self-describing (their metadata declares the fields), so TraceEvent shows
//! them with their field names too.
//!
//! ```
//! use clr_events::clrspy::{ThreadCpu, ids};
//! let mut p = Vec::new();
//! ThreadCpu { thread_id: 42, cpu_ns: 1_500_000, state: b'R' as u16 }.encode(&mut p);
//! let t = ThreadCpu::parse(&p).unwrap();
//! assert_eq!((t.thread_id, t.cpu_ns), (42, 1_500_000));
//! assert_eq!(clr_events::clrspy::event(ids::THREAD_CPU).unwrap().name, "ThreadCpu");
//! ```

use nettrace::{EventMetadata, FieldDesc, FieldType};

use crate::layout::d::{string, uint16, uint32, uint64};
use crate::layout::FieldDef;
use crate::view::{Cursor, Utf16Str, ViewError};

/// The provider's name.
pub const PROVIDER: &str = "clrspy";

/// Event ids.
pub mod ids {
    /// `ThreadCpu`: a thread's total CPU time at a reading.
    pub const THREAD_CPU: u32 = 1;
    /// `ThreadName`.
    pub const THREAD_NAME: u32 = 2;
    /// `SamplerInfo`: once, how readings are taken.
    pub const SAMPLER_INFO: u32 = 3;
    /// `Tick`: every thread's CPU time was read at this time.
    pub const TICK: u32 = 4;
    /// `ModuleMap`: an executable mapping of the process.
    pub const MODULE_MAP: u32 = 5;
    /// `R2RMethod`: the name of a precompiled function's code, by file offsets of its image.
    pub const R2R_METHOD: u32 = 6;
    /// `R2RImage`: the identity (size, MVID) of a ReadyToRun image named by `R2RMethod`s.
    pub const R2R_IMAGE: u32 = 7;
    /// `RecorderCpu`: the recorder's own CPU time so far, at a tick.
    pub const RECORDER_CPU: u32 = 8;
    /// `Trigger`: a stop trigger fired (which, why, and the event that fired it).
    pub const TRIGGER: u32 = 9;
}

/// One event of the provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventDef {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: &'static str,
    /// Its fields, in payload order.
    pub fields: &'static [FieldDef],
}

const THREAD_CPU_FIELDS: &[FieldDef] = &[uint32("ThreadID"), uint64("CpuTimeNs"), uint16("State")];
const THREAD_NAME_FIELDS: &[FieldDef] = &[uint32("ThreadID"), string("Name")];
const SAMPLER_INFO_FIELDS: &[FieldDef] = &[uint32("IntervalMs"), string("Source")];
const RECORDER_CPU_FIELDS: &[FieldDef] = &[uint32("ProcessID"), uint64("CpuTimeNs")];
const MODULE_MAP_FIELDS: &[FieldDef] = &[
    uint64("Start"),
    uint64("End"),
    uint64("Offset"),
    string("Path"),
];

const R2R_METHOD_FIELDS: &[FieldDef] = &[
    string("Path"),
    uint32("Offset"),
    uint32("Size"),
    string("Name"),
];
const R2R_IMAGE_FIELDS: &[FieldDef] = &[string("Path"), uint64("Size"), string("Mvid")];
const TRIGGER_FIELDS: &[FieldDef] = &[
    string("Trigger"),
    string("Reason"),
    string("Provider"),
    string("Event"),
    uint64("EventTimestamp"),
    uint32("AfterMs"),
];

/// Every event of the provider (version 0, level informational).
pub const EVENTS: &[EventDef] = &[
    EventDef {
        id: ids::THREAD_CPU,
        name: "ThreadCpu",
        fields: THREAD_CPU_FIELDS,
    },
    EventDef {
        id: ids::THREAD_NAME,
        name: "ThreadName",
        fields: THREAD_NAME_FIELDS,
    },
    EventDef {
        id: ids::SAMPLER_INFO,
        name: "SamplerInfo",
        fields: SAMPLER_INFO_FIELDS,
    },
    EventDef {
        id: ids::TICK,
        name: "Tick",
        fields: &[],
    },
    EventDef {
        id: ids::MODULE_MAP,
        name: "ModuleMap",
        fields: MODULE_MAP_FIELDS,
    },
    EventDef {
        id: ids::R2R_METHOD,
        name: "R2RMethod",
        fields: R2R_METHOD_FIELDS,
    },
    EventDef {
        id: ids::R2R_IMAGE,
        name: "R2RImage",
        fields: R2R_IMAGE_FIELDS,
    },
    EventDef {
        id: ids::RECORDER_CPU,
        name: "RecorderCpu",
        fields: RECORDER_CPU_FIELDS,
    },
    EventDef {
        id: ids::TRIGGER,
        name: "Trigger",
        fields: TRIGGER_FIELDS,
    },
];

/// The definition of event `id`.
pub fn event(id: u32) -> Option<&'static EventDef> {
    EVENTS.iter().find(|e| e.id == id)
}

/// The events' NetTrace metadata (provider, id, name, version 0, level 4, fields), in
/// [`EVENTS`] order.
pub fn metadata() -> Vec<EventMetadata> {
    EVENTS
        .iter()
        .map(|e| EventMetadata {
            provider: PROVIDER.into(),
            event_id: e.id,
            event_name: e.name.into(),
            version: 0,
            level: 4,
            fields: e
                .fields
                .iter()
                .map(|f| FieldDesc {
                    name: f.name.into(),
                    ty: field_type(f),
                })
                .collect(),
            ..EventMetadata::default()
        })
        .collect()
}

/// Checks that a trace's metadata for event `id` declares the fields this definition reads
/// (same names and types, in order; more fields after them are allowed): a trace written by
/// another layout is reported instead of misread.
pub fn check_metadata(id: u32, fields: &[FieldDesc]) -> Result<(), ViewError> {
    let Some(e) = event(id) else {
        return Ok(());
    };
    for (k, def) in e.fields.iter().enumerate() {
        let ok = fields
            .get(k)
            .is_some_and(|f| f.name == def.name && f.ty == field_type(def));
        if !ok {
            return Err(ViewError {
                event: e.name,
                version: 0,
                error: crate::DecodeError::WrongType { field: def.name },
            });
        }
    }
    Ok(())
}

fn field_type(f: &FieldDef) -> FieldType {
    use crate::layout::{FieldKind, Scalar};
    match f.kind {
        FieldKind::Scalar(Scalar::U16) => FieldType::U16,
        FieldKind::Scalar(Scalar::U32) => FieldType::U32,
        FieldKind::Scalar(Scalar::UnicodeString) => FieldType::String16,
        // The table above uses only these four.
        _ => FieldType::U64,
    }
}

fn cursor<'a>(id: u32, payload: &'a [u8]) -> Result<Cursor<'a>, ViewError> {
    let (name, fields) = event(id).map_or(("clrspy event", &[][..]), |e| (e.name, e.fields));
    Cursor::new(name, 0, fields, payload, 8)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    for u in s.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out.extend_from_slice(&[0, 0]);
}

/// `ThreadCpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadCpu {
    /// The OS thread id.
    pub thread_id: u32,
    /// Its CPU time so far, ns.
    pub cpu_ns: u64,
    /// Its scheduler state letter (`R`, `S`, `D`, ...).
    pub state: u16,
}

impl ThreadCpu {
    /// Reads the payload.
    pub fn parse(payload: &[u8]) -> Result<ThreadCpu, ViewError> {
        let mut c = cursor(ids::THREAD_CPU, payload)?;
        Ok(ThreadCpu {
            thread_id: c.u32("ThreadID")?,
            cpu_ns: c.u64("CpuTimeNs")?,
            state: c.u64("State")? as u16,
        })
    }

    /// Writes the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.thread_id.to_le_bytes());
        out.extend_from_slice(&self.cpu_ns.to_le_bytes());
        out.extend_from_slice(&self.state.to_le_bytes());
    }
}

/// `RecorderCpu`: the recording's own cost, from the recorder's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecorderCpu {
    /// The recorder's process id.
    pub process_id: u32,
    /// Its CPU time so far (every thread), ns.
    pub cpu_ns: u64,
}

impl RecorderCpu {
    /// Reads the payload.
    pub fn parse(payload: &[u8]) -> Result<RecorderCpu, ViewError> {
        let mut c = cursor(ids::RECORDER_CPU, payload)?;
        Ok(RecorderCpu {
            process_id: c.u32("ProcessID")?,
            cpu_ns: c.u64("CpuTimeNs")?,
        })
    }

    /// Writes the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.process_id.to_le_bytes());
        out.extend_from_slice(&self.cpu_ns.to_le_bytes());
    }
}

/// `ThreadName`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadName<'a> {
    /// The OS thread id.
    pub thread_id: u32,
    /// Its name.
    pub name: Utf16Str<'a>,
}

impl<'a> ThreadName<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<ThreadName<'a>, ViewError> {
        let mut c = cursor(ids::THREAD_NAME, payload)?;
        Ok(ThreadName {
            thread_id: c.u32("ThreadID")?,
            name: c.str("Name")?,
        })
    }

    /// Writes a payload.
    pub fn encode(thread_id: u32, name: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&thread_id.to_le_bytes());
        put_str(out, name);
    }
}

/// `SamplerInfo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplerInfo<'a> {
    /// The reading interval, ms.
    pub interval_ms: u32,
    /// Where readings come from (`schedstat` or `stat`).
    pub source: Utf16Str<'a>,
}

impl<'a> SamplerInfo<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<SamplerInfo<'a>, ViewError> {
        let mut c = cursor(ids::SAMPLER_INFO, payload)?;
        Ok(SamplerInfo {
            interval_ms: c.u32("IntervalMs")?,
            source: c.str("Source")?,
        })
    }

    /// Writes a payload.
    pub fn encode(interval_ms: u32, source: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&interval_ms.to_le_bytes());
        put_str(out, source);
    }
}

/// `Trigger`: the stop trigger that fired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger<'a> {
    /// The trigger as written (`exception=System.Net.*`).
    pub trigger: Utf16Str<'a>,
    /// Why it fired, in words.
    pub reason: Utf16Str<'a>,
    /// The firing event's provider (empty for the target's exit).
    pub provider: Utf16Str<'a>,
    /// The firing event's name.
    pub event: Utf16Str<'a>,
    /// The firing event's timestamp, in the trace's clock ticks (0 when none).
    pub event_timestamp: u64,
    /// How long recording went on after it fired, ms.
    pub after_ms: u32,
}

impl<'a> Trigger<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<Trigger<'a>, ViewError> {
        let mut c = cursor(ids::TRIGGER, payload)?;
        Ok(Trigger {
            trigger: c.str("Trigger")?,
            reason: c.str("Reason")?,
            provider: c.str("Provider")?,
            event: c.str("Event")?,
            event_timestamp: c.u64("EventTimestamp")?,
            after_ms: c.u32("AfterMs")?,
        })
    }

    /// Writes a payload.
    pub fn encode(texts: [&str; 4], event_timestamp: u64, after_ms: u32, out: &mut Vec<u8>) {
        for t in texts {
            put_str(out, t);
        }
        out.extend_from_slice(&event_timestamp.to_le_bytes());
        out.extend_from_slice(&after_ms.to_le_bytes());
    }
}

/// `ModuleMap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleMap<'a> {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub offset: u64,
    /// The file's path.
    pub path: Utf16Str<'a>,
}

impl<'a> ModuleMap<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<ModuleMap<'a>, ViewError> {
        let mut c = cursor(ids::MODULE_MAP, payload)?;
        Ok(ModuleMap {
            start: c.u64("Start")?,
            end: c.u64("End")?,
            offset: c.u64("Offset")?,
            path: c.str("Path")?,
        })
    }

    /// Writes a payload.
    pub fn encode(start: u64, end: u64, offset: u64, path: &str, out: &mut Vec<u8>) {
        for v in [start, end, offset] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_str(out, path);
    }
}

/// `R2RMethod`: a precompiled function's code at file offsets `[offset, offset + size)` of
/// the image at `path` (the path of its `ModuleMap`), and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2rMethod<'a> {
    /// The image's path.
    pub path: Utf16Str<'a>,
    /// File offset of the code's start.
    pub offset: u32,
    /// The code's size.
    pub size: u32,
    /// The method's name, `Namespace.Type.Method`.
    pub name: Utf16Str<'a>,
}

impl<'a> R2rMethod<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<R2rMethod<'a>, ViewError> {
        let mut c = cursor(ids::R2R_METHOD, payload)?;
        Ok(R2rMethod {
            path: c.str("Path")?,
            offset: c.u32("Offset")?,
            size: c.u32("Size")?,
            name: c.str("Name")?,
        })
    }

    /// Writes a payload.
    pub fn encode(path: &str, offset: u32, size: u32, name: &str, out: &mut Vec<u8>) {
        put_str(out, path);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        put_str(out, name);
    }
}

/// `R2RImage`: the identity of a ReadyToRun image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2rImage<'a> {
    /// The image's path.
    pub path: Utf16Str<'a>,
    /// Its size in bytes.
    pub size: u64,
    /// Its MVID, 32 hex digits (the 16 bytes in file order).
    pub mvid: Utf16Str<'a>,
}

impl<'a> R2rImage<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<R2rImage<'a>, ViewError> {
        let mut c = cursor(ids::R2R_IMAGE, payload)?;
        Ok(R2rImage {
            path: c.str("Path")?,
            size: c.u64("Size")?,
            mvid: c.str("Mvid")?,
        })
    }

    /// Writes a payload.
    pub fn encode(path: &str, size: u64, mvid: &str, out: &mut Vec<u8>) {
        put_str(out, path);
        out.extend_from_slice(&size.to_le_bytes());
        put_str(out, mvid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each encoder writes what its metadata declares: nettrace's metadata-driven decoder
    /// reads every field back.
    #[test]
    fn encoders_match_the_metadata() {
        let md = metadata();
        assert_eq!(md.len(), EVENTS.len());
        let mut p = Vec::new();
        ModuleMap::encode(0x1000, 0x2000, 0x40, "/usr/lib/libcoreclr.so", &mut p);
        let m = ModuleMap::parse(&p).unwrap();
        assert_eq!((m.start, m.end, m.offset), (0x1000, 0x2000, 0x40));
        assert_eq!(m.path.to_string(), "/usr/lib/libcoreclr.so");
        let mm = md.iter().find(|m| m.event_name == "ModuleMap").unwrap();
        let names: Vec<&str> = mm.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["Start", "End", "Offset", "Path"]);
        assert_eq!(mm.fields[3].ty, FieldType::String16);

        p.clear();
        ThreadName::encode(7, "worker", &mut p);
        let t = ThreadName::parse(&p).unwrap();
        assert_eq!((t.thread_id, t.name.to_string().as_str()), (7, "worker"));
        p.clear();
        p.clear();
        Trigger::encode(["gen2", "a gen2 GC", "rt", "GC/Start"], 77, 5000, &mut p);
        let t = Trigger::parse(&p).unwrap();
        assert!(t.trigger.eq_str("gen2") && t.event.eq_str("GC/Start"));
        assert_eq!((t.event_timestamp, t.after_ms), (77, 5000));
        p.clear();
        SamplerInfo::encode(20, "schedstat", &mut p);
        assert!(SamplerInfo::parse(&p).unwrap().source.eq_str("schedstat"));
        for m in &md {
            assert_eq!(check_metadata(m.event_id, &m.fields), Ok(()));
        }
        let mut other = mm.fields.clone();
        other.swap(0, 1);
        let e = check_metadata(ids::MODULE_MAP, &other).unwrap_err();
        assert!(
            e.to_string().contains("ModuleMap") && e.to_string().contains("Start"),
            "{e}"
        );
        p.clear();
        R2rMethod::encode("/x/System.Net.Sockets.dll", 0xd460, 0x70, "A.B.C", &mut p);
        let r = R2rMethod::parse(&p).unwrap();
        assert_eq!((r.offset, r.size), (0xd460, 0x70));
        assert!(r.path.eq_str("/x/System.Net.Sockets.dll") && r.name.eq_str("A.B.C"));
        p.clear();
        R2rImage::encode("/x/a.dll", 1234, "00ff", &mut p);
        let i = R2rImage::parse(&p).unwrap();
        assert_eq!(i.size, 1234);
        assert!(i.mvid.eq_str("00ff"));
        p.clear();
        RecorderCpu {
            process_id: 9,
            cpu_ns: 1234,
        }
        .encode(&mut p);
        assert_eq!(RecorderCpu::parse(&p).unwrap().cpu_ns, 1234);
        let rc = md.iter().find(|m| m.event_name == "RecorderCpu").unwrap();
        assert_eq!(rc.fields.len(), 2);
        let e = ThreadCpu::parse(&[1, 0, 0, 0, 5]).unwrap_err();
        assert_eq!(e.event, "ThreadCpu");
        assert!(e.to_string().contains("CpuTimeNs"), "{e}");
    }
}
