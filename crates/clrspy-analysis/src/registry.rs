//! The model registry: every model an analysis can run, by name, with the events it reads
//! (`MODELS`), and sets of them ([`ModelSet`]). A model is one file in `sources/` (its
//! struct, `impl Model`, and its `ENTRY`, built from `crate::model_entry`) plus its name in
//! that folder's `models!` list; reports pick models by name ([`ModelSet::named`]), and a
//! model nobody picked is never built or fed. Its result is read with
//! [`Analysis::model`](crate::Analysis::model).
//!
//! The first six models (CPU, allocations, exceptions, contention, GC, threads) are also typed
//! fields of the analysis, which the reports read directly; their entries say so
//! (`Slot::Field`).

use crate::event::{Model, ModelKind, Wanted};
pub(crate) use crate::model_entry::{ModelEntry, Slot};

/// A built-in model's entry.
const fn field(kind: ModelKind, events: &'static [Wanted]) -> ModelEntry {
    ModelEntry {
        name: kind.name(),
        events,
        slot: Slot::Field(kind),
    }
}

/// The first six models: typed fields of the analysis.
const FIELDS: [ModelEntry; 6] = [
    // samples: CPU and waiting time per thread and stack.
    field(ModelKind::Cpu, crate::cpu::CpuModel::EVENTS),
    // allocation ticks by type and stack.
    field(ModelKind::Alloc, crate::alloc::AllocModel::EVENTS),
    // exceptions: throws, catches, messages.
    field(
        ModelKind::Exceptions,
        crate::exceptions::ExceptionModel::EVENTS,
    ),
    // lock contention by method and lock.
    field(
        ModelKind::Contention,
        crate::contention::ContentionModel::EVENTS,
    ),
    // GCs and heaps.
    field(ModelKind::Gc, crate::gc::GcModel::EVENTS),
    // threads, their names and the thread pool.
    field(ModelKind::Threads, crate::threads::ThreadModel::EVENTS),
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
/// [`ModelSet`] is a 64-bit set).
pub(crate) const MODELS: &[ModelEntry] = &all();

const _: () = assert!(COUNT <= 64, "a ModelSet holds 64 models");

/// A set of models of the registry, by their place in it (symbols
/// always run: every stack needs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelSet(u64);

impl ModelSet {
    /// Every model.
    pub const ALL: ModelSet = ModelSet(u64::MAX);

    /// No model (symbols only).
    pub const NONE: ModelSet = ModelSet(0);

    /// Only the built-in models `models`.
    pub fn only(models: &[ModelKind]) -> ModelSet {
        let names: Vec<&str> = models.iter().map(|k| k.name()).collect();
        ModelSet::named(&names).unwrap_or(ModelSet::NONE)
    }

    /// The models named `names` (a registry entry's `ModelEntry::name`);
    /// an unknown name is an error naming it.
    pub fn named(names: &[&str]) -> Result<ModelSet, String> {
        let mut bits = 0u64;
        for n in names {
            let i = MODELS
                .iter()
                .position(|m| m.name == *n)
                .ok_or_else(|| format!("no model named '{n}'"))?;
            bits |= 1 << i;
        }
        Ok(ModelSet(bits))
    }

    /// True when the registry's `index`-th model is in the set.
    pub(crate) fn contains_index(self, index: usize) -> bool {
        index < 64 && self.0 & (1 << index) != 0
    }

    /// True when `model` is in the set.
    pub fn contains(self, model: ModelKind) -> bool {
        MODELS
            .iter()
            .position(|m| m.name == model.name())
            .is_some_and(|i| self.contains_index(i))
    }

    /// Both sets.
    pub fn union(self, other: ModelSet) -> ModelSet {
        ModelSet(self.0 | other.0)
    }
}

impl Default for ModelSet {
    fn default() -> ModelSet {
        ModelSet::ALL
    }
}
