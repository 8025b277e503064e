//! Names of native code from the trace: the ELF symbols `clrspy record` stored for the
//! native functions its samples hit (clrspy's `NativeSymbol` events: a file's path, the
//! function's file offsets, its name). A symbol stored without a size is the nearest one
//! before the addresses it names (a stripped library's export), shown as `name+0x…`.

use std::sync::Arc;

use rustc_hash::FxHashMap;

/// One stored symbol: file offsets `[start, start + size)`; size 0 for "nearest".
#[derive(Clone, Debug)]
struct Stored {
    start: u64,
    size: u64,
    name: Arc<str>,
}

/// The stored native symbols, per file path.
#[derive(Clone, Debug, Default)]
pub(crate) struct NativeNames {
    by_path: FxHashMap<String, Vec<Stored>>,
    sorted: bool,
}

impl NativeNames {
    /// Records a symbol stored in the trace.
    pub(crate) fn add(&mut self, path: &str, start: u64, size: u64, name: &str) {
        self.by_path
            .entry(path.to_string())
            .or_default()
            .push(Stored {
                start,
                size,
                name: Arc::from(name),
            });
        self.sorted = false;
    }

    /// The name of the code at `file_offset` of the file mapped from `path`: the function
    /// holding it, or the nearest symbol before it with the distance (`name+0x40`).
    pub(crate) fn name(&mut self, path: &str, file_offset: u64) -> Option<String> {
        if !self.sorted {
            for v in self.by_path.values_mut() {
                // Sized symbols before the size-0 "nearest" ones at the same start.
                v.sort_by(|a, b| a.start.cmp(&b.start).then(b.size.cmp(&a.size)));
            }
            self.sorted = true;
        }
        let v = self.by_path.get(path)?;
        let i = v.partition_point(|s| s.start <= file_offset);
        // A sized symbol holding the offset wins over a nearest one at the same start.
        let at = v[..i]
            .iter()
            .rev()
            .take_while(|s| s.start == v[i - 1].start);
        let mut nearest = None;
        for s in at {
            if s.size > 0 && file_offset - s.start < s.size {
                return Some(s.name.to_string());
            }
            if s.size == 0 {
                nearest = Some(s);
            }
        }
        nearest.map(|s| match file_offset - s.start {
            0 => s.name.to_string(),
            d => format!("{}+0x{d:x}", s.name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_symbols_hold_their_range_and_nearest_ones_add_the_distance() {
        let mut n = NativeNames::default();
        n.add("/lib/libc.so.6", 0x100, 0x20, "memcpy");
        n.add("/lib/libcoreclr.so", 0x1000, 0, "coreclr_execute_assembly");
        n.add("/lib/libc.so.6", 0x100, 0, "memcpy");
        assert_eq!(n.name("/lib/libc.so.6", 0x110).as_deref(), Some("memcpy"));
        assert_eq!(
            n.name("/lib/libc.so.6", 0x130).as_deref(),
            Some("memcpy+0x30")
        );
        assert_eq!(n.name("/lib/libc.so.6", 0x80), None);
        assert_eq!(
            n.name("/lib/libcoreclr.so", 0x1234).as_deref(),
            Some("coreclr_execute_assembly+0x234")
        );
        assert_eq!(n.name("/lib/other.so", 0x1234), None);
    }
}
