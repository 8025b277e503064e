//! What the models see of an event: which known event it is, when, on which thread, its
//! decoded fields and its interned stack. The driver decodes only the events some model asks
//! for (see [`wanted`]), so a pass over a large trace stays close to the reader's speed.

use clr_events::{Decoded, KnownProvider};

use crate::stacks::StackId;

/// One decoded event of a well-known provider.
#[derive(Debug)]
pub struct EventCtx<'a> {
    /// The provider.
    pub provider: KnownProvider,
    /// Event id.
    pub id: u32,
    /// Event version.
    pub version: u8,
    /// Nanoseconds since the trace started.
    pub ts_ns: i64,
    /// The thread the event is about (the OS thread id).
    pub thread_id: u64,
    /// The decoded payload.
    pub fields: &'a Decoded,
    /// The event's stack, interned (None when the event has none).
    pub stack: Option<StackId>,
}

/// Runtime provider event ids the models use.
pub mod runtime {
    /// GC/Start.
    pub const GC_START: u32 = 1;
    /// GC/Stop.
    pub const GC_STOP: u32 = 2;
    /// GC/RestartEEStop.
    pub const GC_RESTART_EE_STOP: u32 = 3;
    /// GC/HeapStats.
    pub const GC_HEAP_STATS: u32 = 4;
    /// GC/RestartEEStart.
    pub const GC_RESTART_EE_START: u32 = 7;
    /// GC/SuspendEEStop.
    pub const GC_SUSPEND_EE_STOP: u32 = 8;
    /// GC/SuspendEEStart.
    pub const GC_SUSPEND_EE_START: u32 = 9;
    /// GC/AllocationTick.
    pub const GC_ALLOCATION_TICK: u32 = 10;
    /// GC/Triggered.
    pub const GC_TRIGGERED: u32 = 35;
    /// ThreadPoolWorkerThread/Start.
    pub const TP_WORKER_START: u32 = 50;
    /// ThreadPoolWorkerThread/Stop.
    pub const TP_WORKER_STOP: u32 = 51;
    /// ThreadPoolWorkerThreadAdjustment/Sample.
    pub const TP_ADJUSTMENT_SAMPLE: u32 = 54;
    /// ThreadPoolWorkerThreadAdjustment/Adjustment.
    pub const TP_ADJUSTMENT: u32 = 55;
    /// ThreadPoolWorkerThreadAdjustment/Stats.
    pub const TP_ADJUSTMENT_STATS: u32 = 56;
    /// ThreadPoolWorkerThread/Wait.
    pub const TP_WORKER_WAIT: u32 = 57;
    /// Exception/Start (ExceptionThrown).
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
    /// GC/GlobalHeapHistory.
    pub const GC_GLOBAL_HEAP_HISTORY: u32 = 205;
    /// ExceptionCatch/Start.
    pub const EXCEPTION_CATCH_START: u32 = 250;
    /// Thread/Created (ThreadCreating).
    pub const THREAD_CREATING: u32 = 70;
    /// WaitHandleWait/Start.
    pub const WAIT_HANDLE_WAIT_START: u32 = 301;
    /// WaitHandleWait/Stop.
    pub const WAIT_HANDLE_WAIT_STOP: u32 = 302;
}

/// Rundown provider event ids the models use.
pub mod rundown {
    /// Method/DCStartVerbose.
    pub const METHOD_DC_START_VERBOSE: u32 = 143;
    /// Method/DCStopVerbose.
    pub const METHOD_DC_STOP_VERBOSE: u32 = 144;
    /// Loader/ModuleDCStop.
    pub const MODULE_DC_STOP: u32 = 152;
}

/// True when some model uses this event: only these are decoded.
pub fn wanted(provider: KnownProvider, id: u32) -> bool {
    use runtime::*;
    match provider {
        KnownProvider::Runtime => matches!(
            id,
            GC_START
                | GC_STOP
                | GC_RESTART_EE_STOP
                | GC_HEAP_STATS
                | GC_RESTART_EE_START
                | GC_SUSPEND_EE_STOP
                | GC_SUSPEND_EE_START
                | GC_ALLOCATION_TICK
                | GC_TRIGGERED
                | TP_WORKER_START
                | TP_WORKER_STOP
                | TP_ADJUSTMENT_SAMPLE
                | TP_ADJUSTMENT
                | TP_ADJUSTMENT_STATS
                | TP_WORKER_WAIT
                | EXCEPTION_START
                | CONTENTION_START
                | THREAD_CREATED
                | CONTENTION_STOP
                | METHOD_LOAD_VERBOSE
                | METHOD_UNLOAD_VERBOSE
                | R2R_GET_ENTRY_POINT
                | MODULE_LOAD
                | GC_GLOBAL_HEAP_HISTORY
                | EXCEPTION_CATCH_START
                | THREAD_CREATING
                | WAIT_HANDLE_WAIT_START
                | WAIT_HANDLE_WAIT_STOP
        ),
        KnownProvider::Rundown => matches!(
            id,
            rundown::METHOD_DC_START_VERBOSE
                | rundown::METHOD_DC_STOP_VERBOSE
                | rundown::MODULE_DC_STOP
        ),
        KnownProvider::SampleProfiler => true,
        _ => false,
    }
}
