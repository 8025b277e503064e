//! clrspy's own provider: the events `clrspy record` splices into a trace (each thread's CPU
//! time, run-queue time and name at every reading, the CPU throttling of the target's cgroup,
//! how readings were taken, the reading ticks, the process's executable mappings, and the names of the precompiled (ReadyToRun) functions the samples
//! fell into, with the identity of their images; the stop trigger that fired; what a ring
//! buffer kept). One definition serves both sides: the recorder builds the events'
//! metadata ([`metadata`]) and payloads (each view's `encode`) from it, and the analysis reads
//! them back with the views' `parse`.
//!
//! The events are self-describing (their metadata declares the fields), so TraceEvent shows
//! them with their field names too.
//!
//! ```
//! use clr_events::clrspy::{ThreadCpu, ids};
//! let mut p = Vec::new();
//! ThreadCpu { thread_id: 42, cpu_ns: 1_500_000, state: b'R' as u16, runqueue_ns: Some(300) }
//!     .encode(&mut p);
//! let t = ThreadCpu::parse(&p).unwrap();
//! assert_eq!((t.thread_id, t.cpu_ns, t.runqueue_ns), (42, 1_500_000, Some(300)));
//! assert_eq!(clr_events::clrspy::event(ids::THREAD_CPU).unwrap().name, "ThreadCpu");
//! ```

use nettrace::{EventMetadata, FieldDesc, FieldType};

use crate::layout::d::{array, string, uint16, uint32, uint64};
use crate::layout::FieldDef;
use crate::layout::Scalar;
use crate::view::{Cursor, Utf16Str, ViewError};

/// The provider's name.
pub const PROVIDER: &str = "clrspy";

/// Metadata ids of the events clrspy splices into a trace start here (the runtime counts its
/// own up from 1): an event whose metadata id is this or more was written by clrspy — the
/// kernel's CPU samples among them, though they are the SampleProfiler provider's.
pub const FIRST_METADATA_ID: u32 = 0x7F00_0000;

/// The capture thread clrspy's spliced events claim (no OS thread has this id).
pub const CAPTURE_THREAD: u64 = 0x00C1_125B_0000_0000;

/// The thread clrspy's bookkeeping events are stamped with: none (all ones, -1 to TraceEvent).
/// The thread an event is about is in its payload. TraceEvent's thread-time view (what
/// `dotnet-trace report topN` and PerfView's thread time stacks count) takes every event of
/// an EventSource-like provider on a thread as a sample of that thread; an event on no thread
/// is not counted there. The kernel's CPU samples are the exception: they are samples, on
/// their thread.
pub const NO_THREAD: u64 = u64::MAX;

/// The first stack id of clrspy's stacks in each sequence-point region (the runtime counts
/// its own up from 1, anew or not, but never this far).
pub const FIRST_STACK_ID: u32 = 0x4000_0000;

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
    /// `CgroupCpu`: the CPU throttling counters of the target's cgroup so far, at a tick.
    pub const CGROUP_CPU: u32 = 10;
    /// `Ring`: once, at the end of a ring buffer's trace: what the ring kept and dropped.
    pub const RING: u32 = 11;
    /// `KernelSample`: a CPU sample the kernel took (`perf_event_open`, `cpu-clock`) of a
    /// thread on a CPU, its thread the payload's. Traces before kept every sample here, the
    /// stack in the payload; since, a sample with managed frames is written as the runtime
    /// writes its own (the SampleProfiler provider's `ThreadSample`, see [`KERNEL_STACK`]) and
    /// only a sample of native code alone (the runtime's own threads, the JIT, the GC: what
    /// the runtime's sampler never sees) is one of these, its stack by a [`KERNEL_STACK`] id in
    /// the payload.
    pub const KERNEL_SAMPLE: u32 = 12;
    /// `KernelSampler`: once, the kernel sampler's rate; at the end, what it counted.
    pub const KERNEL_SAMPLER: u32 = 13;
    /// `NativeSymbol`: the name of a native function the samples hit, by file offsets of
    /// its ELF file.
    pub const NATIVE_SYMBOL: u32 = 14;
    /// `KernelWait`: a thread off its CPU (blocked, or preempted), as the kernel sampler saw
    /// it: its user-space stack when it left, and how long until it came back (the event's
    /// time is its return). Written with its stack in the payload up to a point; since, with
    /// no frames there and the stack by a [`KERNEL_STACK`] id in the payload (not the event's
    /// own: other tools' thread-time views would count an event with a stack as a sample).
    pub const KERNEL_WAIT: u32 = 15;
    /// `KernelStack`: a whole stack the kernel sampler took (native frames too), by the id
    /// the file's stack blocks give it. The kernel's CPU samples are written as the runtime
    /// writes its own (the SampleProfiler provider's `ThreadSample`, the stack an id into the
    /// file's stack blocks), and a stack block holds, for other readers, only the frames
    /// they can name (managed code); this event keeps the whole stack for clrspy. Ids are
    /// those of the sequence-point region the event is in, like the stack blocks'.
    pub const KERNEL_STACK: u32 = 16;
    /// `Inlined`: the JIT compiled `Method` with the app's method `Inlinee` inlined into it
    /// (from the runtime's `Method/InliningSucceeded`, which a side session follows; kept
    /// only when the inlinee is outside the framework and `Method` is not: generated code or
    /// the framework's). One with an empty `Method` says from when
    /// the JIT's inlining was followed: code compiled before it is not described.
    pub const INLINED: u32 = 17;
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
    /// How many of `fields` every trace has: the ones after them were added later, and a
    /// trace written before may lack them (its metadata and payloads end earlier).
    pub required: usize,
}

const THREAD_CPU_FIELDS: &[FieldDef] = &[
    uint32("ThreadID"),
    uint64("CpuTimeNs"),
    uint16("State"),
    // Added later (traces before it end at State).
    uint64("RunQueueNs"),
];
const CGROUP_CPU_FIELDS: &[FieldDef] = &[
    uint16("Version"),
    uint64("Periods"),
    uint64("ThrottledPeriods"),
    uint64("ThrottledNs"),
    uint64("QuotaUs"),
    uint64("PeriodUs"),
    string("Path"),
];
const THREAD_NAME_FIELDS: &[FieldDef] = &[uint32("ThreadID"), string("Name")];
const SAMPLER_INFO_FIELDS: &[FieldDef] = &[uint32("IntervalMs"), string("Source")];
const RECORDER_CPU_FIELDS: &[FieldDef] = &[
    uint32("ProcessID"),
    uint64("CpuTimeNs"),
    // Added later (traces before it end at CpuTimeNs).
    uint64("SessionCpuNs"),
];
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

const RING_FIELDS: &[FieldDef] = &[
    uint64("BudgetBytes"),
    uint64("ReceivedBytes"),
    uint64("DroppedBlocks"),
    uint64("DroppedBytes"),
];

/// The frames are a NetTrace array (type code 19: a `u16` count, then the elements): the
/// count is `FrameCount` here, one field with `Frames` in the metadata.
const KERNEL_SAMPLE_FIELDS: &[FieldDef] = &[
    uint32("ThreadID"),
    uint16("FrameCount"),
    array("Frames", Scalar::U64, "FrameCount"),
    // Added later (traces before it end at Frames, the stack there).
    uint32("StackID"),
];
const KERNEL_SAMPLER_FIELDS: &[FieldDef] = &[
    uint32("RateHz"),
    uint64("Samples"),
    uint64("Lost"),
    uint32("Threads"),
    uint64("ShortWaits"),
    uint64("ShortWaitNs"),
];

const KERNEL_WAIT_FIELDS: &[FieldDef] = &[
    uint32("ThreadID"),
    uint16("FrameCount"),
    array("Frames", Scalar::U64, "FrameCount"),
    uint64("DurationNs"),
    uint32("Flags"),
    // Added later (traces before it end at Flags, the stack in Frames).
    uint32("StackID"),
];

const KERNEL_STACK_FIELDS: &[FieldDef] = &[
    uint32("StackID"),
    uint16("FrameCount"),
    array("Frames", Scalar::U64, "FrameCount"),
];

const INLINED_FIELDS: &[FieldDef] = &[string("Method"), string("Inlinee")];

const NATIVE_SYMBOL_FIELDS: &[FieldDef] = &[
    string("Path"),
    uint64("Offset"),
    uint64("Size"),
    string("Name"),
];

/// Every event of the provider (version 0, level informational).
pub const EVENTS: &[EventDef] = &[
    EventDef {
        id: ids::THREAD_CPU,
        name: "ThreadCpu",
        fields: THREAD_CPU_FIELDS,
        required: 3,
    },
    EventDef {
        id: ids::THREAD_NAME,
        name: "ThreadName",
        fields: THREAD_NAME_FIELDS,
        required: THREAD_NAME_FIELDS.len(),
    },
    EventDef {
        id: ids::SAMPLER_INFO,
        name: "SamplerInfo",
        fields: SAMPLER_INFO_FIELDS,
        required: SAMPLER_INFO_FIELDS.len(),
    },
    EventDef {
        id: ids::TICK,
        name: "Tick",
        fields: &[],
        required: 0,
    },
    EventDef {
        id: ids::MODULE_MAP,
        name: "ModuleMap",
        fields: MODULE_MAP_FIELDS,
        required: MODULE_MAP_FIELDS.len(),
    },
    EventDef {
        id: ids::R2R_METHOD,
        name: "R2RMethod",
        fields: R2R_METHOD_FIELDS,
        required: R2R_METHOD_FIELDS.len(),
    },
    EventDef {
        id: ids::R2R_IMAGE,
        name: "R2RImage",
        fields: R2R_IMAGE_FIELDS,
        required: R2R_IMAGE_FIELDS.len(),
    },
    EventDef {
        id: ids::RECORDER_CPU,
        name: "RecorderCpu",
        fields: RECORDER_CPU_FIELDS,
        required: 2,
    },
    EventDef {
        id: ids::TRIGGER,
        name: "Trigger",
        fields: TRIGGER_FIELDS,
        required: TRIGGER_FIELDS.len(),
    },
    EventDef {
        id: ids::CGROUP_CPU,
        name: "CgroupCpu",
        fields: CGROUP_CPU_FIELDS,
        required: CGROUP_CPU_FIELDS.len(),
    },
    EventDef {
        id: ids::RING,
        name: "Ring",
        fields: RING_FIELDS,
        required: RING_FIELDS.len(),
    },
    EventDef {
        id: ids::KERNEL_SAMPLE,
        name: "KernelSample",
        fields: KERNEL_SAMPLE_FIELDS,
        required: 3,
    },
    EventDef {
        id: ids::KERNEL_SAMPLER,
        name: "KernelSampler",
        fields: KERNEL_SAMPLER_FIELDS,
        required: 4,
    },
    EventDef {
        id: ids::NATIVE_SYMBOL,
        name: "NativeSymbol",
        fields: NATIVE_SYMBOL_FIELDS,
        required: NATIVE_SYMBOL_FIELDS.len(),
    },
    EventDef {
        id: ids::KERNEL_WAIT,
        name: "KernelWait",
        fields: KERNEL_WAIT_FIELDS,
        required: 5,
    },
    EventDef {
        id: ids::KERNEL_STACK,
        name: "KernelStack",
        fields: KERNEL_STACK_FIELDS,
        required: KERNEL_STACK_FIELDS.len(),
    },
    EventDef {
        id: ids::INLINED,
        name: "Inlined",
        fields: INLINED_FIELDS,
        required: INLINED_FIELDS.len(),
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
            fields: metadata_fields(e),
            ..EventMetadata::default()
        })
        .collect()
}

/// Checks that a trace's metadata for event `id` declares the fields this definition reads
/// (same names and types, in order; more fields after them are allowed, and a trace written
/// before a field was added may end before it, see [`EventDef::required`]): a trace written by
/// another layout is reported instead of misread.
pub fn check_metadata(id: u32, fields: &[FieldDesc]) -> Result<(), ViewError> {
    let Some(e) = event(id) else {
        return Ok(());
    };
    let want = metadata_fields(e);
    // Only events without arrays have optional fields; an array's count is no field of its own.
    let required = if e.required == e.fields.len() {
        want.len()
    } else {
        e.required
    };
    for (k, def) in want.iter().enumerate() {
        let ok = match fields.get(k) {
            Some(f) => f.name == def.name && f.ty == def.ty,
            None => k >= required,
        };
        if !ok {
            let field = e
                .fields
                .iter()
                .find(|f| f.name == def.name)
                .map_or("", |f| f.name);
            return Err(ViewError {
                event: e.name,
                version: 0,
                error: crate::DecodeError::WrongType { field },
            });
        }
    }
    Ok(())
}

/// An event's fields as its NetTrace metadata declares them: an array's count field is part
/// of the array there (its `u16` prefix).
fn metadata_fields(e: &EventDef) -> Vec<FieldDesc> {
    use crate::layout::FieldKind;
    let counts: Vec<&str> = e
        .fields
        .iter()
        .filter_map(|f| match f.kind {
            FieldKind::Array { count, .. } => Some(count),
            _ => None,
        })
        .collect();
    e.fields
        .iter()
        .filter(|f| !counts.contains(&f.name))
        .map(|f| FieldDesc {
            name: f.name.into(),
            ty: match f.kind {
                FieldKind::Array { elem, .. } => FieldType::Array(Box::new(scalar_type(elem))),
                FieldKind::Scalar(s) => scalar_type(s),
                // The table above uses no other kinds.
                _ => FieldType::U64,
            },
        })
        .collect()
}

fn scalar_type(s: Scalar) -> FieldType {
    match s {
        Scalar::U16 => FieldType::U16,
        Scalar::U32 => FieldType::U32,
        Scalar::UnicodeString => FieldType::String16,
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
    /// Its scheduler state letter (`R`, `S`, `D`, ...; `X` once when the thread is gone).
    pub state: u16,
    /// Its time so far waiting for a CPU while runnable (schedstat's second field), ns;
    /// `None` where it was not read (traces written before the field, or no schedstat).
    pub runqueue_ns: Option<u64>,
}

/// `RunQueueNs` of a reading without one.
const NO_RUNQUEUE: u64 = u64::MAX;

/// The [`ThreadCpu::state`] of a thread's last reading, written once it is gone.
pub const STATE_GONE: u16 = b'X' as u16;

impl ThreadCpu {
    /// Reads the payload (a payload from before `RunQueueNs` existed ends at `State`).
    pub fn parse(payload: &[u8]) -> Result<ThreadCpu, ViewError> {
        let mut c = cursor(ids::THREAD_CPU, payload)?;
        let thread_id = c.u32("ThreadID")?;
        let cpu_ns = c.u64("CpuTimeNs")?;
        let state = c.u64("State")? as u16;
        // ThreadID, CpuTimeNs and State take 14 bytes.
        let runqueue_ns = if payload.len() > 14 {
            Some(c.u64("RunQueueNs")?).filter(|&v| v != NO_RUNQUEUE)
        } else {
            None
        };
        Ok(ThreadCpu {
            thread_id,
            cpu_ns,
            state,
            runqueue_ns,
        })
    }

    /// Writes the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.thread_id.to_le_bytes());
        out.extend_from_slice(&self.cpu_ns.to_le_bytes());
        out.extend_from_slice(&self.state.to_le_bytes());
        out.extend_from_slice(&self.runqueue_ns.unwrap_or(NO_RUNQUEUE).to_le_bytes());
    }
}

/// The CPU bandwidth counters of a cgroup (its `cpu.stat`, `cpu.max` or
/// `cpu.cfs_quota_us`/`cpu.cfs_period_us`), as read at one moment. The counters are
/// cumulative: a window's throttling is the difference of two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuBandwidth {
    /// The cgroup version: 1 or 2.
    pub version: u16,
    /// Enforcement periods that have elapsed with the group runnable (`nr_periods`).
    pub periods: u64,
    /// Periods in which the group used up its quota and was throttled (`nr_throttled`).
    pub throttled_periods: u64,
    /// Time the group was held off the CPU by throttling, ns (`throttled_usec` in v2,
    /// `throttled_time` in v1).
    pub throttled_ns: u64,
    /// The quota per period, µs; `u64::MAX` when the group has no limit.
    pub quota_us: u64,
    /// The period, µs.
    pub period_us: u64,
}

/// `CgroupCpu`: the CPU bandwidth counters of the cgroup the target runs in, at a reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgroupCpu<'a> {
    /// The counters.
    pub bandwidth: CpuBandwidth,
    /// The cgroup's directory as the recorder saw it (`/sys/fs/cgroup/...`).
    pub path: Utf16Str<'a>,
}

impl<'a> CgroupCpu<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<CgroupCpu<'a>, ViewError> {
        let mut c = cursor(ids::CGROUP_CPU, payload)?;
        let bandwidth = CpuBandwidth {
            version: c.u64("Version")? as u16,
            periods: c.u64("Periods")?,
            throttled_periods: c.u64("ThrottledPeriods")?,
            throttled_ns: c.u64("ThrottledNs")?,
            quota_us: c.u64("QuotaUs")?,
            period_us: c.u64("PeriodUs")?,
        };
        Ok(CgroupCpu {
            bandwidth,
            path: c.str("Path")?,
        })
    }

    /// Writes a payload.
    pub fn encode(b: &CpuBandwidth, path: &str, out: &mut Vec<u8>) {
        out.extend_from_slice(&b.version.to_le_bytes());
        for v in [
            b.periods,
            b.throttled_periods,
            b.throttled_ns,
            b.quota_us,
            b.period_us,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_str(out, path);
    }
}

/// `RecorderCpu`: the recording's own cost, from the recorder's side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecorderCpu {
    /// The recorder's process id.
    pub process_id: u32,
    /// Its CPU time so far (every thread), ns.
    pub cpu_ns: u64,
    /// The CPU time so far of this session's own threads (the one reading the runtime's
    /// stream, and the one decoding it for live consumers), ns: the recording's cost when one
    /// recorder records several processes (`record --children`). None in traces written
    /// before it existed.
    pub session_cpu_ns: Option<u64>,
}

impl RecorderCpu {
    /// Reads the payload (a payload from before `SessionCpuNs` existed ends at `CpuTimeNs`).
    pub fn parse(payload: &[u8]) -> Result<RecorderCpu, ViewError> {
        let mut c = cursor(ids::RECORDER_CPU, payload)?;
        let process_id = c.u32("ProcessID")?;
        let cpu_ns = c.u64("CpuTimeNs")?;
        // ProcessID and CpuTimeNs take 12 bytes.
        let session_cpu_ns = if payload.len() > 12 {
            Some(c.u64("SessionCpuNs")?)
        } else {
            None
        };
        Ok(RecorderCpu {
            process_id,
            cpu_ns,
            session_cpu_ns,
        })
    }

    /// Writes the payload (every field: a `None` session CPU is written as the process's).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.process_id.to_le_bytes());
        out.extend_from_slice(&self.cpu_ns.to_le_bytes());
        out.extend_from_slice(&self.session_cpu_ns.unwrap_or(self.cpu_ns).to_le_bytes());
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

/// A `u32` field added last to an event (`StackID`), at `at`: 0 when the payload ends before
/// it (a trace written before it was added); an error when it is cut.
fn trailing_u32(payload: &[u8], at: usize, event: &'static str) -> Result<u32, ViewError> {
    match payload.get(at..) {
        None | Some([]) => Ok(0),
        Some([a, b, c, d, ..]) => Ok(u32::from_le_bytes([*a, *b, *c, *d])),
        Some(rest) => Err(ViewError {
            event,
            version: 0,
            error: crate::DecodeError::Truncated {
                field: "StackID",
                offset: at,
                needed: 4,
                available: rest.len(),
            },
        }),
    }
}

/// `KernelSample`: the sampled thread and its user-space stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSample<'a> {
    /// The OS thread id.
    pub thread_id: u32,
    /// The return addresses, innermost first, as 8-byte little-endian values (a
    /// [`nettrace::Stack`] of pointer size 8 reads them as they are).
    pub frames: &'a [u8],
    /// The stack's id (a [`KernelStack`]'s) when the frames are not here; 0 for none (and in
    /// traces before).
    pub stack_id: u32,
}

impl<'a> KernelSample<'a> {
    /// The most frames one sample keeps (the array's `u16` count).
    pub const MAX_FRAMES: usize = u16::MAX as usize;

    /// The sampled thread of a kernel sample: for one written as the runtime writes its
    /// samples (a `ThreadSample`: the 4-byte kind as payload), the event's own thread;
    /// for one of clrspy's own `KernelSample`s, the payload's.
    pub fn thread_of(payload: &[u8], event_thread: u64) -> Result<u32, ViewError> {
        if payload.len() == 4 {
            return Ok(u32::try_from(event_thread).unwrap_or(u32::MAX));
        }
        Ok(KernelSample::parse(payload)?.thread_id)
    }

    /// True for a kernel sample written as the runtime's `ThreadSample` of the "external"
    /// kind (1): not a CPU sample but the mark of a thread that blocked there, for other
    /// readers' thread-time views (clrspy reads the wait's own `KernelWait`).
    pub fn is_blocked_mark(payload: &[u8]) -> bool {
        payload == 1u32.to_le_bytes()
    }

    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<KernelSample<'a>, ViewError> {
        let short = |field: &'static str, offset: usize, needed: usize| ViewError {
            event: "KernelSample",
            version: 0,
            error: crate::DecodeError::Truncated {
                field,
                offset,
                needed,
                available: payload.len().saturating_sub(offset),
            },
        };
        let head = payload.get(..6).ok_or_else(|| short("ThreadID", 0, 6))?;
        let thread_id = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let n = usize::from(u16::from_le_bytes([head[4], head[5]]));
        let frames = payload
            .get(6..6 + n * 8)
            .ok_or_else(|| short("Frames", 6, n * 8))?;
        let stack_id = trailing_u32(payload, 6 + n * 8, "KernelSample")?;
        Ok(KernelSample {
            thread_id,
            frames,
            stack_id,
        })
    }

    /// Writes a payload: `frames` innermost first (at most [`Self::MAX_FRAMES`]; the
    /// outermost beyond are left out).
    pub fn encode(thread_id: u32, frames: &[u64], out: &mut Vec<u8>) {
        let frames = &frames[..frames.len().min(Self::MAX_FRAMES)];
        out.reserve(6 + 8 * frames.len());
        out.extend_from_slice(&thread_id.to_le_bytes());
        out.extend_from_slice(&(frames.len() as u16).to_le_bytes());
        for f in frames {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// Writes a payload whose stack is `stack_id`'s (no frames in it).
    pub fn encode_by_id(thread_id: u32, stack_id: u32, out: &mut Vec<u8>) {
        Self::encode(thread_id, &[], out);
        out.extend_from_slice(&stack_id.to_le_bytes());
    }
}

/// `KernelStack`: a whole stack by its id in the file's stack blocks (see
/// [`ids::KERNEL_STACK`]); its payload is laid out as a [`KernelSample`]'s, the id in place of
/// the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelStack<'a> {
    /// The stack's id (the one the file's stack block and the events give it).
    pub id: u32,
    /// The return addresses, innermost first, as 8-byte little-endian values.
    pub frames: &'a [u8],
}

impl<'a> KernelStack<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<KernelStack<'a>, ViewError> {
        let s = KernelSample::parse(payload).map_err(|e| ViewError {
            event: "KernelStack",
            ..e
        })?;
        Ok(KernelStack {
            id: s.thread_id,
            frames: s.frames,
        })
    }

    /// Writes a payload: stack `id`, `frames` innermost first.
    pub fn encode(id: u32, frames: &[u64], out: &mut Vec<u8>) {
        KernelSample::encode(id, frames, out);
    }
}

/// `KernelWait`: a thread off its CPU, its stack when it left, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelWait<'a> {
    /// The thread and its stack (the payload starts as a [`KernelSample`]'s; no frames when
    /// the stack is `stack_id`'s).
    pub sample: KernelSample<'a>,
    /// How long it was off its CPU, ns (the event's time is when it came back).
    pub duration_ns: u64,
    /// True when it was preempted (runnable, waiting for a CPU), not blocked.
    pub preempted: bool,
    /// The stack's id (a [`KernelStack`]'s), 0 for none or in traces before.
    pub stack_id: u32,
}

impl<'a> KernelWait<'a> {
    /// Bit 0 of `Flags`: preempted.
    const PREEMPTED: u32 = 1;

    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<KernelWait<'a>, ViewError> {
        let sample = KernelSample::parse(payload).map_err(|e| ViewError {
            event: "KernelWait",
            ..e
        })?;
        let at = 6 + sample.frames.len();
        let tail = payload.get(at..at + 12).ok_or(ViewError {
            event: "KernelWait",
            version: 0,
            error: crate::DecodeError::Truncated {
                field: "DurationNs",
                offset: at,
                needed: 12,
                available: payload.len().saturating_sub(at),
            },
        })?;
        let mut d = [0u8; 8];
        d.copy_from_slice(&tail[..8]);
        let flags = u32::from_le_bytes([tail[8], tail[9], tail[10], tail[11]]);
        let stack_id = trailing_u32(payload, at + 12, "KernelWait")?;
        Ok(KernelWait {
            sample: KernelSample { stack_id, ..sample },
            duration_ns: u64::from_le_bytes(d),
            preempted: flags & Self::PREEMPTED != 0,
            stack_id,
        })
    }

    /// Writes a payload (frames as [`KernelSample::encode`] writes them, none when the stack
    /// is given by `stack_id`).
    pub fn encode(
        thread_id: u32,
        frames: &[u64],
        duration_ns: u64,
        preempted: bool,
        stack_id: u32,
        out: &mut Vec<u8>,
    ) {
        KernelSample::encode(thread_id, frames, out);
        out.extend_from_slice(&duration_ns.to_le_bytes());
        let flags = if preempted { Self::PREEMPTED } else { 0 };
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&stack_id.to_le_bytes());
    }
}

/// `KernelSampler`: the kernel sampler's rate and, in the last one of a trace, its counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelSampler {
    /// Samples per second per thread on a CPU.
    pub rate_hz: u32,
    /// Samples taken so far.
    pub samples: u64,
    /// Samples the kernel dropped (a full ring buffer) so far.
    pub lost: u64,
    /// Threads sampled so far.
    pub threads: u32,
    /// Waits shorter than the sampler's floor, not stored as `KernelWait` events: how many so
    /// far (0 in traces from before the floor).
    pub short_waits: u64,
    /// Their time in all, ns.
    pub short_wait_ns: u64,
}

impl KernelSampler {
    /// Reads the payload (one from before the short waits were counted ends at `Threads`).
    pub fn parse(payload: &[u8]) -> Result<KernelSampler, ViewError> {
        let mut c = cursor(ids::KERNEL_SAMPLER, payload)?;
        let mut k = KernelSampler {
            rate_hz: c.u32("RateHz")?,
            samples: c.u64("Samples")?,
            lost: c.u64("Lost")?,
            threads: c.u32("Threads")?,
            ..KernelSampler::default()
        };
        // RateHz, Samples, Lost and Threads take 24 bytes.
        if payload.len() > 24 {
            k.short_waits = c.u64("ShortWaits")?;
            k.short_wait_ns = c.u64("ShortWaitNs")?;
        }
        Ok(k)
    }

    /// Writes a payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.rate_hz.to_le_bytes());
        out.extend_from_slice(&self.samples.to_le_bytes());
        out.extend_from_slice(&self.lost.to_le_bytes());
        out.extend_from_slice(&self.threads.to_le_bytes());
        out.extend_from_slice(&self.short_waits.to_le_bytes());
        out.extend_from_slice(&self.short_wait_ns.to_le_bytes());
    }
}

/// `NativeSymbol`: a native function's name by the file offsets of its ELF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeSymbol<'a> {
    /// The file's mapped path.
    pub path: Utf16Str<'a>,
    /// The file offset of the function's start.
    pub offset: u64,
    /// Its size in bytes; 0 when unknown (the name is then the nearest symbol before the
    /// addresses it names: `name+0x…`).
    pub size: u64,
    /// The symbol's name.
    pub name: Utf16Str<'a>,
}

impl<'a> NativeSymbol<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<NativeSymbol<'a>, ViewError> {
        let mut c = cursor(ids::NATIVE_SYMBOL, payload)?;
        Ok(NativeSymbol {
            path: c.str("Path")?,
            offset: c.u64("Offset")?,
            size: c.u64("Size")?,
            name: c.str("Name")?,
        })
    }

    /// Writes a payload.
    pub fn encode(path: &str, offset: u64, size: u64, name: &str, out: &mut Vec<u8>) {
        put_str(out, path);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        put_str(out, name);
    }
}

/// `Inlined`: a method the JIT compiled with one of the app's methods inlined into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inlined<'a> {
    /// The compiled method, `Namespace.Type.Name` as method events name it (empty: the mark
    /// of when inlining began to be followed).
    pub method: Utf16Str<'a>,
    /// The method inlined into it, named the same way.
    pub inlinee: Utf16Str<'a>,
}

impl<'a> Inlined<'a> {
    /// Reads the payload.
    pub fn parse(payload: &'a [u8]) -> Result<Inlined<'a>, ViewError> {
        let mut c = cursor(ids::INLINED, payload)?;
        Ok(Inlined {
            method: c.str("Method")?,
            inlinee: c.str("Inlinee")?,
        })
    }

    /// Writes a payload.
    pub fn encode(method: &str, inlinee: &str, out: &mut Vec<u8>) {
        put_str(out, method);
        put_str(out, inlinee);
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

/// `Ring`: a ring buffer's trace holds only the newest part of the stream; this says how much
/// it was given and how much it dropped (the oldest blocks, by design).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    /// The ring's size, bytes.
    pub budget_bytes: u64,
    /// Bytes of the stream it received.
    pub received_bytes: u64,
    /// Stack, event and sequence-point blocks it dropped (the oldest).
    pub dropped_blocks: u64,
    /// Their bytes.
    pub dropped_bytes: u64,
}

impl Ring {
    /// Reads the payload.
    pub fn parse(payload: &[u8]) -> Result<Ring, ViewError> {
        let mut c = cursor(ids::RING, payload)?;
        Ok(Ring {
            budget_bytes: c.u64("BudgetBytes")?,
            received_bytes: c.u64("ReceivedBytes")?,
            dropped_blocks: c.u64("DroppedBlocks")?,
            dropped_bytes: c.u64("DroppedBytes")?,
        })
    }

    /// Writes the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.budget_bytes,
            self.received_bytes,
            self.dropped_blocks,
            self.dropped_bytes,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
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
#[path = "clrspy_tests.rs"]
mod tests;
