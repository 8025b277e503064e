//! Any bytes given to the portable PDB reader: a line table or an error — never a panic; and
//! any bytes as an image's debug directory (its CodeView entry, its embedded PDB inflated and
//! read).
#![no_main]
use libfuzzer_sys::fuzz_target;
use readytorun::pdb::{debug_info, LineTable};

fn read(data: &[u8]) {
    if let Ok(t) = LineTable::parse(data) {
        for row in 0..=t.methods().min(256) + 1 {
            for p in t.points(row) {
                assert!((p.document as usize) < t.documents().len());
            }
            let _ = t.line_at(row, 0);
            let _ = t.line_at(row, u32::MAX);
        }
        let _ = (t.id(), t.guid());
    }
}

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"MZ") {
        if let Ok(info) = debug_info(data) {
            if let Some(pdb) = info.embedded {
                read(&pdb);
            }
        }
    } else {
        read(data);
    }
});
