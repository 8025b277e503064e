//! The model registry: every model an analysis can run, by name, with the events it reads.
//! A model is one file in `sources/` (its struct, `impl Model`, and its `ENTRY`) plus its name
//! in that folder's `models!` list; reports pick models by name ([`ModelSet::named`](crate::ModelSet::named)), and
//! a model nobody picked is never built or fed. Its result is read with
//! [`Analysis::model`](crate::Analysis::model).
//!
//! The first six models (CPU, allocations, exceptions, contention, GC, threads) are also typed
//! fields of the analysis, which the reports read directly; their entries say so
//! ([`Slot::Field`]).

use std::any::Any;

use clr_events::ViewError;

use crate::event::{Model, ModelEvent, ModelKind, Wanted};

/// How the analysis holds a model.
#[derive(Clone, Copy)]
pub enum Slot {
    /// One of the analysis's typed fields.
    Field(ModelKind),
    /// Built when the analysis starts, for a trace with this header.
    Boxed(fn(&nettrace::TraceHeader) -> Box<dyn AnyModel>),
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Slot::Field(k) => write!(f, "Field({k:?})"),
            Slot::Boxed(_) => write!(f, "Boxed"),
        }
    }
}

/// One model of the registry.
#[derive(Clone, Copy, Debug)]
pub struct ModelEntry {
    /// Its name (what reports pick it by).
    pub name: &'static str,
    /// What it models, in words.
    pub description: &'static str,
    /// The events it reads.
    pub events: &'static [Wanted],
    /// How the analysis holds it.
    pub slot: Slot,
}

impl ModelEntry {
    /// The entry of model `M`, built by `make` (see [`boxed`]).
    pub const fn of<M: Model>(
        name: &'static str,
        description: &'static str,
        make: fn(&nettrace::TraceHeader) -> Box<dyn AnyModel>,
    ) -> ModelEntry {
        ModelEntry {
            name,
            description,
            events: M::EVENTS,
            slot: Slot::Boxed(make),
        }
    }
}

/// A model held behind a pointer: any [`Model`] that is `Clone + Debug + Send`.
pub trait AnyModel: Any + Send + std::fmt::Debug {
    /// [`Model::on_event`].
    fn feed(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError>;
    /// [`Model::finish`].
    fn end_pass(&mut self);
    /// A copy (live views take finished copies of the analysis).
    fn clone_box(&self) -> Box<dyn AnyModel>;
    /// For [`Analysis::model`](crate::Analysis::model).
    fn as_any(&self) -> &dyn Any;
}

impl<M: Model + Clone + Send + std::fmt::Debug + 'static> AnyModel for M {
    fn feed(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        Model::on_event(self, ev)
    }

    fn end_pass(&mut self) {
        Model::finish(self)
    }

    fn clone_box(&self) -> Box<dyn AnyModel> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Clone for Box<dyn AnyModel> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// `make` for a model that starts as its `Default`.
pub fn boxed<M: Model + Default + Clone + Send + std::fmt::Debug + 'static>(
    _header: &nettrace::TraceHeader,
) -> Box<dyn AnyModel> {
    Box::new(M::default())
}

/// A built-in model's entry.
const fn field(
    kind: ModelKind,
    description: &'static str,
    events: &'static [Wanted],
) -> ModelEntry {
    ModelEntry {
        name: kind.name(),
        description,
        events,
        slot: Slot::Field(kind),
    }
}

/// The first six models: typed fields of the analysis.
const FIELDS: [ModelEntry; 6] = [
    field(
        ModelKind::Cpu,
        "samples: CPU and waiting time per thread and stack",
        crate::cpu::CpuModel::EVENTS,
    ),
    field(
        ModelKind::Alloc,
        "allocation ticks by type and stack",
        crate::alloc::AllocModel::EVENTS,
    ),
    field(
        ModelKind::Exceptions,
        "exceptions: throws, catches, messages",
        crate::exceptions::ExceptionModel::EVENTS,
    ),
    field(
        ModelKind::Contention,
        "lock contention by method and lock",
        crate::contention::ContentionModel::EVENTS,
    ),
    field(ModelKind::Gc, "GCs and heaps", crate::gc::GcModel::EVENTS),
    field(
        ModelKind::Threads,
        "threads, their names and the thread pool",
        crate::threads::ThreadModel::EVENTS,
    ),
];

/// How many models there are.
const COUNT: usize = FIELDS.len() + crate::sources::ENTRIES.len();

/// The fields' entries, then the models of [`crate::sources`].
const fn all() -> [ModelEntry; COUNT] {
    let mut out = [FIELDS[0]; COUNT];
    let mut i = 0;
    while i < FIELDS.len() {
        out[i] = FIELDS[i];
        i += 1;
    }
    let mut j = 0;
    while j < crate::sources::ENTRIES.len() {
        out[i + j] = crate::sources::ENTRIES[j];
        j += 1;
    }
    out
}

/// Every model, in the order they are fed each event (at most 64: a
/// [`ModelSet`](crate::ModelSet) is a 64-bit set).
pub const MODELS: &[ModelEntry] = &all();

const _: () = assert!(COUNT <= 64, "a ModelSet holds 64 models");
