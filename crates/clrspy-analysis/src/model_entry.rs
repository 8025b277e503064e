//! What a model of the registry is, to the analysis: its entry ([`ModelEntry`]: name, the
//! events it reads, and how the analysis holds it) and the boxed form
//! ([`AnyModel`]) of a model that is not a typed field. Model files build their `ENTRY` from
//! these; the list of every model is [`crate::registry`].

use std::any::Any;

use clr_events::ViewError;

use crate::event::{Model, ModelEvent, ModelKind, Wanted};

/// How the analysis holds a model.
#[derive(Clone, Copy)]
pub(crate) enum Slot {
    /// One of the analysis's typed fields.
    Field(ModelKind),
    /// Built when the analysis starts, for a trace with this header.
    Boxed(fn(&ModelInit<'_>) -> Box<dyn AnyModel>),
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
pub(crate) struct ModelEntry {
    /// Its name (what reports pick it by).
    pub(crate) name: &'static str,
    /// The events it reads.
    pub(crate) events: &'static [Wanted],
    /// How the analysis holds it.
    pub(crate) slot: Slot,
}

impl ModelEntry {
    /// The entry of model `M`, built by `make` (see [`boxed`]).
    pub(crate) const fn of<M: Model>(
        name: &'static str,
        make: fn(&ModelInit<'_>) -> Box<dyn AnyModel>,
    ) -> ModelEntry {
        ModelEntry {
            name,
            events: M::EVENTS,
            slot: Slot::Boxed(make),
        }
    }
}

/// A model held behind a pointer: any [`Model`] that is `Clone + Debug + Send`.
pub(crate) trait AnyModel: Any + Send + std::fmt::Debug {
    /// [`Model::on_event`].
    fn feed(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError>;
    /// [`Model::trace_end`], then [`Model::finish`].
    fn end_pass(&mut self, end_ns: i64);
    /// A copy (live views take finished copies of the analysis).
    fn clone_box(&self) -> Box<dyn AnyModel>;
    /// For [`Analysis::model`](crate::Analysis::model).
    fn as_any(&self) -> &dyn Any;
}

impl<M: Model + Clone + Send + std::fmt::Debug + 'static> AnyModel for M {
    fn feed(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        Model::on_event(self, ev)
    }

    fn end_pass(&mut self, end_ns: i64) {
        Model::trace_end(self, end_ns);
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

/// What a boxed model is built with: the sink of its rows when the options give it one
/// ([`crate::Options::rows`] names the model).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ModelInit<'a> {
    /// Where the model streams its rows, if anywhere.
    pub(crate) rows: Option<&'a crate::rows::RowSink>,
}

/// `make` for a model that starts as its `Default`.
pub(crate) fn boxed<M: Model + Default + Clone + Send + std::fmt::Debug + 'static>(
    _init: &ModelInit<'_>,
) -> Box<dyn AnyModel> {
    Box::new(M::default())
}
