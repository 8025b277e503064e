//! Typed views of the runtime events clrspy's models read: event ids in one place
//! ([`ids`], [`rundown_ids`]), one struct per event with `parse(payload, version,
//! pointer_size) -> Result<_, ViewError>`, and the runtime's value maps (GC reason, GC type,
//! suspension reason, heap kind, thread pool adjustment reason) as enums with an `Other` for
//! values this crate does not know, each printing its manifest name.
//!
//! ```
//! use clr_events::runtime::{GcStart, GcReason, GcType};
//! let mut p = Vec::new();
//! for v in [7u32, 2, 1, 1] {
//!     p.extend(v.to_le_bytes());
//! }
//! p.extend(0u16.to_le_bytes());
//! let gc = GcStart::parse(&p, 1, 8).unwrap();
//! assert_eq!((gc.count, gc.depth), (7, 2));
//! assert_eq!((gc.reason, gc.kind), (GcReason::Induced, GcType::Background));
//! assert_eq!(gc.reason.to_string(), "Induced");
//! // A payload cut short is an error naming the event and the field, never a zero.
//! let e = GcStart::parse(&p[..6], 1, 8).unwrap_err();
//! assert!(e.to_string().contains("GC/Start") && e.to_string().contains("Depth"));
//! ```

use crate::view::{Cursor, Ints, Utf16Str, ViewError};
use crate::KnownProvider;

pub use crate::value_maps::{
    AdjustmentReason, GcPauseMode, GcReason, GcRootKind, GcType, HeapKind, SuspendReason,
};

/// Event ids of `Microsoft-Windows-DotNETRuntime` that have typed views here.
pub mod ids {
    /// GC/Start (`GCStart`).
    pub const GC_START: u32 = 1;
    /// GC/Stop (`GCEnd`).
    pub const GC_STOP: u32 = 2;
    /// GC/RestartEEStop.
    pub const GC_RESTART_EE_STOP: u32 = 3;
    /// GC/HeapStats.
    pub const GC_HEAP_STATS: u32 = 4;
    /// GC/SuspendEEStop: every managed thread is suspended.
    pub const GC_SUSPEND_EE_STOP: u32 = 8;
    /// GC/SuspendEEStart (`GCSuspendEEBegin`).
    pub const GC_SUSPEND_EE_START: u32 = 9;
    /// GC/AllocationTick.
    pub const GC_ALLOCATION_TICK: u32 = 10;
    /// GC/Triggered: the thread that asked for a GC (no GC number).
    pub const GC_TRIGGERED: u32 = 35;
    /// GC/GlobalHeapHistory: one per GC, with the number of heaps and the latency mode.
    pub const GC_GLOBAL_HEAP_HISTORY: u32 = 205;
    /// Type/BulkType (`BulkType`).
    pub const GC_BULK_TYPE: u32 = 15;
    /// GC/BulkRootEdge.
    pub const GC_BULK_ROOT_EDGE: u32 = 16;
    /// GC/BulkNode.
    pub const GC_BULK_NODE: u32 = 18;
    /// GC/BulkEdge.
    pub const GC_BULK_EDGE: u32 = 19;
    /// GC/BulkSurvivingObjectRanges.
    pub(crate) const GC_BULK_SURVIVING_OBJECT_RANGES: u32 = 21;
    /// GC/BulkMovedObjectRanges.
    pub(crate) const GC_BULK_MOVED_OBJECT_RANGES: u32 = 22;
    /// GC/BulkRootStaticVar.
    pub const GC_BULK_ROOT_STATIC_VAR: u32 = 38;
    /// ThreadPoolWorkerThread/Start.
    pub const TP_WORKER_START: u32 = 50;
    /// ThreadPoolWorkerThread/Stop.
    pub const TP_WORKER_STOP: u32 = 51;
    /// ThreadPoolWorkerThreadAdjustment/Adjustment.
    pub const TP_ADJUSTMENT: u32 = 55;
    /// ThreadPoolWorkerThread/Wait.
    pub const TP_WORKER_WAIT: u32 = 57;
    /// Thread/Creating.
    pub const THREAD_CREATING: u32 = 70;
    /// Exception/Start (`ExceptionThrown`).
    pub const EXCEPTION_START: u32 = 80;
    /// Contention/Start.
    pub const CONTENTION_START: u32 = 81;
    /// AppDomainResourceManagement/ThreadCreated.
    pub const THREAD_CREATED: u32 = 85;
    /// Contention/Stop.
    pub const CONTENTION_STOP: u32 = 91;
    /// Method/LoadVerbose.
    pub const METHOD_LOAD_VERBOSE: u32 = 143;
    /// Method/UnloadVerbose.
    pub const METHOD_UNLOAD_VERBOSE: u32 = 144;
    /// Method/R2RGetEntryPoint (a precompiled method's entry address, no size).
    pub const R2R_GET_ENTRY_POINT: u32 = 159;
    /// Loader/ModuleLoad.
    pub const MODULE_LOAD: u32 = 152;
    /// Method/ILToNativeMap (the `JittedMethodILToNativeMap` keyword, 0x20000).
    pub const METHOD_IL_TO_NATIVE_MAP: u32 = 190;
    /// Method/InliningSucceeded (JIT tracing keyword, verbose).
    pub const INLINING_SUCCEEDED: u32 = 185;
    /// TypeLoad/Stop: a type the runtime loaded, by its full name.
    pub const TYPE_LOAD_STOP: u32 = 74;
    /// ExceptionCatch/Start.
    pub const EXCEPTION_CATCH_START: u32 = 250;
}

/// Event ids of `Microsoft-Windows-DotNETRuntimeRundown` that have typed views here.
pub mod rundown_ids {
    /// Method/DCStartVerbose.
    pub const METHOD_DC_START_VERBOSE: u32 = 143;
    /// Method/DCStopVerbose.
    pub const METHOD_DC_STOP_VERBOSE: u32 = 144;
    /// Method/ILToNativeMapDCStart.
    pub const METHOD_IL_TO_NATIVE_MAP_DC_START: u32 = 149;
    /// Method/ILToNativeMapDCStop.
    pub const METHOD_IL_TO_NATIVE_MAP_DC_STOP: u32 = 150;
    /// Loader/ModuleDCStart.
    pub const MODULE_DC_START: u32 = 153;
    /// Loader/ModuleDCStop.
    pub const MODULE_DC_STOP: u32 = 154;
}

fn rt<'a>(id: u32, version: u8, p: &'a [u8], ptr: u8) -> Result<Cursor<'a>, ViewError> {
    Cursor::for_event(KnownProvider::Runtime, id, version, p, ptr)
}

/// `Method/LoadVerbose`, `Method/UnloadVerbose` and the rundown's `Method/DCStartVerbose` and
/// `Method/DCStopVerbose` (one template): a method's code range and names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodLoad<'a> {
    /// The method's id (its `MethodDesc`).
    pub method_id: u64,
    /// The module's id.
    pub module_id: u64,
    /// First byte of the code.
    pub start: u64,
    /// Code size, bytes.
    pub size: u32,
    /// The method's metadata token (`0x06nnnnnn`: its MethodDef row in the module), 0 for
    /// dynamic methods, which have none.
    pub token: u32,
    /// `MethodFlags`: dynamic, generic, jitted… and the code's optimization tier in bits 7–9
    /// ([`MethodLoad::is_osr`]).
    pub flags: u32,
    /// Namespace and type, e.g. `System.Threading.Thread`.
    pub namespace: Utf16Str<'a>,
    /// Method name.
    pub name: Utf16Str<'a>,
    /// Signature, e.g. `void  (int32)`.
    pub signature: Utf16Str<'a>,
}

impl<'a> MethodLoad<'a> {
    /// True when this code is an on-stack-replacement version of the method (optimization
    /// tier `OptimizedTier1OSR`, 5): code a running Tier0 frame of the method jumped into from
    /// a loop, whose frame sits under that Tier0 frame rather than being called from it.
    pub fn is_osr(&self) -> bool {
        (self.flags >> 7) & 0x7 == 5
    }

    /// Parses `Method/LoadVerbose` (runtime event 143).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        Self::parse_event(
            KnownProvider::Runtime,
            ids::METHOD_LOAD_VERBOSE,
            payload,
            version,
            pointer_size,
        )
    }

    /// Parses any of the four events that share the template (`provider` and `id` name the
    /// event in errors).
    pub fn parse_event(
        provider: KnownProvider,
        id: u32,
        payload: &'a [u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = Cursor::for_event(provider, id, version, payload, pointer_size)?;
        Ok(MethodLoad {
            method_id: c.u64("MethodID")?,
            module_id: c.u64("ModuleID")?,
            start: c.u64("MethodStartAddress")?,
            size: c.u32("MethodSize")?,
            token: c.opt_u32("MethodToken")?.unwrap_or(0),
            flags: c.opt_u32("MethodFlags")?.unwrap_or(0),
            namespace: c.str("MethodNamespace")?,
            name: c.str("MethodName")?,
            signature: c.str("MethodSignature")?,
        })
    }
}

/// `Method/ILToNativeMap` and the rundown's `Method/ILToNativeMapDCStart`/`DCStop`: which IL
/// offset each stretch of a method's compiled code runs. The runtime sends it right after
/// the method's `Method/LoadVerbose` (at rundown, right before its `DCStopVerbose`); the
/// pairs are in IL order, so native offsets are not sorted. IL offsets below 0 are not
/// offsets: -1 no mapping, -2 the prolog, -3 an epilog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlToNativeMap<'a> {
    /// The method's id (as in `Method/LoadVerbose`).
    pub method_id: u64,
    /// The IL offsets (as `i32` values widened).
    il_offsets: Ints<'a>,
    /// The native offsets from the code's start, one per IL offset.
    native_offsets: Ints<'a>,
}

impl<'a> IlToNativeMap<'a> {
    /// Parses any of the three events (`provider` and `id` name the event in errors).
    pub fn parse_event(
        provider: KnownProvider,
        id: u32,
        payload: &'a [u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = Cursor::for_event(provider, id, version, payload, pointer_size)?;
        Ok(IlToNativeMap {
            method_id: c.u64("MethodID")?,
            il_offsets: c.ints("ILOffsets")?,
            native_offsets: c.ints("NativeOffsets")?,
        })
    }

    /// The (native offset, IL offset) pairs, by native offset.
    pub fn pairs(&self) -> Vec<(u32, i32)> {
        let mut out: Vec<(u32, i32)> = self
            .native_offsets
            .iter()
            .zip(self.il_offsets.iter())
            .map(|(n, il)| (n as u32, il as i32))
            .collect();
        out.sort_by_key(|&(n, _)| n);
        out
    }
}

/// `Method/InliningSucceeded`: the JIT inlined `inlinee` into the code of `compiled` (maybe
/// through another inlinee: `Inliner…`, not kept here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InliningSucceeded<'a> {
    /// The method being compiled: namespace and type.
    pub compiled_namespace: Utf16Str<'a>,
    /// The method being compiled: its name.
    pub compiled_name: Utf16Str<'a>,
    /// The inlined method: namespace and type.
    pub inlinee_namespace: Utf16Str<'a>,
    /// The inlined method: its name.
    pub inlinee_name: Utf16Str<'a>,
}

impl<'a> InliningSucceeded<'a> {
    /// Parses the event (runtime event 185).
    pub fn parse(payload: &'a [u8], version: u8) -> Result<Self, ViewError> {
        let mut c = Cursor::for_event(
            KnownProvider::Runtime,
            ids::INLINING_SUCCEEDED,
            version,
            payload,
            8,
        )?;
        let compiled_namespace = c.str("MethodBeingCompiledNamespace")?;
        let compiled_name = c.str("MethodBeingCompiledName")?;
        c.str("MethodBeingCompiledNameSignature")?;
        c.str("InlinerNamespace")?;
        c.str("InlinerName")?;
        c.str("InlinerNameSignature")?;
        Ok(InliningSucceeded {
            compiled_namespace,
            compiled_name,
            inlinee_namespace: c.str("InlineeNamespace")?,
            inlinee_name: c.str("InlineeName")?,
        })
    }
}

/// `Loader/ModuleLoad` and the rundown's `Loader/ModuleDCStart`/`ModuleDCStop` (one template's
/// first fields): a module's id, its assembly and the file it was loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleLoad<'a> {
    /// The module's id (the `ModuleID` of method events).
    pub module_id: u64,
    /// The assembly's id.
    pub assembly_id: u64,
    /// The IL image's path (empty for modules loaded from memory).
    pub il_path: Utf16Str<'a>,
    /// The GUID of the module's PDB (`ManagedPdbSignature`, version 2 and later), as its
    /// CodeView debug entry and a portable PDB's id hold it.
    pub pdb_guid: Option<[u8; 16]>,
    /// The path its PDB was built to (`ManagedPdbBuildPath`; empty when not said).
    pub pdb_path: Utf16Str<'a>,
}

impl<'a> ModuleLoad<'a> {
    /// Parses any of the three events (`provider` and `id` name the event in errors).
    pub fn parse_event(
        provider: KnownProvider,
        id: u32,
        payload: &'a [u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = Cursor::for_event(provider, id, version, payload, pointer_size)?;
        let module_id = c.u64("ModuleID")?;
        let assembly_id = c.u64("AssemblyID")?;
        c.u32("ModuleFlags")?;
        c.u32("Reserved1")?;
        let il_path = c.str("ModuleILPath")?;
        let pdb_guid = c.opt_guid("ManagedPdbSignature")?.filter(|g| g != &[0; 16]);
        let pdb_path = c.opt_str("ManagedPdbBuildPath")?.unwrap_or_default();
        Ok(ModuleLoad {
            module_id,
            assembly_id,
            il_path,
            pdb_guid,
            pdb_path,
        })
    }
}

/// `TypeLoad/Stop`: a type the runtime loaded (the `TypeDiagnostic` keyword), its id (the
/// `TypeID` of allocation ticks) and full name, nested types with their declaring type and
/// generic arguments in angle brackets (`System.Collections.Generic.Dictionary`2+Entry<A,B>[]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeLoadStop<'a> {
    /// The type's id (its `MethodTable`).
    pub type_id: u64,
    /// Its full name.
    pub type_name: Utf16Str<'a>,
}

impl<'a> TypeLoadStop<'a> {
    /// Parses `TypeLoad/Stop` (runtime event 74).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::TYPE_LOAD_STOP, version, payload, pointer_size)?;
        c.u32("TypeLoadStartID")?;
        c.u32("ClrInstanceID")?;
        c.u32("LoadLevel")?;
        Ok(TypeLoadStop {
            type_id: c.u64("TypeID")?,
            type_name: c.str("TypeName")?,
        })
    }
}

/// `Method/R2RGetEntryPoint`: a precompiled method's entry point (no size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R2rEntryPoint<'a> {
    /// The method's id.
    pub method_id: u64,
    /// Namespace and type.
    pub namespace: Utf16Str<'a>,
    /// Method name.
    pub name: Utf16Str<'a>,
    /// Signature.
    pub signature: Utf16Str<'a>,
    /// The entry address.
    pub entry_point: u64,
}

impl<'a> R2rEntryPoint<'a> {
    /// Parses the payload.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::R2R_GET_ENTRY_POINT, version, payload, pointer_size)?;
        Ok(R2rEntryPoint {
            method_id: c.u64("MethodID")?,
            namespace: c.str("MethodNamespace")?,
            name: c.str("MethodName")?,
            signature: c.str("MethodSignature")?,
            entry_point: c.u64("EntryPoint")?,
        })
    }
}

/// `GC/Start` (version 1 and later; version 0, of .NET Framework days, lacks `Depth` and
/// `Type` and is an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcStart {
    /// The GC's number.
    pub count: u32,
    /// The generation collected.
    pub depth: u32,
    /// Why it ran.
    pub reason: GcReason,
    /// How it ran.
    pub kind: GcType,
    /// Version 2's `ClientSequenceNumber`.
    pub(crate) client_sequence_number: Option<u64>,
}

impl GcStart {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_START, version, payload, pointer_size)?;
        Ok(GcStart {
            count: c.u32("Count")?,
            depth: c.u32("Depth")?,
            reason: GcReason::from_u32(c.u32("Reason")?),
            kind: GcType::from_u32(c.u32("Type")?),
            client_sequence_number: c.opt_u64("ClientSequenceNumber")?,
        })
    }
}

/// `GC/Stop` (`GCEnd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcEnd {
    /// The GC's number.
    pub count: u32,
    /// The generation collected.
    pub depth: u32,
}

impl GcEnd {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_STOP, version, payload, pointer_size)?;
        Ok(GcEnd {
            count: c.u32("Count")?,
            depth: c.u32("Depth")?,
        })
    }
}

/// `GC/HeapStats`: generation sizes and promoted bytes after a GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcHeapStats {
    /// Size of gen0, gen1, gen2, the large and (version 2) the pinned object heap, bytes.
    pub generation_sizes: [u64; 5],
    /// Bytes promoted from each of them (the pinned heap's in version 2 only, else 0).
    pub promoted: [u64; 5],
    /// True when the event has the pinned object heap's fields (version 2).
    pub(crate) has_poh: bool,
    /// Objects pinned.
    pub(crate) pinned_object_count: u32,
    /// GC handles.
    pub(crate) gc_handle_count: u32,
}

impl GcHeapStats {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_HEAP_STATS, version, payload, pointer_size)?;
        let mut sizes = [0u64; 5];
        let mut promoted = [0u64; 5];
        const NAMES: [(&str, &str); 4] = [
            ("GenerationSize0", "TotalPromotedSize0"),
            ("GenerationSize1", "TotalPromotedSize1"),
            ("GenerationSize2", "TotalPromotedSize2"),
            ("GenerationSize3", "TotalPromotedSize3"),
        ];
        for (i, (g, p)) in NAMES.into_iter().enumerate() {
            sizes[i] = c.u64(g)?;
            promoted[i] = c.u64(p)?;
        }
        let pinned_object_count = c.u32("PinnedObjectCount")?;
        let gc_handle_count = c.u32("GCHandleCount")?;
        let poh = c.opt_u64("GenerationSize4")?;
        let poh_promoted = c.opt_u64("TotalPromotedSize4")?;
        if let (Some(s), Some(p)) = (poh, poh_promoted) {
            sizes[4] = s;
            promoted[4] = p;
        }
        Ok(GcHeapStats {
            generation_sizes: sizes,
            promoted,
            has_poh: poh.is_some(),
            pinned_object_count,
            gc_handle_count,
        })
    }
}

/// `GC/GlobalHeapHistory`: per GC, the heaps taking part and the latency mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcGlobalHeapHistory {
    /// The number of GC heaps (1 under workstation GC; one per heap under Server GC).
    pub num_heaps: u32,
    /// The generation condemned.
    pub(crate) condemned_generation: u32,
    /// The latency mode (version 2 and later).
    pub pause_mode: Option<GcPauseMode>,
}

impl GcGlobalHeapHistory {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_GLOBAL_HEAP_HISTORY, version, payload, pointer_size)?;
        Ok(GcGlobalHeapHistory {
            num_heaps: c.u32("NumHeaps")?,
            condemned_generation: c.u32("CondemnedGeneration")?,
            pause_mode: c.opt_u32("PauseMode")?.map(GcPauseMode::from_u32),
        })
    }
}

/// `GC/SuspendEEStart`: the runtime starts suspending managed threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcSuspendEe {
    /// Why.
    pub reason: SuspendReason,
    /// The GC number it is for (version 1).
    pub count: Option<u32>,
}

impl GcSuspendEe {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_SUSPEND_EE_START, version, payload, pointer_size)?;
        Ok(GcSuspendEe {
            reason: SuspendReason::from_u32(c.u32("Reason")?),
            count: c.opt_u32("Count")?,
        })
    }
}

/// `GC/RestartEEStop`: managed threads run again (no fields of interest; parsing checks the
/// payload has its layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcRestartEeEnd;

impl GcRestartEeEnd {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_RESTART_EE_STOP, version, payload, pointer_size)?;
        c.opt_u64("ClrInstanceID")?;
        Ok(GcRestartEeEnd)
    }
}

/// `GC/AllocationTick`: about 100 KB were allocated on one heap since the last tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocationTick<'a> {
    /// Bytes since the last tick (`AllocationAmount64` from version 2, else the 32-bit
    /// `AllocationAmount`).
    pub amount: u64,
    /// Which heap.
    pub kind: HeapKind,
    /// The type of the object that crossed the threshold (version 2 and later).
    pub type_name: Option<Utf16Str<'a>>,
    /// Its type id (version 2 and later).
    pub type_id: Option<u64>,
    /// The heap's index (version 2 and later).
    pub(crate) heap_index: Option<u32>,
    /// The object's address (version 3 and later).
    pub address: Option<u64>,
    /// The object's size (version 4 and later).
    pub object_size: Option<u64>,
}

impl<'a> AllocationTick<'a> {
    /// Parses the payload (every version).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_ALLOCATION_TICK, version, payload, pointer_size)?;
        let amount32 = c.u64("AllocationAmount")?;
        let kind = HeapKind::from_u32(c.u32("AllocationKind")?);
        let amount = c.opt_u64("AllocationAmount64")?.unwrap_or(amount32);
        Ok(AllocationTick {
            amount,
            kind,
            type_id: c.opt_u64("TypeID")?,
            type_name: c.opt_str("TypeName")?,
            heap_index: c.opt_u32("HeapIndex")?,
            address: c.opt_u64("Address")?,
            object_size: c.opt_u64("ObjectSize")?,
        })
    }
}

/// `Exception/Start` (`ExceptionThrown`). Version 0 has no fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionThrown<'a> {
    /// The exception's type name (version 1).
    pub exception_type: Option<Utf16Str<'a>>,
    /// Its message (version 1).
    pub message: Option<Utf16Str<'a>>,
    /// `HRESULT` (version 1).
    pub hresult: Option<u32>,
    /// `ExceptionFlags` (version 1): 0x01 has an inner exception, 0x02 nested, 0x04
    /// rethrown (`throw;`), 0x08 corrupted state, 0x10 CLS compliant.
    pub flags: Option<u32>,
}

/// [`ExceptionThrown::flags`]: the exception is rethrown (`throw;`), not a new throw.
pub const EXCEPTION_RETHROWN: u32 = 0x04;

impl<'a> ExceptionThrown<'a> {
    /// Parses the payload.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::EXCEPTION_START, version, payload, pointer_size)?;
        Ok(ExceptionThrown {
            exception_type: c.opt_str("ExceptionType")?,
            message: c.opt_str("ExceptionMessage")?,
            hresult: c.opt_u32("ExceptionHRESULT")?,
            flags: c.opt_u32("ExceptionFlags")?,
        })
    }
}

/// `ExceptionCatch/Start`: a handler caught the exception in flight on the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExceptionCatch<'a> {
    /// The method whose handler caught it.
    pub method_id: u64,
    /// Its name.
    pub method_name: Utf16Str<'a>,
}

impl<'a> ExceptionCatch<'a> {
    /// The method's name as frames give it (`Namespace.Type.Method`; the event's is in IL
    /// syntax): [`crate::method_names::from_il`].
    pub fn method(&self) -> String {
        crate::method_names::from_il(&self.method_name.to_string_lossy())
    }

    /// Parses the payload.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::EXCEPTION_CATCH_START, version, payload, pointer_size)?;
        Ok(ExceptionCatch {
            method_id: c.u64("MethodID")?,
            method_name: c.str("MethodName")?,
        })
    }
}

/// `Contention/Start`: a thread starts waiting for a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentionStart {
    /// The lock (version 2, .NET 8+).
    pub lock_id: Option<u64>,
    /// The object locked on (version 2; 0 for a lock that is not an object's monitor).
    pub associated_object_id: Option<u64>,
    /// The thread holding it (version 2).
    pub owner_thread_id: Option<u64>,
}

impl ContentionStart {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::CONTENTION_START, version, payload, pointer_size)?;
        Ok(ContentionStart {
            lock_id: c.opt_u64("LockID")?,
            associated_object_id: c.opt_u64("AssociatedObjectID")?,
            owner_thread_id: c.opt_u64("LockOwnerThreadID")?,
        })
    }
}

/// `Contention/Stop`: the thread got the lock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContentionStop {
    /// How long it waited, ns (version 1).
    pub duration_ns: Option<f64>,
}

impl ContentionStop {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::CONTENTION_STOP, version, payload, pointer_size)?;
        Ok(ContentionStop {
            duration_ns: c.opt_f64("DurationNs")?,
        })
    }
}

/// `ThreadPoolWorkerThread/Start`, `/Stop` and `/Wait`: the pool's worker counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadPoolWorkerThread {
    /// Active workers.
    pub active: u32,
    /// Retired workers.
    pub(crate) retired: u32,
}

impl ThreadPoolWorkerThread {
    /// Parses event `id` (one of the three).
    pub fn parse(
        id: u32,
        payload: &[u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = rt(id, version, payload, pointer_size)?;
        Ok(ThreadPoolWorkerThread {
            active: c.u32("ActiveWorkerThreadCount")?,
            retired: c.u32("RetiredWorkerThreadCount")?,
        })
    }
}

/// `ThreadPoolWorkerThreadAdjustment/Adjustment`: hill climbing changed the worker count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadPoolAdjustment {
    /// Throughput measured.
    pub(crate) average_throughput: f64,
    /// The new worker count.
    pub new_worker_count: u32,
    /// Why.
    pub reason: AdjustmentReason,
}

impl ThreadPoolAdjustment {
    /// Parses the payload.
    pub fn parse(payload: &[u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::TP_ADJUSTMENT, version, payload, pointer_size)?;
        Ok(ThreadPoolAdjustment {
            average_throughput: c.f64("AverageThroughput")?,
            new_worker_count: c.u32("NewWorkerThreadCount")?,
            reason: AdjustmentReason::from_u32(c.u32("Reason")?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DecodeError;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend([0, 0]);
        v
    }

    #[test]
    fn an_inlining_names_the_compiled_method_and_its_inlinee() {
        let mut p = Vec::new();
        for s in [
            "dynamicClass",
            "lambda_method3",
            "object (class System.Runtime.CompilerServices.Closure)",
            "dynamicClass",
            "lambda_method3",
            "",
            "App.Controllers.DiagController",
            "HighCpu",
            "class ActionResult`1 (int32)",
        ] {
            p.extend(utf16z(s));
        }
        p.extend(7u16.to_le_bytes());
        let i = InliningSucceeded::parse(&p, 0).unwrap();
        assert!(
            i.compiled_namespace.eq_str("dynamicClass") && i.compiled_name.eq_str("lambda_method3")
        );
        assert!(i.inlinee_namespace.eq_str("App.Controllers.DiagController"));
        assert!(i.inlinee_name.eq_str("HighCpu"));
        assert!(InliningSucceeded::parse(&p[..40], 0).is_err());
    }

    #[test]
    fn ids_match_the_names() {
        use crate::event_name_for;
        let rt = KnownProvider::Runtime;
        for (id, name) in [
            (ids::GC_START, "GC/Start"),
            (ids::GC_STOP, "GC/Stop"),
            (ids::GC_HEAP_STATS, "GC/HeapStats"),
            (ids::GC_SUSPEND_EE_START, "GC/SuspendEEStart"),
            (ids::GC_RESTART_EE_STOP, "GC/RestartEEStop"),
            (ids::GC_ALLOCATION_TICK, "GC/AllocationTick"),
            (ids::GC_BULK_NODE, "GC/BulkNode"),
            (ids::GC_BULK_EDGE, "GC/BulkEdge"),
            (ids::GC_BULK_ROOT_EDGE, "GC/BulkRootEdge"),
            (ids::GC_BULK_ROOT_STATIC_VAR, "GC/BulkRootStaticVar"),
            (ids::GC_BULK_TYPE, "Type/BulkType"),
            (ids::GC_BULK_MOVED_OBJECT_RANGES, "GC/BulkMovedObjectRanges"),
            (
                ids::GC_BULK_SURVIVING_OBJECT_RANGES,
                "GC/BulkSurvivingObjectRanges",
            ),
            (ids::EXCEPTION_START, "Exception/Start"),
            (ids::EXCEPTION_CATCH_START, "ExceptionCatch/Start"),
            (ids::CONTENTION_START, "Contention/Start"),
            (ids::CONTENTION_STOP, "Contention/Stop"),
            (ids::METHOD_LOAD_VERBOSE, "Method/LoadVerbose"),
            (ids::METHOD_UNLOAD_VERBOSE, "Method/UnloadVerbose"),
            (
                ids::TP_ADJUSTMENT,
                "ThreadPoolWorkerThreadAdjustment/Adjustment",
            ),
            (ids::TP_WORKER_START, "ThreadPoolWorkerThread/Start"),
            (ids::TP_WORKER_STOP, "ThreadPoolWorkerThread/Stop"),
            (ids::TP_WORKER_WAIT, "ThreadPoolWorkerThread/Wait"),
            (ids::R2R_GET_ENTRY_POINT, "Method/R2RGetEntryPoint"),
            (ids::THREAD_CREATING, "Thread/Creating"),
        ] {
            assert_eq!(event_name_for(rt, id, 0), Some(name), "id {id}");
        }
        let rd = KnownProvider::Rundown;
        assert_eq!(
            event_name_for(rd, rundown_ids::METHOD_DC_STOP_VERBOSE, 0),
            Some("Method/DCStopVerbose")
        );
        assert_eq!(
            event_name_for(rd, rundown_ids::METHOD_DC_START_VERBOSE, 0),
            Some("Method/DCStartVerbose")
        );
    }

    #[test]
    fn method_load_reads_every_version_and_names_the_missing_field() {
        let mut p = Vec::new();
        p.extend(5u64.to_le_bytes()); // MethodID
        p.extend(6u64.to_le_bytes()); // ModuleID
        p.extend(0x1000u64.to_le_bytes());
        p.extend(0x80u32.to_le_bytes());
        p.extend(1u32.to_le_bytes()); // token
        p.extend(0u32.to_le_bytes()); // flags
        p.extend(utf16z("App.Cpu"));
        p.extend(utf16z("Burn"));
        p.extend(utf16z("void  (int32)"));
        for v in 0..=2 {
            let m = MethodLoad::parse(&p, v, 8);
            if v == 0 {
                let m = m.unwrap();
                assert_eq!((m.method_id, m.start, m.size), (5, 0x1000, 0x80));
                assert_eq!(m.name.to_string(), "Burn");
                assert!(m.namespace.eq_str("App.Cpu"));
            } else {
                // Later versions add fields after the signature: the view does not need them.
                assert!(m.is_ok());
            }
        }
        let short = &p[..p.len() - 4];
        let e = MethodLoad::parse_event(
            KnownProvider::Rundown,
            rundown_ids::METHOD_DC_STOP_VERBOSE,
            short,
            2,
            8,
        )
        .unwrap_err();
        assert_eq!(e.event, "Method/DCStopVerbose");
        assert!(matches!(
            e.error,
            DecodeError::UnterminatedString {
                field: "MethodSignature",
                ..
            }
        ));
        let e = MethodLoad::parse(&p[..10], 0, 8).unwrap_err();
        assert!(matches!(
            e.error,
            DecodeError::Truncated {
                field: "ModuleID",
                ..
            }
        ));
    }

    #[test]
    fn allocation_tick_versions() {
        let mut v0 = Vec::new();
        v0.extend(100_000u32.to_le_bytes());
        v0.extend(1u32.to_le_bytes());
        let t = AllocationTick::parse(&v0, 0, 8).unwrap();
        assert_eq!(
            (t.amount, t.kind, t.type_name),
            (100_000, HeapKind::Loh, None)
        );
        let mut v4 = v0.clone();
        v4.extend(7u16.to_le_bytes());
        v4.extend(123_456u64.to_le_bytes());
        v4.extend(0xABCDu32.to_le_bytes()); // 4-byte TypeID
        v4.extend(utf16z("System.String"));
        v4.extend(3u32.to_le_bytes());
        v4.extend(0x1000u32.to_le_bytes());
        v4.extend(48u64.to_le_bytes());
        let t = AllocationTick::parse(&v4, 4, 4).unwrap();
        assert_eq!(t.amount, 123_456);
        assert_eq!(t.type_id, Some(0xABCD));
        assert_eq!(t.type_name.unwrap().to_string(), "System.String");
        assert_eq!(
            (t.heap_index, t.address, t.object_size),
            (Some(3), Some(0x1000), Some(48))
        );
        assert_eq!(t.kind.to_string(), "LOH");
        let e = AllocationTick::parse(&v4[..v4.len() - 1], 4, 4).unwrap_err();
        assert!(e.to_string().contains("ObjectSize"), "{e}");
        assert!(AllocationTick::parse(&v4, 4, 3).is_err());
    }

    #[test]
    fn heap_stats_with_and_without_poh() {
        let mut p = Vec::new();
        for i in 0..10u64 {
            p.extend((i * 10).to_le_bytes());
        }
        for v in [1u32, 2, 3] {
            p.extend(v.to_le_bytes());
        }
        p.extend(0u16.to_le_bytes());
        let s = GcHeapStats::parse(&p, 1, 8).unwrap();
        assert_eq!(s.generation_sizes, [0, 20, 40, 60, 0]);
        assert_eq!(s.promoted, [10, 30, 50, 70, 0]);
        assert!(!s.has_poh);
        assert_eq!((s.pinned_object_count, s.gc_handle_count), (1, 3));
        p.extend(80u64.to_le_bytes());
        p.extend(90u64.to_le_bytes());
        let s = GcHeapStats::parse(&p, 2, 8).unwrap();
        assert_eq!(
            (s.generation_sizes[4], s.promoted[4], s.has_poh),
            (80, 90, true)
        );
    }
}
