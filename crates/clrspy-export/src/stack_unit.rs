//! What the weights of the stack writers (folded stacks, the flame graph, speedscope) are: a
//! trace's [`Metric`] (CPU or waiting time, allocated bytes) or a heap snapshot's retained
//! bytes, which is a unit of these writers and not a metric of traces.

use crate::Metric;

/// The unit of a stack's weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StackUnit {
    /// A trace's metric: milliseconds for CPU and waiting time, bytes for allocations.
    Metric(Metric),
    /// Bytes a heap snapshot's objects keep alive, along the dominator tree.
    RetainedBytes,
}

impl From<Metric> for StackUnit {
    fn from(m: Metric) -> StackUnit {
        StackUnit::Metric(m)
    }
}

impl StackUnit {
    /// True when weights are bytes (written whole), false for milliseconds.
    pub(crate) fn is_bytes(self) -> bool {
        matches!(
            self,
            StackUnit::Metric(Metric::Alloc) | StackUnit::RetainedBytes
        )
    }

    /// What the weights are, in words (a flame graph's subtitle).
    pub(crate) fn description(self) -> &'static str {
        match self {
            StackUnit::Metric(Metric::Cpu) => "CPU time",
            StackUnit::Metric(Metric::Wait) => "waiting time",
            StackUnit::Metric(Metric::Alloc) => "allocated bytes (estimated from allocation ticks)",
            StackUnit::RetainedBytes => {
                "retained bytes: root kind, root, then the types along the dominator tree"
            }
        }
    }

    /// The label of the profile of every stack (speedscope's first profile).
    pub(crate) fn all_label(self) -> String {
        match self {
            StackUnit::Metric(m) => format!("all threads ({})", m.name()),
            StackUnit::RetainedBytes => "all roots (retained bytes)".into(),
        }
    }
}
