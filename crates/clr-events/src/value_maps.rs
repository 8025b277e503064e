//! The runtime's value maps (the manifest's `valueMap`s) the typed views return: GC reason
//! and type, suspension reason, heap kind, thread pool adjustment reason, GC root kind. Each
//! is an enum with an `Other(u32)` for values this crate does not know, converts from and to
//! the raw value, and prints its manifest name (honouring width and alignment).

use std::fmt;

/// Declares a value map: an enum with the known values, `Other(u32)`, conversion from the raw
/// value, and `Display` with the names.
macro_rules! value_map {
    ($(#[$m:meta])* $name:ident, other = $fmt:literal, { $($(#[$vm:meta])* $v:ident = $n:literal => $s:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $v,)*
            /// A value this crate has no name for.
            Other(u32),
        }

        impl $name {
            /// Classifies a raw value.
            pub fn from_u32(v: u32) -> $name {
                match v {
                    $($n => $name::$v,)*
                    other => $name::Other(other),
                }
            }

            /// The raw value.
            pub fn to_u32(self) -> u32 {
                match self {
                    $($name::$v => $n,)*
                    $name::Other(v) => v,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($name::$v => f.pad($s),)*
                    $name::Other(v) => f.pad(&format!($fmt, v)),
                }
            }
        }
    };
}

value_map!(
    /// Why a GC ran (`GC/Start`'s `Reason`).
    GcReason, other = "Reason{}", {
        /// A small object allocation ran out of budget.
        AllocSmall = 0 => "AllocSmall",
        /// `GC.Collect()`.
        Induced = 1 => "Induced",
        /// The OS reported low memory.
        LowMemory = 2 => "LowMemory",
        /// Empty.
        Empty = 3 => "Empty",
        /// A large object allocation ran out of budget.
        AllocLarge = 4 => "AllocLarge",
        /// No space left for small objects.
        OutOfSpaceSoh = 5 => "OutOfSpaceSOH",
        /// No space left for large objects.
        OutOfSpaceLoh = 6 => "OutOfSpaceLOH",
        /// Induced, not forced as blocking.
        InducedNotForced = 7 => "InducedNotForced",
        /// Internal (stress).
        Internal = 8 => "Internal",
        /// Induced for low memory.
        InducedLowMemory = 9 => "InducedLowMemory",
        /// Induced, compacting.
        InducedCompacting = 10 => "InducedCompacting",
        /// The host reported low memory.
        LowMemoryHost = 11 => "LowMemoryHost",
        /// Provisional mode full GC.
        PmFullGc = 12 => "PMFullGC",
        /// The host reported low memory, blocking.
        LowMemoryHostBlocking = 13 => "LowMemoryHostBlocking",
    }
);

impl GcReason {
    /// True for the `Induced*` reasons (`GC.Collect()` and friends).
    pub fn is_induced(self) -> bool {
        matches!(
            self,
            GcReason::Induced
                | GcReason::InducedNotForced
                | GcReason::InducedLowMemory
                | GcReason::InducedCompacting
        )
    }
}

value_map!(
    /// How a GC ran (`GC/Start`'s `Type`).
    GcType, other = "Type{}", {
        /// Blocking.
        NonConcurrent = 0 => "NonConcurrent",
        /// Background (concurrent with the program).
        Background = 1 => "Background",
        /// A blocking gen0/gen1 GC during a background GC.
        Foreground = 2 => "Foreground",
    }
);

value_map!(
    /// Why the runtime suspended managed threads (`GC/SuspendEEStart`'s `Reason`).
    SuspendReason, other = "Reason{}", {
        /// Other.
        Other0 = 0 => "SuspendOther",
        /// For a GC.
        ForGc = 1 => "SuspendForGC",
        /// App domain shutdown.
        ForAppDomainShutdown = 2 => "SuspendForAppDomainShutdown",
        /// Code pitching.
        ForCodePitching = 3 => "SuspendForCodePitching",
        /// Runtime shutdown.
        ForShutdown = 4 => "SuspendForShutdown",
        /// The debugger.
        ForDebugger = 5 => "SuspendForDebugger",
        /// Preparing a GC.
        ForGcPrep = 6 => "SuspendForGCPrep",
        /// The debugger's sweep.
        ForDebuggerSweep = 7 => "SuspendForDebuggerSweep",
    }
);

impl SuspendReason {
    /// True for suspensions that pause the program for a GC (for the GC or its preparation).
    pub fn is_for_gc(self) -> bool {
        matches!(self, SuspendReason::ForGc | SuspendReason::ForGcPrep)
    }
}

value_map!(
    /// The heap an allocation went to (`GC/AllocationTick`'s `AllocationKind`).
    HeapKind, other = "Heap{}", {
        /// Small object heap.
        Soh = 0 => "SOH",
        /// Large object heap.
        Loh = 1 => "LOH",
        /// Pinned object heap.
        Poh = 2 => "POH",
    }
);

value_map!(
    /// Why the thread pool's hill climbing changed the worker count.
    AdjustmentReason, other = "Reason{}", {
        /// Warmup.
        Warmup = 0 => "Warmup",
        /// Initializing.
        Initializing = 1 => "Initializing",
        /// A random move.
        RandomMove = 2 => "RandomMove",
        /// Climbing.
        ClimbingMove = 3 => "ClimbingMove",
        /// A change point.
        ChangePoint = 4 => "ChangePoint",
        /// Stabilizing.
        Stabilizing = 5 => "Stabilizing",
        /// Work waited with no thread free: threads were added.
        Starvation = 6 => "Starvation",
        /// A thread timed out.
        ThreadTimedOut = 7 => "ThreadTimedOut",
        /// Cooperative blocking.
        CooperativeBlocking = 8 => "CooperativeBlocking",
    }
);

value_map!(
    /// What roots an object (`GC/BulkRootEdge`'s `GCRootKind`).
    GcRootKind, other = "Root{}", {
        /// A stack slot.
        Stack = 0 => "Stack",
        /// The finalizer queue.
        Finalizer = 1 => "Finalizer",
        /// A GC handle.
        Handle = 2 => "Handle",
        /// An older generation.
        Older = 3 => "Older",
        /// A sized reference.
        SizedRef = 4 => "SizedRef",
        /// Overflow.
        Overflow = 5 => "Overflow",
        /// A dependent handle.
        DependentHandle = 6 => "DependentHandle",
        /// New finalization queue.
        NewFq = 7 => "NewFQ",
        /// Steal.
        Steal = 8 => "Steal",
        /// Background GC.
        Bgc = 9 => "BGC",
    }
);

value_map!(
    /// The GC's latency mode (`GC/GlobalHeapHistory`'s `PauseMode`, version 2 and later).
    GcPauseMode, other = "PauseMode{}", {
        /// Batch: no background GCs (concurrent GC disabled, or the app asked for it).
        Batch = 0 => "Batch",
        /// Interactive: the default with concurrent GC enabled.
        Interactive = 1 => "Interactive",
        /// Low latency (workstation): no gen2 unless memory is low.
        LowLatency = 2 => "LowLatency",
        /// Sustained low latency: background GCs, blocking gen2 avoided.
        SustainedLowLatency = 3 => "SustainedLowLatency",
        /// Inside a no-GC region.
        NoGc = 4 => "NoGC",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_maps_keep_unknown_values() {
        assert_eq!(GcReason::from_u32(99), GcReason::Other(99));
        assert_eq!(GcReason::Other(99).to_string(), "Reason99");
        assert_eq!(GcReason::from_u32(5).to_string(), "OutOfSpaceSOH");
        assert!(GcReason::InducedCompacting.is_induced() && !GcReason::AllocSmall.is_induced());
        assert_eq!(GcType::from_u32(1).to_u32(), 1);
        assert!(SuspendReason::from_u32(6).is_for_gc());
        assert!(!SuspendReason::from_u32(5).is_for_gc());
        assert_eq!(AdjustmentReason::from_u32(6), AdjustmentReason::Starvation);
        assert_eq!(HeapKind::from_u32(2).to_string(), "POH");
        assert_eq!(
            format!("{:<5}|{:>8}", GcType::Foreground, GcReason::Other(3000)),
            "Foreground|Reason3000"
        );
        assert_eq!(format!("{:<6}|", HeapKind::Soh), "SOH   |");
    }
}
