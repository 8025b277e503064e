//! Exceptions from `Exception/Start` (the throw, with its stack) and `ExceptionCatch/Start`
//! (the method whose handler caught it, on the same thread right after): counts by type and by
//! message, throw sites and catch sites.

use clr_events::runtime::{ids, ExceptionCatch, ExceptionThrown};
use clr_events::ViewError;
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Wanted};
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
#[derive(Clone, Debug, Default)]
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

    /// An `Exception/Start` on `thread`.
    pub fn on_throw(&mut self, thread: u64, stack: Option<StackId>, ex: &ExceptionThrown<'_>) {
        // Version 0 names no type.
        let ty = ex.exception_type.filter(|t| !t.is_empty()).map_or_else(
            || "[unknown exception]".to_string(),
            |t| t.to_string_lossy(),
        );
        let msg = ex.message.map(|m| m.to_string_lossy()).unwrap_or_default();
        let e = self.types.entry(ty.clone()).or_default();
        e.count += 1;
        if e.messages.len() < MAX_MESSAGES || e.messages.contains_key(&msg) {
            *e.messages.entry(msg).or_default() += 1;
        } else {
            *e.messages.entry("[other messages]".into()).or_default() += 1;
        }
        *e.stacks.entry(stack).or_default() += 1;
        self.total += 1;
        self.last_on_thread.insert(thread, ty);
    }

    /// An `ExceptionCatch/Start` on `thread`.
    pub fn on_catch(&mut self, thread: u64, catch: &ExceptionCatch<'_>) {
        let Some(ty) = self.last_on_thread.get(&thread) else {
            return;
        };
        let method = catch.method_name.to_string_lossy();
        if let Some(e) = self.types.get_mut(ty) {
            *e.catches.entry(method).or_default() += 1;
        }
    }
}

impl Model for ExceptionModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::EXCEPTION_START).with_stack(),
        Wanted::runtime(ids::EXCEPTION_CATCH_START),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        if ev.id == ids::EXCEPTION_START {
            let t = ExceptionThrown::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_throw(ev.thread_id, ev.stack, &t);
        } else {
            let c = ExceptionCatch::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_catch(ev.thread_id, &c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend([0, 0]);
        v
    }

    fn ev(id: u32, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id,
            version: if id == ids::EXCEPTION_START { 1 } else { 0 },
            ts_ns: 0,
            thread_id: 5,
            payload,
            pointer_size: 8,
            stack: None,
        }
    }

    #[test]
    fn throws_and_catches() {
        let mut m = ExceptionModel::new();
        let mut t = utf16z("System.InvalidOperationException");
        t.extend(utf16z("boom"));
        t.extend(0x10u64.to_le_bytes());
        t.extend(0x8013_1509u32.to_le_bytes());
        t.extend(0u16.to_le_bytes());
        t.extend(0u16.to_le_bytes());
        let mut c = Vec::new();
        c.extend(0u64.to_le_bytes());
        c.extend(7u64.to_le_bytes());
        c.extend(utf16z("App.Main"));
        c.extend(0u16.to_le_bytes());
        m.on_event(&ev(ids::EXCEPTION_START, &t)).unwrap();
        m.on_event(&ev(ids::EXCEPTION_CATCH_START, &c)).unwrap();
        m.on_event(&ev(ids::EXCEPTION_START, &t)).unwrap();
        let e = &m.types["System.InvalidOperationException"];
        assert_eq!((m.total, e.count, e.messages["boom"]), (2, 2, 2));
        assert_eq!(e.catches["App.Main"], 1);
        // A cut catch is an error (no empty method name is counted).
        assert!(m
            .on_event(&ev(ids::EXCEPTION_CATCH_START, &c[..18]))
            .is_err());
        assert_eq!(m.types["System.InvalidOperationException"].catches.len(), 1);
    }
}
