//! Prints every sequence point of a portable PDB (or of the PDB embedded in an image), one
//! a line: `ROW IL_OFFSET LINE COLUMN END_LINE END_COLUMN DOCUMENT` (hidden points: LINE 0),
//! to compare with another reader. Given an image, its CodeView entry goes to stderr.
//!
//!     cargo run -p readytorun --example pdb_lines -- App.pdb
//!     cargo run -p readytorun --example pdb_lines -- App.dll     (an embedded PDB)

use readytorun::pdb::{debug_info, CodeView, LineTable};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: pdb_lines FILE.pdb|FILE.dll")?;
    let bytes = std::fs::read(&path)?;
    let table = if bytes.starts_with(b"MZ") {
        let info = debug_info(&bytes)?;
        if let Some(CodeView {
            guid,
            age,
            path,
            portable,
        }) = &info.codeview
        {
            let kind = if *portable { "portable" } else { "Windows" };
            eprintln!("codeview: {kind} PDB {path}, GUID {guid:02x?}, age {age}");
        }
        let pdb = info.embedded.ok_or("the image has no embedded PDB")?;
        LineTable::parse(&pdb)?
    } else {
        LineTable::parse(&bytes)?
    };
    for row in 1..=table.methods() {
        for p in table.points(row) {
            // Hidden points (compiler-added code) print as line 0, spans and all.
            debug_assert_eq!(p.is_hidden(), p.line == 0);
            println!(
                "{row} {} {} {} {} {} {}",
                p.il_offset,
                p.line,
                p.column,
                p.end_line,
                p.end_column,
                table.documents()[p.document as usize]
            );
        }
    }
    Ok(())
}
