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
pub(crate) enum Provider {
    /// A provider clr-events knows (runtime, rundown, sample profiler, ...).
    Known(KnownProvider),
    /// clrspy's own provider ([`clr_events::clrspy`]).
    Clrspy,
    /// A self-describing (EventSource) provider, by name, as a model's [`Wanted::named`]
    /// spells it (`"*"`: any provider).
    Named(&'static str),
}

/// One event a model reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// The provider.
    pub(crate) provider: Provider,
    /// The event id.
    pub(crate) id: u32,
    /// The model needs the event's stack interned.
    pub(crate) stack: bool,
    /// Only events inside the options' time window reach the model (symbols and clrspy's
    /// readings want every event).
    pub(crate) windowed: bool,
    /// For a [`Provider::Named`] provider: the event's name in its metadata (`"*"`: every
    /// event of the provider); `id` is then unused.
    pub(crate) event: Option<&'static str>,
}

impl Wanted {
    /// A runtime event, windowed, without its stack.
    pub(crate) const fn runtime(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Known(KnownProvider::Runtime),
            id,
            stack: false,
            windowed: true,
            event: None,
        }
    }

    /// The same, with the stack.
    pub(crate) const fn with_stack(self) -> Wanted {
        Wanted {
            stack: true,
            ..self
        }
    }

    /// The same, outside the window too.
    pub(crate) const fn always(self) -> Wanted {
        Wanted {
            windowed: false,
            ..self
        }
    }

    /// A rundown event (never windowed).
    pub(crate) const fn rundown(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Known(KnownProvider::Rundown),
            id,
            stack: false,
            windowed: false,
            event: None,
        }
    }

    /// An event of a self-describing (EventSource) provider, by the provider's name and the
    /// event's name as its metadata says them (`RequestStart`, `EventCounters`); windowed,
    /// without its stack. `"*"` stands for any provider or any event.
    pub(crate) const fn named(provider: &'static str, event: &'static str) -> Wanted {
        Wanted {
            provider: Provider::Named(provider),
            id: 0,
            stack: false,
            windowed: true,
            event: Some(event),
        }
    }

    /// A clrspy event (never windowed).
    pub(crate) const fn clrspy(id: u32) -> Wanted {
        Wanted {
            provider: Provider::Clrspy,
            id,
            stack: false,
            windowed: false,
            event: None,
        }
    }
}

/// One event as a model gets it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModelEvent<'a> {
    /// The provider.
    pub(crate) provider: Provider,
    /// Event id.
    pub(crate) id: u32,
    /// Event version.
    pub(crate) version: u8,
    /// Nanoseconds since the trace started.
    pub(crate) ts_ns: i64,
    /// The thread the event is about (the OS thread id).
    pub(crate) thread_id: u64,
    /// The raw payload (read it with a clr-events view).
    pub(crate) payload: &'a [u8],
    /// The traced process's pointer size.
    pub(crate) pointer_size: u8,
    /// The event's stack, interned (when the model asked for it and the event has one).
    pub(crate) stack: Option<StackId>,
    /// Activity ids, name and field layout.
    pub(crate) context: EventContext<'a>,
}

/// What else a model may read of an event: its activity ids (requests, HTTP calls and their
/// children are tied by them), its name and its fields' layout (self-describing events are
/// read by field name: [`ModelEvent::decode`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct EventContext<'a> {
    /// The event's activity id (zero when none).
    pub(crate) activity_id: nettrace::Guid,
    /// The activity that started this one (zero when none).
    pub(crate) related_activity_id: nettrace::Guid,
    /// The event's name in its metadata (empty for the runtime's events, whose metadata has
    /// none).
    pub(crate) event_name: &'a str,
    /// The provider's name as the event's metadata spells it.
    pub(crate) provider: &'a str,
    /// The payload's field layout from the metadata.
    pub(crate) fields: &'a [nettrace::FieldDesc],
}

impl Default for EventContext<'_> {
    fn default() -> Self {
        EventContext {
            activity_id: nettrace::Guid::ZERO,
            related_activity_id: nettrace::Guid::ZERO,
            event_name: "",
            provider: "",
            fields: &[],
        }
    }
}

impl<'a> EventContext<'a> {
    /// The context of `ev`.
    pub(crate) fn of(ev: &'a nettrace::Event<'_>) -> EventContext<'a> {
        EventContext {
            activity_id: ev.activity_id,
            related_activity_id: ev.related_activity_id,
            event_name: &ev.metadata.event_name,
            provider: &ev.metadata.provider,
            fields: &ev.metadata.fields,
        }
    }
}

impl ModelEvent<'_> {
    /// The payload decoded by its metadata's field layout (self-describing events).
    pub(crate) fn decode(&self) -> nettrace::DecodedPayload {
        nettrace::decode_payload(self.context.fields, self.payload)
    }
}

/// A model of the analysis.
pub(crate) trait Model {
    /// The events it reads.
    const EVENTS: &'static [Wanted];

    /// Reads one of its events; an error is a payload its view could not read (counted by
    /// the analysis, the event is otherwise skipped).
    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError>;

    /// The time of the last event of the trace (of any model's), clipped to the analysed
    /// window, told before [`Model::finish`]: what is still open at the end lasts until it.
    fn trace_end(&mut self, _ns: i64) {}

    /// The pass ended (also called again when a live view finishes once more).
    fn finish(&mut self) {}
}

/// The first models, kept as typed fields of [`Analysis`](crate::Analysis) (reports read them
/// directly); models added since live in the registry only (see [`crate::registry`]).
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

    /// Its name in the registry.
    pub const fn name(self) -> &'static str {
        match self {
            ModelKind::Cpu => "cpu",
            ModelKind::Alloc => "alloc",
            ModelKind::Exceptions => "exceptions",
            ModelKind::Contention => "contention",
            ModelKind::Gc => "gc",
            ModelKind::Threads => "threads",
        }
    }
}
