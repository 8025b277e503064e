//! What mapping code addresses to source lines needs from the trace: each compiled method's
//! code range with its metadata token and module, the JIT's IL-to-native map of that code
//! (`Method/ILToNativeMap`, keyword 0x20000, and the rundown's `ILToNativeMapDCStop` for code
//! compiled before the recording), and each module's IL path and PDB identity
//! (`Loader/ModuleLoad`'s `ManagedPdbSignature` and `ManagedPdbBuildPath`). The PDBs
//! themselves are read after the pass, by [`crate::source_lines`].
//!
//! The runtime writes a method's map right after its `Method/LoadVerbose` (the code it
//! describes); the rundown writes it right before its `DCStopVerbose`. Dynamic methods
//! (token 0) have no PDB and are not kept.

use std::sync::Arc;

use clr_events::runtime::{ids, rundown_ids, IlToNativeMap, MethodLoad, ModuleLoad};
use clr_events::{KnownProvider, ViewError};
use rustc_hash::FxHashMap;

use crate::event::Provider;
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

/// A module's identity for finding its PDB.
#[derive(Clone, Debug, Default)]
pub(crate) struct ModuleFiles {
    /// The IL image's path on the recording machine.
    pub(crate) il_path: String,
    /// The PDB's GUID the image names, when the event said.
    pub(crate) pdb_guid: Option<[u8; 16]>,
    /// The path the PDB was built to.
    pub(crate) pdb_path: String,
}

/// One compiled body of a method: its code range and the map of its native offsets.
#[derive(Clone, Debug)]
struct Code {
    end: u64,
    method_id: u64,
    /// (native offset, IL offset) by native offset; empty until its map is seen.
    map: Arc<[(u32, i32)]>,
}

/// Where an address is in a method's IL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IlPlace {
    /// The module's id.
    pub(crate) module_id: u64,
    /// The method's MethodDef row (its token's low 24 bits).
    pub(crate) method_row: u32,
    /// The IL offset the address runs.
    pub(crate) il_offset: u32,
}

/// Code ranges, tokens, maps and modules.
#[derive(Clone, Debug, Default)]
pub(crate) struct LineMaps {
    /// Compiled bodies by start address.
    code: FxHashMap<u64, Code>,
    /// Their starts, sorted at the end of the pass.
    starts: Vec<u64>,
    /// Method id → (MethodDef row, module id).
    methods: FxHashMap<u64, (u32, u64)>,
    /// Module id → its files.
    modules: FxHashMap<u64, ModuleFiles>,
    /// Method id → the start of its last load by the runtime (its map follows it).
    last_load: FxHashMap<u64, u64>,
    /// Method id → a rundown map waiting for its `DCStopVerbose`.
    pending: FxHashMap<u64, Arc<[(u32, i32)]>>,
    /// Maps read.
    maps: u64,
}

impl LineMaps {
    /// The module of each id, as the trace named it.
    pub(crate) fn modules(&self) -> &FxHashMap<u64, ModuleFiles> {
        &self.modules
    }

    /// How many IL-to-native maps the trace has.
    pub(crate) fn maps(&self) -> u64 {
        self.maps
    }

    /// The place in IL of a code address: `leaf` for the frame that was running (else a
    /// return address, which points past its call: the call's own offset is one before).
    /// `None` outside any method with a token and a map.
    pub(crate) fn il_place(&self, ip: u64, leaf: bool) -> Option<IlPlace> {
        let at = if leaf { ip } else { ip.checked_sub(1)? };
        let i = self.starts.partition_point(|&s| s <= at).checked_sub(1)?;
        let start = self.starts[i];
        let code = self.code.get(&start)?;
        if at >= code.end || code.map.is_empty() {
            return None;
        }
        let (method_row, module_id) = *self.methods.get(&code.method_id)?;
        let native = u32::try_from(at - start).ok()?;
        Some(IlPlace {
            module_id,
            method_row,
            il_offset: il_at(&code.map, native)?,
        })
    }

}

/// The IL offset of native offset `native` in a map sorted by native offset: the last entry
/// at or before it with a real IL offset; in the prolog, the method's first; in an epilog
/// or unmapped code, the IL before it.
fn il_at(map: &[(u32, i32)], native: u32) -> Option<u32> {
    let end = map.partition_point(|&(n, _)| n <= native);
    if let Some(&(_, il)) = map[..end].iter().rev().find(|&&(_, il)| il >= 0) {
        return u32::try_from(il).ok();
    }
    // Only the prolog (or nothing mapped) before it: the method's first IL.
    map.iter()
        .filter(|&&(_, il)| il >= 0)
        .map(|&(_, il)| il)
        .min()
        .and_then(|il| u32::try_from(il).ok())
}

impl Model for LineMaps {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::METHOD_LOAD_VERBOSE).always(),
        Wanted::runtime(ids::METHOD_IL_TO_NATIVE_MAP).always(),
        Wanted::runtime(ids::MODULE_LOAD).always(),
        Wanted::rundown(rundown_ids::METHOD_DC_START_VERBOSE),
        Wanted::rundown(rundown_ids::METHOD_DC_STOP_VERBOSE),
        Wanted::rundown(rundown_ids::METHOD_IL_TO_NATIVE_MAP_DC_START),
        Wanted::rundown(rundown_ids::METHOD_IL_TO_NATIVE_MAP_DC_STOP),
        Wanted::rundown(rundown_ids::MODULE_DC_START),
        Wanted::rundown(rundown_ids::MODULE_DC_STOP),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let Provider::Known(k) = ev.provider else {
            return Ok(());
        };
        let (p, v, ptr) = (ev.payload, ev.version, ev.pointer_size);
        let runtime = k == KnownProvider::Runtime;
        match (runtime, ev.id) {
            (true, ids::MODULE_LOAD)
            | (false, rundown_ids::MODULE_DC_START | rundown_ids::MODULE_DC_STOP) => {
                let m = ModuleLoad::parse_event(k, ev.id, p, v, ptr)?;
                let e = self.modules.entry(m.module_id).or_default();
                let il = m.il_path.to_string_lossy();
                if !il.is_empty() {
                    e.il_path = il;
                }
                if m.pdb_guid.is_some() {
                    e.pdb_guid = m.pdb_guid;
                    e.pdb_path = m.pdb_path.to_string_lossy();
                }
            }
            (true, ids::METHOD_IL_TO_NATIVE_MAP)
            | (
                false,
                rundown_ids::METHOD_IL_TO_NATIVE_MAP_DC_START
                | rundown_ids::METHOD_IL_TO_NATIVE_MAP_DC_STOP,
            ) => {
                let m = IlToNativeMap::parse_event(k, ev.id, p, v, ptr)?;
                self.maps += 1;
                if runtime {
                    // Its load came just before (none: a dynamic method, not kept).
                    if let Some(start) = self.last_load.remove(&m.method_id) {
                        let map: Arc<[(u32, i32)]> = m.pairs().into();
                        if let Some(c) = self.code.get_mut(&start) {
                            c.map = map;
                        }
                    }
                } else {
                    // Its `DCStopVerbose` comes next.
                    self.pending.insert(m.method_id, m.pairs().into());
                }
            }
            (true, ids::METHOD_LOAD_VERBOSE)
            | (
                false,
                rundown_ids::METHOD_DC_START_VERBOSE | rundown_ids::METHOD_DC_STOP_VERBOSE,
            ) => {
                let m = MethodLoad::parse_event(k, ev.id, p, v, ptr)?;
                self.on_load(&m, runtime);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.starts = self.code.keys().copied().collect();
        self.starts.sort_unstable();
        self.last_load.clear();
        self.pending.clear();
    }
}

impl LineMaps {
    /// A method's code: kept when the method has a token (a MethodDef of its module).
    fn on_load(&mut self, m: &MethodLoad<'_>, runtime: bool) {
        if m.token >> 24 != 0x06 || m.start == 0 || m.size == 0 {
            self.pending.remove(&m.method_id);
            return;
        }
        self.methods
            .insert(m.method_id, (m.token & 0x00FF_FFFF, m.module_id));
        let map = if runtime {
            self.last_load.insert(m.method_id, m.start);
            None
        } else {
            self.pending.remove(&m.method_id)
        };
        let code = self.code.entry(m.start).or_insert_with(|| Code {
            end: m.start.saturating_add(u64::from(m.size)),
            method_id: m.method_id,
            map: Arc::from(Vec::new()),
        });
        if let Some(map) = map {
            code.map = map;
        }
    }
}

/// The registry's entry.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<LineMaps>("lines", boxed::<LineMaps>);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_offsets_map_to_the_il_they_run() {
        // As the runtime writes them, sorted: prolog, IL 0 at 7, IL 12 at 20 and at 40 (a
        // loop's two halves), unmapped code at 30, an epilog at 50.
        let map = [(0, -2), (7, 0), (20, 12), (30, -1), (40, 12), (50, -3)];
        assert_eq!(il_at(&map, 0), Some(0));
        assert_eq!(il_at(&map, 8), Some(0));
        assert_eq!(il_at(&map, 25), Some(12));
        assert_eq!(il_at(&map, 33), Some(12));
        assert_eq!(il_at(&map, 55), Some(12));
        assert_eq!(il_at(&[], 3), None);
    }
}
