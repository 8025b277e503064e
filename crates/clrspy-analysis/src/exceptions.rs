//! Exceptions from `Exception/Start` (the throw, with its stack) and `ExceptionCatch/Start`
//! (the method whose handler caught it, on the same thread right after): counts by type and by
//! message, throw sites and catch sites.

use rustc_hash::FxHashMap;

use crate::event::EventCtx;
use crate::stacks::StackId;

/// Distinct messages kept per type (the rest are counted under "[other messages]").
const MAX_MESSAGES: usize = 200;

/// One exception type.
#[derive(Clone, Debug, Default)]
pub struct ExceptionType {
    /// Times thrown.
    pub count: u64,
    /// Counts per message.
    pub messages: FxHashMap<String, u64>,
    /// Counts per throw stack.
    pub stacks: FxHashMap<Option<StackId>, u64>,
    /// Counts per catching method.
    pub catches: FxHashMap<String, u64>,
}

/// The exceptions model.
#[derive(Debug, Default)]
pub struct ExceptionModel {
    /// Per type name.
    pub types: FxHashMap<String, ExceptionType>,
    /// Exceptions seen.
    pub total: u64,
    /// The last exception type thrown on each thread (for its catch).
    last_on_thread: FxHashMap<u64, String>,
}

impl ExceptionModel {
    /// An empty model.
    pub fn new() -> ExceptionModel {
        ExceptionModel::default()
    }

    /// An `Exception/Start`.
    pub fn on_throw(&mut self, ev: &EventCtx<'_>) {
        let ty = ev
            .fields
            .str("ExceptionType")
            .filter(|t| !t.is_empty())
            .unwrap_or("[unknown exception]")
            .to_string();
        let msg = ev.fields.str("ExceptionMessage").unwrap_or("").to_string();
        let e = self.types.entry(ty.clone()).or_default();
        e.count += 1;
        if e.messages.len() < MAX_MESSAGES || e.messages.contains_key(&msg) {
            *e.messages.entry(msg).or_default() += 1;
        } else {
            *e.messages.entry("[other messages]".into()).or_default() += 1;
        }
        *e.stacks.entry(ev.stack).or_default() += 1;
        self.total += 1;
        self.last_on_thread.insert(ev.thread_id, ty);
    }

    /// An `ExceptionCatch/Start`.
    pub fn on_catch(&mut self, ev: &EventCtx<'_>) {
        let Some(ty) = self.last_on_thread.get(&ev.thread_id) else {
            return;
        };
        let method = ev.fields.str("MethodName").unwrap_or("").to_string();
        if let Some(e) = self.types.get_mut(ty) {
            *e.catches.entry(method).or_default() += 1;
        }
    }
}
