//! Stacks interned once: every distinct list of return addresses (leaf first) gets a
//! [`StackId`]; models keep ids, never addresses, so memory grows with distinct stacks, not with
//! events. The trace's own stack ids restart at each sequence point, so they cannot be the key.

use rustc_hash::FxHashMap;

/// An interned stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// The interned stacks of a trace.
#[derive(Clone, Debug, Default)]
pub struct StackTable {
    by_bytes: FxHashMap<Box<[u8]>, StackId>,
    /// Offsets into `ips` of each stack, and its length.
    spans: Vec<(u32, u32)>,
    ips: Vec<u64>,
}

impl StackTable {
    /// An empty table.
    pub fn new() -> StackTable {
        StackTable::default()
    }

    /// Interns a stack given as the trace stores it (pointer-size addresses, leaf first).
    pub fn intern(&mut self, stack: &nettrace::Stack<'_>) -> Option<StackId> {
        if stack.is_empty() {
            return None;
        }
        let bytes = stack.bytes();
        if let Some(id) = self.by_bytes.get(bytes) {
            return Some(*id);
        }
        let id = StackId(u32::try_from(self.spans.len()).ok()?);
        let start = u32::try_from(self.ips.len()).ok()?;
        self.ips.extend(stack.ips());
        let len = u32::try_from(self.ips.len()).ok()? - start;
        self.spans.push((start, len));
        self.by_bytes.insert(bytes.into(), id);
        Some(id)
    }

    /// The id of a stack interned before (None for an empty stack or one never interned):
    /// for a second pass over the same trace, which reads the table without growing it.
    pub fn lookup(&self, stack: &nettrace::Stack<'_>) -> Option<StackId> {
        if stack.is_empty() {
            return None;
        }
        self.by_bytes.get(stack.bytes()).copied()
    }

    /// Interns a stack given as addresses, leaf first.
    #[cfg(test)]
    pub(crate) fn intern_ips(&mut self, ips: &[u64]) -> Option<StackId> {
        if ips.is_empty() {
            return None;
        }
        let bytes: Vec<u8> = ips.iter().flat_map(|ip| ip.to_le_bytes()).collect();
        self.intern(&nettrace::Stack::new(&bytes, 8))
    }

    /// The addresses of a stack, leaf first.
    pub fn ips(&self, id: StackId) -> &[u64] {
        self.spans
            .get(id.0 as usize)
            .and_then(|&(s, l)| self.ips.get(s as usize..(s + l) as usize))
            .unwrap_or(&[])
    }

    /// Leaves out of every stack each frame `k + 1` for which `drop(ips[k], ips[k + 1])`
    /// (ids and lookups by the trace's bytes stay as they were).
    pub(crate) fn drop_next_frames(&mut self, drop: impl Fn(u64, u64) -> bool) {
        let mut ips = Vec::with_capacity(self.ips.len());
        for span in &mut self.spans {
            let (s, l) = (span.0 as usize, span.1 as usize);
            let old = &self.ips[s..s + l];
            let start = ips.len();
            for (k, &ip) in old.iter().enumerate() {
                if k > 0 && drop(old[k - 1], ip) {
                    continue;
                }
                ips.push(ip);
            }
            *span = (start as u32, (ips.len() - start) as u32);
        }
        self.ips = ips;
    }

    /// Every address of every stack (with repeats).
    pub(crate) fn all_ips(&self) -> &[u64] {
        &self.ips
    }

    /// Number of distinct stacks.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when no stack was interned.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
}

/// The whole stacks of the kernel's samples and waits (native frames too), by the ids the
/// file's stack blocks give them: clrspy writes those stack blocks with only the frames other
/// readers can name, and each whole stack once per sequence-point region in a `KernelStack`
/// event (see [`clr_events::clrspy::ids::KERNEL_STACK`]), before the events that use it.
#[derive(Clone, Debug, Default)]
pub struct KernelStacks {
    by_id: FxHashMap<u32, StackId>,
}

impl KernelStacks {
    /// Takes `ev` when it is a `KernelStack`, its stack interned in `table`; false for any
    /// other event.
    pub fn take(&mut self, ev: &nettrace::Event<'_>, table: &mut StackTable) -> bool {
        self.take_with(ev, |s| table.intern(s))
    }

    /// [`KernelStacks::take`] for a second pass over a trace whose stacks `table` interned
    /// already (it is only looked up).
    pub fn take_known(&mut self, ev: &nettrace::Event<'_>, table: &StackTable) -> bool {
        self.take_with(ev, |s| table.lookup(s))
    }

    fn take_with(
        &mut self,
        ev: &nettrace::Event<'_>,
        mut id_of: impl FnMut(&nettrace::Stack<'_>) -> Option<StackId>,
    ) -> bool {
        if ev.event_id() != clr_events::clrspy::ids::KERNEL_STACK
            || ev.metadata.metadata_id < clr_events::clrspy::FIRST_METADATA_ID
            || ev.provider() != clr_events::clrspy::PROVIDER
        {
            return false;
        }
        if let Ok(k) = clr_events::clrspy::KernelStack::parse(ev.payload) {
            match id_of(&nettrace::Stack::new(k.frames, 8)) {
                Some(id) => self.by_id.insert(k.id, id),
                None => self.by_id.remove(&k.id),
            };
        }
        true
    }

    /// The whole stack of the event with stack id `stack_id` (the event's header's), when
    /// clrspy gave one.
    pub fn get(&self, stack_id: u32) -> Option<StackId> {
        if stack_id < clr_events::clrspy::FIRST_STACK_ID {
            return None;
        }
        self.by_id.get(&stack_id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_addresses_same_id() {
        let mut t = StackTable::new();
        let a = t.intern_ips(&[1, 2, 3]).unwrap();
        let b = t.intern_ips(&[1, 2]).unwrap();
        assert_ne!(a, b);
        assert_eq!(t.intern_ips(&[1, 2, 3]), Some(a));
        assert_eq!(t.ips(a), &[1, 2, 3]);
        assert_eq!(t.intern_ips(&[]), None);
        assert_eq!(t.ips(StackId(99)), &[] as &[u64]);
        assert_eq!(t.len(), 2);
    }
}
