//! Typed payloads of the .NET runtime's well-known EventPipe events.
//!
//! The runtime writes most of its own events (GC, JIT, loader, exceptions, contention, thread
//! pool, rundown, the sample profiler) with metadata that names the event but declares no
//! fields, so a reader needs built-in layouts. This crate holds them, keyed by provider name,
//! event id and version, and decodes payloads into [`nettrace::Value`]s with the payload field
//! names TraceEvent uses. It also names events the way TraceEvent (PerfView) prints them.
//!
//! ```
//! use clr_events::{layout, event_name, RUNTIME_PROVIDER};
//!
//! // GCStart_V2: Count, Depth, Reason, Type, ClrInstanceID, ClientSequenceNumber.
//! let mut payload = Vec::new();
//! for v in [7u32, 2, 1, 0] {
//!     payload.extend(v.to_le_bytes());
//! }
//! payload.extend(0u16.to_le_bytes());
//! payload.extend(42u64.to_le_bytes());
//!
//! let l = layout(RUNTIME_PROVIDER, 1, 2).unwrap();
//! assert_eq!(l.name, "GC/Start");
//! let d = l.decode(&payload, 8);
//! assert!(d.is_complete());
//! assert_eq!(d.u64("Count"), Some(7));
//! assert_eq!(d.u64("ClientSequenceNumber"), Some(42));
//! assert_eq!(event_name(RUNTIME_PROVIDER, 80, 1), Some("Exception/Start"));
//! ```
//!
//! On top of the layouts sit typed views, the event contracts the models read:
//! [`runtime`] (ids, GC, allocation, exceptions, contention, thread pool, methods — with the
//! runtime's value maps as enums), [`loader`] (assembly loading: each load, resolution stage,
//! handler and probed file), [`heapdump`] (the GC heap dump's bulk events as lazy, fallible
//! iterators) and [`clrspy`] (clrspy's own provider, one definition for writer and reader).
//! Beside them, the written forms of what a user asks for by event: [`provider_spec`],
//! [`counter_spec`] and [`trigger_spec`] (a recording's stop triggers).
//! A view's `parse` reads only the fields it needs, borrows strings from the payload, and fails
//! with a [`ViewError`] naming the event and field where the payload is short.
//!
//! Versions: every version the manifest defines has its own layout. For versions newer than
//! any known here, [`layout`] returns the highest known version not above the one asked for —
//! the runtime appends fields in new versions (only a few V1 templates of .NET Framework days
//! reordered fields) — and [`Decoded::extra_bytes`] counts the bytes after the last known field.
//!
//! Field names follow TraceEvent's payload names, which equal the manifest's except for
//! `GC/MarkWithType` (`Promoted`, manifest `Bytes`), `GC/Join` (`ID`, manifest `JoinID`) and
//! `EventSourceEvent` (`Name`, manifest `EventName`). Fields TraceEvent skips (`Reserved1` of
//! the module events) or computes (`OptimizationTier`, `TotalHeapSize`, `ModuleILFileName`) are
//! decoded as the manifest lays them out or not at all. Arrays are decoded too (`ILOffsets`,
//! `Values` of the bulk and history events), as [`Value::Array`]s of values or of
//! [`Value::Object`]s.
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod any;
pub mod aspnet;
pub mod clrspy;
pub mod counter_spec;
pub mod counters;
pub mod heapdump;
mod layout;
pub mod loader;
pub mod method_names;
mod names;
pub mod net_http;
pub mod profiles;
pub mod provider_spec;
pub mod runtime;
mod tables;
mod templates;
pub mod threading;
pub mod trigger_spec;
mod value_maps;
mod view;

use std::sync::OnceLock;

pub use any::{decode_any, EventFields};
pub use layout::{DecodeError, Decoded, FieldDef, FieldKind, Scalar};
pub use view::{Element, Elements, Ints, Utf16Str, ViewError};

pub use nettrace::{Field, Value};

/// The CLR runtime provider.
pub const RUNTIME_PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// The CLR rundown provider (method, module and assembly enumeration at session end).
pub const RUNDOWN_PROVIDER: &str = "Microsoft-Windows-DotNETRuntimeRundown";
/// The CLR private provider.
pub const PRIVATE_PROVIDER: &str = "Microsoft-Windows-DotNETRuntimePrivate";
/// EventPipe's sampling profiler.
pub const SAMPLE_PROFILER_PROVIDER: &str = "Microsoft-DotNETCore-SampleProfiler";
/// EventPipe's own provider (the `ProcessInfo` event).
pub const EVENTPIPE_PROVIDER: &str = "Microsoft-DotNETCore-EventPipe";

/// A provider this crate has layouts or names for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KnownProvider {
    /// [`RUNTIME_PROVIDER`].
    Runtime,
    /// [`RUNDOWN_PROVIDER`].
    Rundown,
    /// [`PRIVATE_PROVIDER`].
    Private,
    /// [`SAMPLE_PROFILER_PROVIDER`].
    SampleProfiler,
    /// [`EVENTPIPE_PROVIDER`].
    EventPipe,
}

impl KnownProvider {
    /// Every known provider.
    pub const ALL: [KnownProvider; 5] = [
        KnownProvider::Runtime,
        KnownProvider::Rundown,
        KnownProvider::Private,
        KnownProvider::SampleProfiler,
        KnownProvider::EventPipe,
    ];

    /// The provider's name as it appears in traces.
    pub const fn name(self) -> &'static str {
        match self {
            KnownProvider::Runtime => RUNTIME_PROVIDER,
            KnownProvider::Rundown => RUNDOWN_PROVIDER,
            KnownProvider::Private => PRIVATE_PROVIDER,
            KnownProvider::SampleProfiler => SAMPLE_PROFILER_PROVIDER,
            KnownProvider::EventPipe => EVENTPIPE_PROVIDER,
        }
    }
}

/// The known provider called `name` (ASCII case-insensitive). Provider GUIDs are not accepted.
///
/// ```
/// use clr_events::{known_provider, KnownProvider};
/// assert_eq!(
///     known_provider("microsoft-windows-dotnetruntime"),
///     Some(KnownProvider::Runtime)
/// );
/// assert_eq!(known_provider("System.Runtime"), None);
/// ```
pub fn known_provider(name: &str) -> Option<KnownProvider> {
    KnownProvider::ALL
        .into_iter()
        .find(|p| p.name().eq_ignore_ascii_case(name))
}

/// The payload layout of one version of one event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventLayout {
    /// The provider that writes the event.
    pub provider: KnownProvider,
    /// The event id.
    pub event_id: u16,
    /// The event version this layout describes.
    pub version: u8,
    /// The event's name: TraceEvent's `Task/Opcode` name when TraceEvent knows the event (see
    /// [`event_name`]), else the manifest's event symbol (e.g. `IncreaseMemoryPressure`).
    pub name: &'static str,
    fields: &'static [FieldDef],
}

impl EventLayout {
    /// Decodes a payload written by a process whose pointers are `pointer_size` bytes (4 or 8).
    /// Never panics, whatever the bytes; the fields decoded before a problem are kept.
    pub fn decode(&self, payload: &[u8], pointer_size: u8) -> Decoded {
        layout::decode_fields(self.fields, payload, pointer_size)
    }

    /// Top-level field names, in payload order.
    pub fn field_names(&self) -> impl Iterator<Item = &'static str> {
        self.fields.iter().map(|f| f.name)
    }

    /// The field definitions, in payload order.
    pub fn fields(&self) -> &'static [FieldDef] {
        self.fields
    }
}

fn index() -> &'static [&'static EventLayout] {
    static INDEX: OnceLock<Vec<&'static EventLayout>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut v: Vec<&'static EventLayout> = tables::LAYOUTS.iter().collect();
        v.sort_by_key(|l| (l.provider, l.event_id, l.version));
        v
    })
}

fn name_index() -> &'static [(KnownProvider, u16, &'static str)] {
    static INDEX: OnceLock<Vec<(KnownProvider, u16, &'static str)>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut v = names::NAMES.to_vec();
        v.sort_by_key(|&(p, id, _)| (p, id));
        v
    })
}

/// The layout for the highest known version not above `version` of an event (the runtime only
/// appends fields in newer versions), or `None` when the provider or event is unknown or all
/// known versions are newer.
///
/// ```
/// use clr_events::{layout, RUNTIME_PROVIDER};
/// // GCAllocationTick_V4 adds ObjectSize; a hypothetical V9 still decodes with the V4 fields.
/// let l = layout(RUNTIME_PROVIDER, 10, 9).unwrap();
/// assert_eq!(l.version, 4);
/// assert_eq!(l.field_names().last(), Some("ObjectSize"));
/// ```
pub fn layout(provider: &str, event_id: u32, version: u8) -> Option<&'static EventLayout> {
    layout_for(known_provider(provider)?, event_id, version)
}

/// [`layout`] for a provider already resolved with [`known_provider`].
pub fn layout_for(
    provider: KnownProvider,
    event_id: u32,
    version: u8,
) -> Option<&'static EventLayout> {
    let id = u16::try_from(event_id).ok()?;
    let idx = index();
    // First row after every (provider, id, <= version) row.
    let end =
        idx.partition_point(|l| (l.provider, l.event_id, l.version) <= (provider, id, version));
    let l = idx.get(end.checked_sub(1)?)?;
    (l.provider == provider && l.event_id == id).then_some(*l)
}

/// Decodes a payload with the layout for `(provider, event_id, version)`; `None` when there is
/// no layout.
pub fn decode(
    provider: &str,
    event_id: u32,
    version: u8,
    payload: &[u8],
    pointer_size: u8,
) -> Option<Decoded> {
    layout(provider, event_id, version).map(|l| l.decode(payload, pointer_size))
}

/// The name TraceEvent gives an event, e.g. `GC/Start`, `Method/LoadVerbose`,
/// `Exception/Start`, `Thread/Sample`, `Method/DCStopVerbose` — also for events that have no
/// layout here. `None` for events TraceEvent does not name itself (callers then fall back to
/// the name in the trace's metadata). The version does not change the name; it is accepted for
/// symmetry with [`layout`].
pub fn event_name(provider: &str, event_id: u32, version: u8) -> Option<&'static str> {
    event_name_for(known_provider(provider)?, event_id, version)
}

/// [`event_name`] for a provider already resolved with [`known_provider`].
pub fn event_name_for(
    provider: KnownProvider,
    event_id: u32,
    _version: u8,
) -> Option<&'static str> {
    let id = u16::try_from(event_id).ok()?;
    let idx = name_index();
    idx.binary_search_by_key(&(provider, id), |&(p, i, _)| (p, i))
        .ok()
        .map(|i| idx[i].2)
}

/// Every layout this crate knows, ordered by provider, event id and version.
pub fn all_layouts() -> impl Iterator<Item = &'static EventLayout> {
    index().iter().copied()
}

/// The `Type` field of the SampleProfiler's `ThreadSample` event (id 0): what the sampled
/// thread was doing.
///
/// `ThreadSample` payloads are a single `u32`. Samples of threads in native code (including
/// threads blocked in the OS) are `External`; samples of threads running managed code are
/// `Managed`. A thread-time profile counts both; a CPU profile usually keeps `Managed` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThreadSampleType {
    /// 0: the runtime could not classify the thread.
    Error,
    /// 1: the thread was outside managed code.
    External,
    /// 2: the thread was running managed code.
    Managed,
}

impl ThreadSampleType {
    /// Classifies a raw `Type` value; `None` for values the runtime does not write.
    pub fn from_u32(v: u32) -> Option<ThreadSampleType> {
        match v {
            0 => Some(ThreadSampleType::Error),
            1 => Some(ThreadSampleType::External),
            2 => Some(ThreadSampleType::Managed),
            _ => None,
        }
    }

    /// Reads the type from a raw `ThreadSample` payload.
    pub fn from_payload(payload: &[u8]) -> Option<ThreadSampleType> {
        let b: [u8; 4] = payload.get(..4)?.try_into().ok()?;
        ThreadSampleType::from_u32(u32::from_le_bytes(b))
    }
}
