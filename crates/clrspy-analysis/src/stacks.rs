//! Stacks interned once: every distinct list of return addresses (leaf first) gets a
//! [`StackId`]; models keep ids, never addresses, so memory grows with distinct stacks, not with
//! events. The trace's own stack ids restart at each sequence point, so they cannot be the key.

use std::hash::{Hash, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxHashMap;

/// An interned stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// The interned stacks of a trace. Each stack's addresses are stored once, in `ips`; the
/// table finds a stack by the hash of its bytes and compares it with those addresses (a key
/// copy per stack would double the memory of a kernel-sampled trace, whose stacks are deep
/// and nearly all distinct).
#[derive(Clone, Debug, Default)]
pub struct StackTable {
    by_hash: HashTable<StackId>,
    /// Offsets into `ips` of each stack, and its length.
    spans: Vec<(u32, u32)>,
    /// The hash of each stack's bytes as the trace stored them (kept for rehashing).
    hashes: Vec<u64>,
    ips: Vec<u64>,
    /// The addresses as the trace stored them of the stacks [`StackTable::drop_next_frames`]
    /// changed (few: lookups by the trace's bytes still find them).
    original: FxHashMap<u32, Box<[u64]>>,
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    bytes.hash(&mut h);
    h.finish()
}

/// True when the trace's stack (`bytes`, addresses of `size` bytes) is `ips`.
fn same(bytes: &[u8], size: usize, ips: &[u64]) -> bool {
    if size == 8 {
        return bytes.len() == ips.len() * 8
            && bytes
                .chunks_exact(8)
                .zip(ips)
                .all(|(c, &ip)| c == ip.to_le_bytes());
    }
    bytes.len() == ips.len() * size
        && bytes.chunks_exact(size).zip(ips).all(|(c, &ip)| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b) == ip
        })
}

impl StackTable {
    /// An empty table.
    pub fn new() -> StackTable {
        StackTable::default()
    }

    fn find(&self, stack: &nettrace::Stack<'_>, hash: u64) -> Option<StackId> {
        let size = if stack.pointer_size() == 4 { 4 } else { 8 };
        let bytes = stack.bytes();
        self.by_hash
            .find(hash, |id| {
                self.hashes[id.0 as usize] == hash && same(bytes, size, self.span(*id))
            })
            .copied()
    }

    /// Interns a stack given as the trace stores it (pointer-size addresses, leaf first).
    pub fn intern(&mut self, stack: &nettrace::Stack<'_>) -> Option<StackId> {
        if stack.is_empty() {
            return None;
        }
        let hash = hash_bytes(stack.bytes());
        if let Some(id) = self.find(stack, hash) {
            return Some(id);
        }
        let id = StackId(u32::try_from(self.spans.len()).ok()?);
        let start = u32::try_from(self.ips.len()).ok()?;
        self.ips.extend(stack.ips());
        let len = u32::try_from(self.ips.len()).ok()? - start;
        self.spans.push((start, len));
        self.hashes.push(hash);
        let hashes = &self.hashes;
        self.by_hash
            .insert_unique(hash, id, |id| hashes[id.0 as usize]);
        Some(id)
    }

    /// The id of a stack interned before (None for an empty stack or one never interned):
    /// for a second pass over the same trace, which reads the table without growing it.
    pub fn lookup(&self, stack: &nettrace::Stack<'_>) -> Option<StackId> {
        if stack.is_empty() {
            return None;
        }
        self.find(stack, hash_bytes(stack.bytes()))
    }

    /// The addresses as interned (before [`StackTable::drop_next_frames`], which changes
    /// `ips` but not what the trace's bytes are looked up by).
    fn span(&self, id: StackId) -> &[u64] {
        match self.original.get(&id.0) {
            Some(ips) => ips,
            None => self.ips(id),
        }
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
        for (id, span) in self.spans.iter_mut().enumerate() {
            let (s, l) = (span.0 as usize, span.1 as usize);
            let old = &self.ips[s..s + l];
            let start = ips.len();
            for (k, &ip) in old.iter().enumerate() {
                if k > 0 && drop(old[k - 1], ip) {
                    continue;
                }
                ips.push(ip);
            }
            if ips.len() - start != l && !self.original.contains_key(&(id as u32)) {
                self.original.insert(id as u32, old.into());
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

    #[test]
    fn stacks_are_found_by_the_traces_bytes_after_frames_are_dropped() {
        let mut t = StackTable::new();
        let a = t.intern_ips(&[1, 7, 3]).unwrap();
        let b = t.intern_ips(&[5, 6]).unwrap();
        t.drop_next_frames(|_, ip| ip == 7);
        assert_eq!((t.ips(a), t.ips(b)), (&[1, 3][..], &[5, 6][..]));
        let bytes = |ips: &[u64]| {
            ips.iter()
                .flat_map(|i| i.to_le_bytes())
                .collect::<Vec<u8>>()
        };
        let look = |t: &StackTable, ips: &[u64]| t.lookup(&nettrace::Stack::new(&bytes(ips), 8));
        assert_eq!(look(&t, &[1, 7, 3]), Some(a));
        assert_eq!(look(&t, &[1, 3]), None);
        assert_eq!(look(&t, &[5, 6]), Some(b));
        // Four-byte addresses compare as their values.
        let mut t = StackTable::new();
        let four: Vec<u8> = [9u32, 8].iter().flat_map(|i| i.to_le_bytes()).collect();
        let c = t.intern(&nettrace::Stack::new(&four, 4)).unwrap();
        assert_eq!(t.ips(c), &[9, 8]);
        assert_eq!(t.lookup(&nettrace::Stack::new(&four, 4)), Some(c));
        assert_eq!(t.intern(&nettrace::Stack::new(&four, 4)), Some(c));
        // Many stacks (the table grows and rehashes): each found again.
        let ids: Vec<StackId> = (0..5000u64)
            .map(|i| t.intern_ips(&[i, i + 1]).unwrap())
            .collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(t.intern_ips(&[i as u64, i as u64 + 1]), Some(*id));
        }
    }
}
