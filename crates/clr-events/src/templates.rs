//! Field lists shared by several events (the manifest's "templates").
//!
//! Each constant is the field list of one manifest template version. Where TraceEvent spells a
//! payload field differently from the manifest, the TraceEvent spelling is used (noted on the
//! constant), because that is the name users and the fidelity harness know.

use crate::layout::d::*;
use crate::layout::{FieldDef, Scalar};

/// No payload.
pub(crate) const EMPTY: &[FieldDef] = &[];
/// `GCNoUserData`, `DCStartEnd`, `TieredCompilationEmpty` and friends.
pub(crate) const CLR_ID: &[FieldDef] = &[uint16("ClrInstanceID")];

// ---------------------------------------------------------------------------------------------
// GC

pub(crate) const GC_START_V0: &[FieldDef] = &[uint32("Count"), uint32("Reason")];
pub(crate) const GC_START_V1: &[FieldDef] = &[
    uint32("Count"),
    uint32("Depth"),
    uint32("Reason"),
    uint32("Type"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_START_V2: &[FieldDef] = &[
    uint32("Count"),
    uint32("Depth"),
    uint32("Reason"),
    uint32("Type"),
    uint16("ClrInstanceID"),
    uint64("ClientSequenceNumber"),
];
pub(crate) const GC_END_V0: &[FieldDef] = &[uint32("Count"), uint16("Depth")];
pub(crate) const GC_END_V1: &[FieldDef] =
    &[uint32("Count"), uint32("Depth"), uint16("ClrInstanceID")];

pub(crate) const GC_HEAP_STATS_V0: &[FieldDef] = &[
    uint64("GenerationSize0"),
    uint64("TotalPromotedSize0"),
    uint64("GenerationSize1"),
    uint64("TotalPromotedSize1"),
    uint64("GenerationSize2"),
    uint64("TotalPromotedSize2"),
    uint64("GenerationSize3"),
    uint64("TotalPromotedSize3"),
    uint64("FinalizationPromotedSize"),
    uint64("FinalizationPromotedCount"),
    uint32("PinnedObjectCount"),
    uint32("SinkBlockCount"),
    uint32("GCHandleCount"),
];
pub(crate) const GC_HEAP_STATS_V1: &[FieldDef] = &[
    uint64("GenerationSize0"),
    uint64("TotalPromotedSize0"),
    uint64("GenerationSize1"),
    uint64("TotalPromotedSize1"),
    uint64("GenerationSize2"),
    uint64("TotalPromotedSize2"),
    uint64("GenerationSize3"),
    uint64("TotalPromotedSize3"),
    uint64("FinalizationPromotedSize"),
    uint64("FinalizationPromotedCount"),
    uint32("PinnedObjectCount"),
    uint32("SinkBlockCount"),
    uint32("GCHandleCount"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_HEAP_STATS_V2: &[FieldDef] = &[
    uint64("GenerationSize0"),
    uint64("TotalPromotedSize0"),
    uint64("GenerationSize1"),
    uint64("TotalPromotedSize1"),
    uint64("GenerationSize2"),
    uint64("TotalPromotedSize2"),
    uint64("GenerationSize3"),
    uint64("TotalPromotedSize3"),
    uint64("FinalizationPromotedSize"),
    uint64("FinalizationPromotedCount"),
    uint32("PinnedObjectCount"),
    uint32("SinkBlockCount"),
    uint32("GCHandleCount"),
    uint16("ClrInstanceID"),
    uint64("GenerationSize4"),
    uint64("TotalPromotedSize4"),
];

pub(crate) const GC_CREATE_SEGMENT_V0: &[FieldDef] =
    &[uint64("Address"), uint64("Size"), uint32("Type")];
pub(crate) const GC_CREATE_SEGMENT_V1: &[FieldDef] = &[
    uint64("Address"),
    uint64("Size"),
    uint32("Type"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_FREE_SEGMENT_V0: &[FieldDef] = &[uint64("Address")];
pub(crate) const GC_FREE_SEGMENT_V1: &[FieldDef] = &[uint64("Address"), uint16("ClrInstanceID")];

pub(crate) const GC_SUSPEND_EE_V0: &[FieldDef] = &[uint16("Reason")];
pub(crate) const GC_SUSPEND_EE_V1: &[FieldDef] =
    &[uint32("Reason"), uint32("Count"), uint16("ClrInstanceID")];

pub(crate) const GC_ALLOCATION_TICK_V0: &[FieldDef] =
    &[uint32("AllocationAmount"), uint32("AllocationKind")];
pub(crate) const GC_ALLOCATION_TICK_V1: &[FieldDef] = &[
    uint32("AllocationAmount"),
    uint32("AllocationKind"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_ALLOCATION_TICK_V2: &[FieldDef] = &[
    uint32("AllocationAmount"),
    uint32("AllocationKind"),
    uint16("ClrInstanceID"),
    uint64("AllocationAmount64"),
    ptr("TypeID"),
    string("TypeName"),
    uint32("HeapIndex"),
];
pub(crate) const GC_ALLOCATION_TICK_V3: &[FieldDef] = &[
    uint32("AllocationAmount"),
    uint32("AllocationKind"),
    uint16("ClrInstanceID"),
    uint64("AllocationAmount64"),
    ptr("TypeID"),
    string("TypeName"),
    uint32("HeapIndex"),
    ptr("Address"),
];
pub(crate) const GC_ALLOCATION_TICK_V4: &[FieldDef] = &[
    uint32("AllocationAmount"),
    uint32("AllocationKind"),
    uint16("ClrInstanceID"),
    uint64("AllocationAmount64"),
    ptr("TypeID"),
    string("TypeName"),
    uint32("HeapIndex"),
    ptr("Address"),
    uint64("ObjectSize"),
];

pub(crate) const GC_FINALIZERS_END_V0: &[FieldDef] = &[uint32("Count")];
pub(crate) const GC_FINALIZERS_END_V1: &[FieldDef] = &[uint32("Count"), uint16("ClrInstanceID")];

const BULK_TYPE_VALUE: &[FieldDef] = &[
    uint64("TypeID"),
    uint64("ModuleID"),
    uint32("TypeNameID"),
    uint32("Flags"),
    uint8("CorElementType"),
    string("Name"),
    uint32("TypeParameterCount"),
    array("TypeParameters", Scalar::U64, "TypeParameterCount"),
];
pub(crate) const BULK_TYPE: &[FieldDef] = &[
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_TYPE_VALUE),
];

const BULK_ROOT_EDGE_VALUE: &[FieldDef] = &[
    ptr("RootedNodeAddress"),
    uint8("GCRootKind"),
    uint32("GCRootFlag"),
    ptr("GCRootID"),
];
pub(crate) const GC_BULK_ROOT_EDGE: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_ROOT_EDGE_VALUE),
];

const CWT_EDGE_VALUE: &[FieldDef] = &[ptr("GCKeyNodeID"), ptr("GCValueNodeID"), ptr("GCRootID")];
pub(crate) const GC_BULK_ROOT_CWT_EDGE: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", CWT_EDGE_VALUE),
];

const BULK_NODE_VALUE: &[FieldDef] = &[
    ptr("Address"),
    uint64("Size"),
    uint64("TypeID"),
    uint64("EdgeCount"),
];
pub(crate) const GC_BULK_NODE: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_NODE_VALUE),
];

const BULK_EDGE_VALUE: &[FieldDef] = &[ptr("Value"), uint32("ReferencingFieldID")];
pub(crate) const GC_BULK_EDGE: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_EDGE_VALUE),
];

pub(crate) const GC_SAMPLED_OBJECT_ALLOCATION: &[FieldDef] = &[
    ptr("Address"),
    ptr("TypeID"),
    uint32("ObjectCountForTypeSample"),
    uint64("TotalSizeForTypeSample"),
    uint16("ClrInstanceID"),
];

const SURVIVING_RANGE_VALUE: &[FieldDef] = &[ptr("RangeBase"), uint64("RangeLength")];
pub(crate) const GC_BULK_SURVIVING_OBJECT_RANGES: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", SURVIVING_RANGE_VALUE),
];

const MOVED_RANGE_VALUE: &[FieldDef] = &[
    ptr("OldRangeBase"),
    ptr("NewRangeBase"),
    uint64("RangeLength"),
];
pub(crate) const GC_BULK_MOVED_OBJECT_RANGES: &[FieldDef] = &[
    uint32("Index"),
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", MOVED_RANGE_VALUE),
];

pub(crate) const GC_GENERATION_RANGE: &[FieldDef] = &[
    uint8("Generation"),
    ptr("RangeStart"),
    uint64("RangeUsedLength"),
    uint64("RangeReservedLength"),
    uint16("ClrInstanceID"),
];

pub(crate) const GC_MARK: &[FieldDef] = &[uint32("HeapNum"), uint16("ClrInstanceID")];
/// The manifest calls the last field `Bytes`; TraceEvent calls it `Promoted`.
pub(crate) const GC_MARK_WITH_TYPE: &[FieldDef] = &[
    uint32("HeapNum"),
    uint16("ClrInstanceID"),
    uint32("Type"),
    uint64("Promoted"),
];
/// The manifest calls the last field `JoinID`; TraceEvent calls it `ID`.
pub(crate) const GC_JOIN_V2: &[FieldDef] = &[
    uint32("Heap"),
    uint32("JoinTime"),
    uint32("JoinType"),
    uint16("ClrInstanceID"),
    uint32("ID"),
];

pub(crate) const FINALIZE_OBJECT: &[FieldDef] =
    &[ptr("TypeID"), ptr("ObjectID"), uint16("ClrInstanceID")];
pub(crate) const SET_GC_HANDLE: &[FieldDef] = &[
    ptr("HandleID"),
    ptr("ObjectID"),
    uint32("Kind"),
    uint32("Generation"),
    uint64("AppDomainID"),
    uint16("ClrInstanceID"),
];
pub(crate) const DESTROY_GC_HANDLE: &[FieldDef] = &[ptr("HandleID"), uint16("ClrInstanceID")];
pub(crate) const PIN_OBJECT_AT_GC_TIME: &[FieldDef] = &[
    ptr("HandleID"),
    ptr("ObjectID"),
    uint64("ObjectSize"),
    string("TypeName"),
    uint16("ClrInstanceID"),
];
pub(crate) const PIN_PLUG_AT_GC_TIME: &[FieldDef] = &[
    ptr("PlugStart"),
    ptr("PlugEnd"),
    ptr("GapBeforeSize"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_TRIGGERED: &[FieldDef] = &[uint32("Reason"), uint16("ClrInstanceID")];

const BULK_ROOT_CCW_VALUE: &[FieldDef] = &[
    uint64("GCRootID"),
    uint64("ObjectID"),
    uint64("TypeID"),
    uint64("IUnknown"),
    uint32("RefCount"),
    uint32("PeggedRefCount"),
    uint32("Flags"),
];
pub(crate) const GC_BULK_ROOT_CCW: &[FieldDef] = &[
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_ROOT_CCW_VALUE),
];
const BULK_RCW_VALUE: &[FieldDef] = &[
    uint64("ObjectID"),
    uint64("TypeID"),
    uint64("IUnknown"),
    uint64("VTable"),
    uint32("RefCount"),
    uint32("Flags"),
];
pub(crate) const GC_BULK_RCW: &[FieldDef] = &[
    uint32("Count"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_RCW_VALUE),
];
const BULK_ROOT_STATIC_VAR_VALUE: &[FieldDef] = &[
    uint64("GCRootID"),
    uint64("ObjectID"),
    uint64("TypeID"),
    uint32("Flags"),
    string("FieldName"),
];
pub(crate) const GC_BULK_ROOT_STATIC_VAR: &[FieldDef] = &[
    uint32("Count"),
    uint64("AppDomainID"),
    uint16("ClrInstanceID"),
    structs("Values", "Count", BULK_ROOT_STATIC_VAR_VALUE),
];
/// `Data` is an inner payload whose layout depends on `Name` (e.g. `CommittedUsage`,
/// `HeapCountTuning`); it is returned as bytes.
pub(crate) const GC_DYNAMIC_EVENT: &[FieldDef] = &[
    string("Name"),
    uint32("DataSize"),
    blob("Data", "DataSize"),
    uint16("ClrInstanceID"),
];
pub(crate) const INCREASE_MEMORY_PRESSURE: &[FieldDef] =
    &[uint64("BytesAllocated"), uint16("ClrInstanceID")];
pub(crate) const DECREASE_MEMORY_PRESSURE: &[FieldDef] =
    &[uint64("BytesFreed"), uint16("ClrInstanceID")];

const PER_HEAP_GEN_DATA: &[FieldDef] = &[
    ptr("SizeBefore"),
    ptr("FreeListBefore"),
    ptr("FreeObjBefore"),
    ptr("SizeAfter"),
    ptr("FreeListAfter"),
    ptr("FreeObjAfter"),
    ptr("In"),
    ptr("PinnedSurv"),
    ptr("NonePinnedSurv"),
    ptr("NewAllocation"),
];
/// Version 3, the only version CoreCLR writes. Versions 0-2 (.NET Framework) used a different,
/// fixed-size layout with the generation data first; they have no layout here.
pub(crate) const GC_PER_HEAP_HISTORY_V3: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    ptr("FreeListAllocated"),
    ptr("FreeListRejected"),
    ptr("EndOfSegAllocated"),
    ptr("CondemnedAllocated"),
    ptr("PinnedAllocated"),
    ptr("PinnedAllocatedAdvance"),
    uint32("RunningFreeListEfficiency"),
    uint32("CondemnReasons0"),
    uint32("CondemnReasons1"),
    uint32("CompactMechanisms"),
    uint32("ExpandMechanisms"),
    uint32("HeapIndex"),
    ptr("ExtraGen0Commit"),
    uint32("Count"),
    structs("Values", "Count", PER_HEAP_GEN_DATA),
];

/// Versions 0 and 1 come from .NET Framework (not in the CoreCLR manifest); their layout is the
/// prefix of version 2 that TraceEvent reads.
pub(crate) const GC_GLOBAL_HEAP_V0: &[FieldDef] = &[
    uint64("FinalYoungestDesired"),
    int32("NumHeaps"),
    uint32("CondemnedGeneration"),
    uint32("Gen0ReductionCount"),
    uint32("Reason"),
    uint32("GlobalMechanisms"),
];
pub(crate) const GC_GLOBAL_HEAP_V1: &[FieldDef] = &[
    uint64("FinalYoungestDesired"),
    int32("NumHeaps"),
    uint32("CondemnedGeneration"),
    uint32("Gen0ReductionCount"),
    uint32("Reason"),
    uint32("GlobalMechanisms"),
    uint16("ClrInstanceID"),
];
pub(crate) const GC_GLOBAL_HEAP_V2: &[FieldDef] = &[
    uint64("FinalYoungestDesired"),
    int32("NumHeaps"),
    uint32("CondemnedGeneration"),
    uint32("Gen0ReductionCount"),
    uint32("Reason"),
    uint32("GlobalMechanisms"),
    uint16("ClrInstanceID"),
    uint32("PauseMode"),
    uint32("MemoryPressure"),
];
pub(crate) const GC_GLOBAL_HEAP_V3: &[FieldDef] = &[
    uint64("FinalYoungestDesired"),
    int32("NumHeaps"),
    uint32("CondemnedGeneration"),
    uint32("Gen0ReductionCount"),
    uint32("Reason"),
    uint32("GlobalMechanisms"),
    uint16("ClrInstanceID"),
    uint32("PauseMode"),
    uint32("MemoryPressure"),
    uint32("CondemnReasons0"),
    uint32("CondemnReasons1"),
];
const GLOBAL_HEAP_TIME: &[FieldDef] = &[uint32("Time")];
pub(crate) const GC_GLOBAL_HEAP_V4: &[FieldDef] = &[
    uint64("FinalYoungestDesired"),
    int32("NumHeaps"),
    uint32("CondemnedGeneration"),
    uint32("Gen0ReductionCount"),
    uint32("Reason"),
    uint32("GlobalMechanisms"),
    uint16("ClrInstanceID"),
    uint32("PauseMode"),
    uint32("MemoryPressure"),
    uint32("CondemnReasons0"),
    uint32("CondemnReasons1"),
    uint32("Count"),
    structs("Values", "Count", GLOBAL_HEAP_TIME),
];
pub(crate) const GEN_AWARE: &[FieldDef] = &[uint32("Count"), uint16("ClrInstanceID")];
const LOH_COMPACT_VALUE: &[FieldDef] = &[
    uint32("TimePlan"),
    uint32("TimeCompact"),
    uint32("TimeRelocate"),
    ptr("TotalRefs"),
    ptr("ZeroRefs"),
];
pub(crate) const GC_LOH_COMPACT: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint16("Count"),
    structs("Values", "Count", LOH_COMPACT_VALUE),
];
const FIT_BUCKET_VALUE: &[FieldDef] = &[uint16("Index"), uint32("Count"), ptr("Size")];
pub(crate) const GC_FIT_BUCKET_INFO: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint16("BucketKind"),
    uint64("TotalSize"),
    uint16("Count"),
    structs("Values", "Count", FIT_BUCKET_VALUE),
];
/// Rundown `GCSettingsRundown` (layout as TraceEvent reads it).
pub(crate) const GC_SETTINGS_RUNDOWN: &[FieldDef] = &[
    uint64("HardLimit"),
    uint64("LOHThreshold"),
    uint64("PhysicalMemoryConfig"),
    uint64("Gen0MinBudgetConfig"),
    uint64("Gen0MaxBudgetConfig"),
    uint32("HighMemPercentConfig"),
    uint32("BitSettings"),
    uint16("ClrInstanceID"),
];

// ---------------------------------------------------------------------------------------------
// Threads and the thread pool

pub(crate) const CLR_WORKER_THREAD: &[FieldDef] =
    &[uint32("WorkerThreadCount"), uint32("RetiredWorkerThreads")];
pub(crate) const IO_THREAD_V0: &[FieldDef] = &[uint32("IOThreadCount"), uint32("RetiredIOThreads")];
pub(crate) const IO_THREAD_V1: &[FieldDef] = &[
    uint32("IOThreadCount"),
    uint32("RetiredIOThreads"),
    uint16("ClrInstanceID"),
];
pub(crate) const CLR_THREAD_POOL_SUSPEND: &[FieldDef] =
    &[uint32("ClrThreadID"), uint32("CpuUtilization")];
pub(crate) const THREAD_POOL_WORKER_THREAD: &[FieldDef] = &[
    uint32("ActiveWorkerThreadCount"),
    uint32("RetiredWorkerThreadCount"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_POOL_ADJUSTMENT_SAMPLE: &[FieldDef] =
    &[double("Throughput"), uint16("ClrInstanceID")];
pub(crate) const THREAD_POOL_ADJUSTMENT: &[FieldDef] = &[
    double("AverageThroughput"),
    uint32("NewWorkerThreadCount"),
    uint32("Reason"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_POOL_ADJUSTMENT_STATS: &[FieldDef] = &[
    double("Duration"),
    double("Throughput"),
    double("ThreadWave"),
    double("ThroughputWave"),
    double("ThroughputErrorEstimate"),
    double("AverageThroughputErrorEstimate"),
    double("ThroughputRatio"),
    double("Confidence"),
    double("NewControlSetting"),
    uint16("NewThreadWaveMagnitude"),
    uint16("ClrInstanceID"),
];
/// Event 58 since .NET 6. (.NET 5 wrote `InitializeYieldProcessorNormalized` under the same id
/// and version with a different payload: two `u32` and a `ClrInstanceID`.)
pub(crate) const YIELD_PROCESSOR_MEASUREMENT: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    double("NsPerYield"),
    double("EstablishedNsPerYield"),
];
pub(crate) const THREAD_POOL_MIN_MAX_THREADS: &[FieldDef] = &[
    uint16("MinWorkerThreads"),
    uint16("MaxWorkerThreads"),
    uint16("MinIOCompletionThreads"),
    uint16("MaxIOCompletionThreads"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_POOL_WORKING_THREAD_COUNT: &[FieldDef] =
    &[uint32("Count"), uint16("ClrInstanceID")];
pub(crate) const THREAD_POOL_WORK: &[FieldDef] = &[ptr("WorkID"), uint16("ClrInstanceID")];
pub(crate) const THREAD_POOL_IO_WORK_ENQUEUE: &[FieldDef] = &[
    ptr("NativeOverlapped"),
    ptr("Overlapped"),
    boolean("MultiDequeues"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_POOL_IO_WORK: &[FieldDef] = &[
    ptr("NativeOverlapped"),
    ptr("Overlapped"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_START_WORK: &[FieldDef] = &[ptr("ID"), uint16("ClrInstanceID")];
pub(crate) const THREAD_CREATED: &[FieldDef] = &[
    uint64("ManagedThreadID"),
    uint64("AppDomainID"),
    uint32("Flags"),
    uint32("ManagedThreadIndex"),
    uint32("OSThreadID"),
    uint16("ClrInstanceID"),
];
pub(crate) const THREAD_TERMINATED_OR_TRANSITION: &[FieldDef] = &[
    uint64("ManagedThreadID"),
    uint64("AppDomainID"),
    uint16("ClrInstanceID"),
];
pub(crate) const WAIT_HANDLE_WAIT_START: &[FieldDef] = &[
    uint8("WaitSource"),
    ptr("AssociatedObjectID"),
    uint16("ClrInstanceID"),
];

// ---------------------------------------------------------------------------------------------
// Exceptions and contention

pub(crate) const EXCEPTION_V1: &[FieldDef] = &[
    string("ExceptionType"),
    string("ExceptionMessage"),
    ptr("ExceptionEIP"),
    uint32("ExceptionHRESULT"),
    uint16("ExceptionFlags"),
    uint16("ClrInstanceID"),
];
pub(crate) const EXCEPTION_HANDLING: &[FieldDef] = &[
    uint64("EntryEIP"),
    uint64("MethodID"),
    string("MethodName"),
    uint16("ClrInstanceID"),
];
pub(crate) const CONTENTION: &[FieldDef] = &[uint8("ContentionFlags"), uint16("ClrInstanceID")];
pub(crate) const CONTENTION_START_V2: &[FieldDef] = &[
    uint8("ContentionFlags"),
    uint16("ClrInstanceID"),
    ptr("LockID"),
    ptr("AssociatedObjectID"),
    uint64("LockOwnerThreadID"),
];
pub(crate) const CONTENTION_STOP_V1: &[FieldDef] = &[
    uint8("ContentionFlags"),
    uint16("ClrInstanceID"),
    double("DurationNs"),
];
pub(crate) const LOCK_CREATED: &[FieldDef] = &[
    ptr("LockID"),
    ptr("AssociatedObjectID"),
    uint16("ClrInstanceID"),
];

// ---------------------------------------------------------------------------------------------
// Stacks, app domains, interop

/// The manifest declares `Stack` with a fixed count of 2; the runtime writes `FrameCount`
/// pointers, which is how it is read here.
pub(crate) const CLR_STACK_WALK: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint8("Reserved1"),
    uint8("Reserved2"),
    uint32("FrameCount"),
    array("Stack", Scalar::Pointer, "FrameCount"),
];
pub(crate) const APP_DOMAIN_MEM_ALLOCATED: &[FieldDef] = &[
    uint64("AppDomainID"),
    uint64("Allocated"),
    uint16("ClrInstanceID"),
];
pub(crate) const APP_DOMAIN_MEM_SURVIVED: &[FieldDef] = &[
    uint64("AppDomainID"),
    uint64("Survived"),
    uint64("ProcessSurvived"),
    uint16("ClrInstanceID"),
];
pub(crate) const IL_STUB_GENERATED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint64("ModuleID"),
    uint64("StubMethodID"),
    uint32("StubFlags"),
    uint32("ManagedInteropMethodToken"),
    string("ManagedInteropMethodNamespace"),
    string("ManagedInteropMethodName"),
    string("ManagedInteropMethodSignature"),
    string("NativeMethodSignature"),
    string("StubMethodSignature"),
    string("StubMethodILCode"),
];
pub(crate) const IL_STUB_CACHE_HIT: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint64("ModuleID"),
    uint64("StubMethodID"),
    uint32("ManagedInteropMethodToken"),
    string("ManagedInteropMethodNamespace"),
    string("ManagedInteropMethodName"),
    string("ManagedInteropMethodSignature"),
];

// ---------------------------------------------------------------------------------------------
// Methods and the JIT

pub(crate) const METHOD_LOAD_V0: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
];
pub(crate) const METHOD_LOAD_V1: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
    uint16("ClrInstanceID"),
];
pub(crate) const METHOD_LOAD_V2: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
    uint16("ClrInstanceID"),
    uint64("ReJITID"),
];
pub(crate) const METHOD_LOAD_VERBOSE_V0: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
];
pub(crate) const METHOD_LOAD_VERBOSE_V1: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
    uint16("ClrInstanceID"),
];
pub(crate) const METHOD_LOAD_VERBOSE_V2: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("MethodStartAddress"),
    uint32("MethodSize"),
    uint32("MethodToken"),
    uint32("MethodFlags"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
    uint16("ClrInstanceID"),
    uint64("ReJITID"),
];
pub(crate) const METHOD_JITTING_STARTED_V0: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint32("MethodToken"),
    uint32("MethodILSize"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
];
pub(crate) const METHOD_JITTING_STARTED_V1: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint32("MethodToken"),
    uint32("MethodILSize"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
    uint16("ClrInstanceID"),
];
pub(crate) const METHOD_JIT_MEMORY_ALLOCATED_FOR_CODE: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ModuleID"),
    uint64("JitHotCodeRequestSize"),
    uint64("JitRODataRequestSize"),
    uint64("AllocatedSizeForJitCode"),
    uint32("JitAllocFlag"),
    uint16("ClrInstanceID"),
];
pub(crate) const METHOD_DETAILS: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("TypeID"),
    uint32("MethodToken"),
    uint32("TypeParameterCount"),
    uint64("LoaderModuleID"),
    array("TypeParameters", Scalar::U64, "TypeParameterCount"),
];
pub(crate) const TYPE_LOAD_START: &[FieldDef] =
    &[uint32("TypeLoadStartID"), uint16("ClrInstanceID")];
pub(crate) const TYPE_LOAD_STOP: &[FieldDef] = &[
    uint32("TypeLoadStartID"),
    uint16("ClrInstanceID"),
    uint16("LoadLevel"),
    uint64("TypeID"),
    string("TypeName"),
];
pub(crate) const R2R_GET_ENTRY_POINT: &[FieldDef] = &[
    uint64("MethodID"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
    uint64("EntryPoint"),
    uint16("ClrInstanceID"),
];
pub(crate) const R2R_GET_ENTRY_POINT_START: &[FieldDef] =
    &[uint64("MethodID"), uint16("ClrInstanceID")];

/// `ILOffsets` are read as signed: the runtime writes -1 (no mapping), -2 (prolog) and
/// -3 (epilog) there.
pub(crate) const METHOD_IL_TO_NATIVE_MAP_V0: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ReJITID"),
    uint8("MethodExtent"),
    uint16("CountOfMapEntries"),
    array("ILOffsets", Scalar::I32, "CountOfMapEntries"),
    array("NativeOffsets", Scalar::U32, "CountOfMapEntries"),
    uint16("ClrInstanceID"),
];
pub(crate) const METHOD_IL_TO_NATIVE_MAP_V1: &[FieldDef] = &[
    uint64("MethodID"),
    uint64("ReJITID"),
    uint8("MethodExtent"),
    uint16("CountOfMapEntries"),
    array("ILOffsets", Scalar::I32, "CountOfMapEntries"),
    array("NativeOffsets", Scalar::U32, "CountOfMapEntries"),
    uint16("ClrInstanceID"),
    uint64("ILVersionID"),
];

pub(crate) const INLINING_SUCCEEDED: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("InlinerNamespace"),
    string("InlinerName"),
    string("InlinerNameSignature"),
    string("InlineeNamespace"),
    string("InlineeName"),
    string("InlineeNameSignature"),
    uint16("ClrInstanceID"),
];
pub(crate) const INLINING_FAILED_ANSI: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("InlinerNamespace"),
    string("InlinerName"),
    string("InlinerNameSignature"),
    string("InlineeNamespace"),
    string("InlineeName"),
    string("InlineeNameSignature"),
    boolean("FailAlways"),
    ansi("FailReason"),
    uint16("ClrInstanceID"),
];
pub(crate) const INLINING_FAILED: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("InlinerNamespace"),
    string("InlinerName"),
    string("InlinerNameSignature"),
    string("InlineeNamespace"),
    string("InlineeName"),
    string("InlineeNameSignature"),
    boolean("FailAlways"),
    string("FailReason"),
    uint16("ClrInstanceID"),
];
pub(crate) const TAIL_CALL_SUCCEEDED: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("CallerNamespace"),
    string("CallerName"),
    string("CallerNameSignature"),
    string("CalleeNamespace"),
    string("CalleeName"),
    string("CalleeNameSignature"),
    boolean("TailPrefix"),
    uint32("TailCallType"),
    uint16("ClrInstanceID"),
];
pub(crate) const TAIL_CALL_FAILED_ANSI: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("CallerNamespace"),
    string("CallerName"),
    string("CallerNameSignature"),
    string("CalleeNamespace"),
    string("CalleeName"),
    string("CalleeNameSignature"),
    boolean("TailPrefix"),
    ansi("FailReason"),
    uint16("ClrInstanceID"),
];
pub(crate) const TAIL_CALL_FAILED: &[FieldDef] = &[
    string("MethodBeingCompiledNamespace"),
    string("MethodBeingCompiledName"),
    string("MethodBeingCompiledNameSignature"),
    string("CallerNamespace"),
    string("CallerName"),
    string("CallerNameSignature"),
    string("CalleeNamespace"),
    string("CalleeName"),
    string("CalleeNameSignature"),
    boolean("TailPrefix"),
    string("FailReason"),
    uint16("ClrInstanceID"),
];
pub(crate) const TIERED_COMPILATION_SETTINGS: &[FieldDef] =
    &[uint16("ClrInstanceID"), uint32("Flags")];
pub(crate) const TIERED_COMPILATION_RESUME: &[FieldDef] =
    &[uint16("ClrInstanceID"), uint32("NewMethodCount")];
pub(crate) const TIERED_COMPILATION_BACKGROUND_JIT_START: &[FieldDef] =
    &[uint16("ClrInstanceID"), uint32("PendingMethodCount")];
pub(crate) const TIERED_COMPILATION_BACKGROUND_JIT_STOP: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint32("PendingMethodCount"),
    uint32("JittedMethodCount"),
];
pub(crate) const JIT_INSTRUMENTATION_DATA: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint32("MethodFlags"),
    uint32("DataSize"),
    uint64("MethodID"),
    blob("Data", "DataSize"),
];
pub(crate) const JIT_INSTRUMENTATION_DATA_VERBOSE: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint32("MethodFlags"),
    uint32("DataSize"),
    uint64("MethodID"),
    uint64("ModuleID"),
    uint32("MethodToken"),
    string("MethodNamespace"),
    string("MethodName"),
    string("MethodSignature"),
    blob("Data", "DataSize"),
];
pub(crate) const CODE_SYMBOLS: &[FieldDef] = &[
    uint64("ModuleId"),
    uint16("TotalChunks"),
    uint16("ChunkNumber"),
    uint32("ChunkLength"),
    blob("Chunk", "ChunkLength"),
    uint16("ClrInstanceID"),
];

// ---------------------------------------------------------------------------------------------
// Loader

pub(crate) const MODULE_LOAD_V0: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
];
pub(crate) const MODULE_LOAD_V1: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
    uint16("ClrInstanceID"),
];
pub(crate) const MODULE_LOAD_V2: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
    uint16("ClrInstanceID"),
    guid("ManagedPdbSignature"),
    uint32("ManagedPdbAge"),
    string("ManagedPdbBuildPath"),
    guid("NativePdbSignature"),
    uint32("NativePdbAge"),
    string("NativePdbBuildPath"),
];
/// `ModuleLoad_V3` (.NET 10) appends the native image's build id.
pub(crate) const MODULE_LOAD_V3: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
    uint16("ClrInstanceID"),
    guid("ManagedPdbSignature"),
    uint32("ManagedPdbAge"),
    string("ManagedPdbBuildPath"),
    guid("NativePdbSignature"),
    uint32("NativePdbAge"),
    string("NativePdbBuildPath"),
    string("NativeBuildID"),
];
pub(crate) const DOMAIN_MODULE_LOAD_V0: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint64("AppDomainID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
];
pub(crate) const DOMAIN_MODULE_LOAD_V1: &[FieldDef] = &[
    uint64("ModuleID"),
    uint64("AssemblyID"),
    uint64("AppDomainID"),
    uint32("ModuleFlags"),
    uint32("Reserved1"),
    string("ModuleILPath"),
    string("ModuleNativePath"),
    uint16("ClrInstanceID"),
];
pub(crate) const ASSEMBLY_LOAD_V0: &[FieldDef] = &[
    uint64("AssemblyID"),
    uint64("AppDomainID"),
    uint32("AssemblyFlags"),
    string("FullyQualifiedAssemblyName"),
];
pub(crate) const ASSEMBLY_LOAD_V1: &[FieldDef] = &[
    uint64("AssemblyID"),
    uint64("AppDomainID"),
    uint64("BindingID"),
    uint32("AssemblyFlags"),
    string("FullyQualifiedAssemblyName"),
    uint16("ClrInstanceID"),
];
pub(crate) const APP_DOMAIN_LOAD_V0: &[FieldDef] = &[
    uint64("AppDomainID"),
    uint32("AppDomainFlags"),
    string("AppDomainName"),
];
pub(crate) const APP_DOMAIN_LOAD_V1: &[FieldDef] = &[
    uint64("AppDomainID"),
    uint32("AppDomainFlags"),
    string("AppDomainName"),
    uint32("AppDomainIndex"),
    uint16("ClrInstanceID"),
];
pub(crate) const MODULE_RANGE: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint64("ModuleID"),
    uint32("RangeBegin"),
    uint32("RangeSize"),
    uint8("RangeType"),
];
pub(crate) const STRONG_NAME_VERIFICATION_V0: &[FieldDef] = &[
    uint32("VerificationFlags"),
    uint32("ErrorCode"),
    string("FullyQualifiedAssemblyName"),
];
pub(crate) const STRONG_NAME_VERIFICATION_V1: &[FieldDef] = &[
    uint32("VerificationFlags"),
    uint32("ErrorCode"),
    string("FullyQualifiedAssemblyName"),
    uint16("ClrInstanceID"),
];
pub(crate) const AUTHENTICODE_VERIFICATION_V0: &[FieldDef] = &[
    uint32("VerificationFlags"),
    uint32("ErrorCode"),
    string("ModulePath"),
];
pub(crate) const AUTHENTICODE_VERIFICATION_V1: &[FieldDef] = &[
    uint32("VerificationFlags"),
    uint32("ErrorCode"),
    string("ModulePath"),
    uint16("ClrInstanceID"),
];
pub(crate) const ASSEMBLY_LOAD_START: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    string("AssemblyPath"),
    string("RequestingAssembly"),
    string("AssemblyLoadContext"),
    string("RequestingAssemblyLoadContext"),
];
pub(crate) const ASSEMBLY_LOAD_STOP: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    string("AssemblyPath"),
    string("RequestingAssembly"),
    string("AssemblyLoadContext"),
    string("RequestingAssemblyLoadContext"),
    boolean("Success"),
    string("ResultAssemblyName"),
    string("ResultAssemblyPath"),
    boolean("Cached"),
];
pub(crate) const RESOLUTION_ATTEMPTED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    uint16("Stage"),
    string("AssemblyLoadContext"),
    uint16("Result"),
    string("ResultAssemblyName"),
    string("ResultAssemblyPath"),
    string("ErrorMessage"),
];
pub(crate) const ALC_RESOLVING_HANDLER_INVOKED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    string("HandlerName"),
    string("AssemblyLoadContext"),
    string("ResultAssemblyName"),
    string("ResultAssemblyPath"),
];
pub(crate) const APP_DOMAIN_ASSEMBLY_RESOLVE_HANDLER_INVOKED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    string("HandlerName"),
    string("ResultAssemblyName"),
    string("ResultAssemblyPath"),
];
pub(crate) const ASSEMBLY_LOAD_FROM_RESOLVE_HANDLER_INVOKED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("AssemblyName"),
    boolean("IsTrackedLoad"),
    string("RequestingAssemblyPath"),
    string("ComputedRequestedAssemblyPath"),
];
pub(crate) const KNOWN_PATH_PROBED: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    string("FilePath"),
    uint16("Source"),
    int32("Result"),
];

// ---------------------------------------------------------------------------------------------
// Runtime information, diagnostics

pub(crate) const RUNTIME_INFORMATION: &[FieldDef] = &[
    uint16("ClrInstanceID"),
    uint16("Sku"),
    uint16("BclMajorVersion"),
    uint16("BclMinorVersion"),
    uint16("BclBuildNumber"),
    uint16("BclQfeNumber"),
    uint16("VMMajorVersion"),
    uint16("VMMinorVersion"),
    uint16("VMBuildNumber"),
    uint16("VMQfeNumber"),
    uint32("StartupFlags"),
    uint8("StartupMode"),
    string("CommandLine"),
    guid("ComObjectGuid"),
    string("RuntimeDllPath"),
];
/// The manifest calls the second field `EventName`; TraceEvent calls it `Name`.
pub(crate) const EVENT_SOURCE: &[FieldDef] = &[
    int32("EventID"),
    string("Name"),
    string("EventSourceName"),
    string("Payload"),
];
pub(crate) const PROFILER_MESSAGE: &[FieldDef] = &[uint16("ClrInstanceID"), string("Message")];
pub(crate) const EXECUTION_CHECKPOINT: &[FieldDef] =
    &[uint16("ClrInstanceID"), string("Name"), int64("Timestamp")];
/// `AllocationSampled` (.NET 10).
pub(crate) const ALLOCATION_SAMPLED: &[FieldDef] = &[
    uint32("AllocationKind"),
    uint16("ClrInstanceID"),
    ptr("TypeID"),
    string("TypeName"),
    ptr("Address"),
    uint64("ObjectSize"),
    uint64("SampledByteOffset"),
];

// ---------------------------------------------------------------------------------------------
// Other providers

/// SampleProfiler `ThreadSample`: one `u32`, see [`crate::ThreadSampleType`].
pub(crate) const THREAD_SAMPLE: &[FieldDef] = &[uint32("Type")];
/// EventPipe `ProcessInfo` as .NET 5 wrote it (metadata version 0): the command line only.
pub(crate) const PROCESS_INFO_V0: &[FieldDef] = &[string("CommandLine")];
/// EventPipe `ProcessInfo` since .NET 6 (`ep-event-source.c`, metadata version 1).
pub(crate) const PROCESS_INFO_V1: &[FieldDef] = &[
    string("CommandLine"),
    string("OSInformation"),
    string("ArchInformation"),
];
