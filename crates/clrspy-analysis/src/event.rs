//! What the models see of an event, and how they say which events they want.
//!
//! Each model implements [`Model`]: a static list of the events it reads ([`Wanted`]: provider
//! and id, whether it needs the event's stack, whether the `--from`/`--to` window applies) and
//! a handler that reads the payload through clr-events' typed views. The analysis builds one
//! dispatch table from the models the options enable, so an event nobody wants is not decoded
//! at all, and a payload a view rejects is counted per event name instead of read as zeros.

use clr_events::{KnownProvider, ViewError};

use crate::stacks::StackId;

/// Who wrote an event, as far as the models care.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// A provider clr-events knows (runtime, rundown, sample profiler, ...).
    Known(KnownProvider),
    /// clrspy's own provider ([`clr_events::clrspy`]).
    Clrspy,
}

/// One event a model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// The provider.
    pub provider: Provider,
    /// The event id.
    pub id: u32,
    /// The model needs the event's stack interned.
    pub stack: bool,
    /// Only events inside the options' time window reach the model (symbols and clrspy's
    /// readings want every event).
    pub windowed: bool,
}

impl Wanted {
    /// A runtime event, windowed, without its stack.
    pub const fn runtime(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Known(KnownProvider::Runtime),
            id,
            stack: false,
            windowed: true,
        }
    }

    /// The same, with the stack.
    pub const fn with_stack(self) -> Wanted {
        Wanted {
            stack: true,
            ..self
        }
    }

    /// The same, outside the window too.
    pub const fn always(self) -> Wanted {
        Wanted {
            windowed: false,
            ..self
        }
    }

    /// A rundown event (never windowed).
    pub const fn rundown(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Known(KnownProvider::Rundown),
            id,
            stack: false,
            windowed: false,
        }
    }

    /// A clrspy event (never windowed).
    pub const fn clrspy(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Clrspy,
            id,
            stack: false,
            windowed: false,
        }
    }
}

/// One event as a model gets it.
#[derive(Clone, Copy, Debug)]
pub struct ModelEvent<'a> {
    /// The provider.
    pub provider: Provider,
    /// Event id.
    pub id: u32,
    /// Event version.
    pub version: u8,
    /// Nanoseconds since the trace started.
    pub ts_ns: i64,
    /// The thread the event is about (the OS thread id).
    pub thread_id: u64,
    /// The raw payload (read it with a clr-events view).
    pub payload: &'a [u8],
    /// The traced process's pointer size.
    pub pointer_size: u8,
    /// The event's stack, interned (when the model asked for it and the event has one).
    pub stack: Option<StackId>,
}

/// A model of the analysis.
pub trait Model {
    /// The events it reads.
    const EVENTS: &'static [Wanted];

    /// Reads one of its events; an error is a payload its view could not read (counted by
    /// the analysis, the event is otherwise skipped).
    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError>;
}

/// The models an analysis can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// Samples: CPU and waiting time (with clrspy's thread CPU readings).
    Cpu,
    /// Allocation ticks.
    Alloc,
    /// Exceptions.
    Exceptions,
    /// Lock contention.
    Contention,
    /// GCs.
    Gc,
    /// Threads and the thread pool.
    Threads,
}

impl ModelKind {
    /// Every model.
    pub const ALL: [ModelKind; 6] = [
        ModelKind::Cpu,
        ModelKind::Alloc,
        ModelKind::Exceptions,
        ModelKind::Contention,
        ModelKind::Gc,
        ModelKind::Threads,
    ];

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of models (symbols always run: every stack needs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSet(u8);

impl ModelSet {
    /// Every model.
    pub const ALL: ModelSet = ModelSet(0b11_1111);

    /// Only these models.
    pub fn only(models: &[ModelKind]) -> ModelSet {
        ModelSet(models.iter().fold(0, |m, k| m | k.bit()))
    }

    /// True when `model` is in the set.
    pub fn contains(self, model: ModelKind) -> bool {
        self.0 & model.bit() != 0
    }
}

impl Default for ModelSet {
    fn default() -> ModelSet {
        ModelSet::ALL
    }
}
