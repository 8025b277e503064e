//! The reader over testapps/Lines built with a portable PDB and with an embedded one
//! (testdata/lines: `dotnet build -c Release` and `-p:DebugType=embedded` of testapps/Lines),
//! against the lines its source marks, and over damaged copies.

use super::*;
use crate::metadata::t;

fn testdata(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/lines")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The line (1-based) of testapps/Lines/Program.cs that ends with `// line:MARK`.
fn marked(mark: &str) -> u32 {
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testapps/Lines/Program.cs");
    let text = std::fs::read_to_string(source).unwrap();
    let at = text
        .lines()
        .position(|l| l.trim_end().ends_with(&format!("// line:{mark}")))
        .unwrap_or_else(|| panic!("no line:{mark}"));
    at as u32 + 1
}

/// The MethodDef row of `Lines.Program.NAME` in the image.
fn method_row(image: &[u8], name: &str) -> u32 {
    let l = crate::layout(image).unwrap();
    let rvas = crate::Rvas {
        data: image,
        sections: &l.sections,
    };
    let md = Metadata::parse(rvas.slice(l.metadata.0, l.metadata.1).unwrap()).unwrap();
    (1..=md.rows(t::METHOD_DEF))
        .find(|&r| md.string(md.cell(t::METHOD_DEF, r, 3).unwrap()).unwrap() == name)
        .unwrap_or_else(|| panic!("no method {name}"))
}

fn lines_of(table: &LineTable, row: u32) -> Vec<u32> {
    table
        .points(row)
        .iter()
        .filter(|p| !p.is_hidden())
        .map(|p| p.line)
        .collect()
}

fn check_lines(table: &LineTable, image: &[u8]) {
    for (method, mark) in [
        ("HotLoop", "hot"),
        ("Allocate", "alloc"),
        ("Throw", "throw"),
    ] {
        let row = method_row(image, method);
        let line = marked(mark);
        let lines = lines_of(table, row);
        assert!(lines.contains(&line), "{method}: {lines:?}, not {line}");
        let p = table
            .points(row)
            .iter()
            .find(|p| p.line == line)
            .copied()
            .unwrap();
        let at = table.line_at(row, p.il_offset).unwrap();
        assert_eq!(at.line, line);
        assert_eq!(at.file, "/src/testapps/Lines/Program.cs");
        assert!(at.column > 1 && p.end_column > p.column, "{p:?}");
    }
}

#[test]
fn a_portable_pdb_gives_the_marked_lines() {
    let image = testdata("Lines.dll");
    let table = LineTable::parse(&testdata("Lines.pdb")).unwrap();
    // The source, and the files the SDK generates for the build.
    assert_eq!(table.documents()[0], "/src/testapps/Lines/Program.cs");
    assert!(
        table.documents()[1..].iter().all(|d| d.contains("/obj/")),
        "{:?}",
        table.documents()
    );
    check_lines(&table, &image);
    // The image names this PDB: its CodeView entry's GUID is the PDB id's.
    let info = debug_info(&image).unwrap();
    let cv = info.codeview.unwrap();
    assert_eq!(cv.guid, table.guid());
    assert!(cv.portable && cv.path.ends_with("Lines.pdb"), "{cv:?}");
    assert!(info.embedded.is_none());
}

#[test]
fn an_embedded_pdb_gives_the_same_lines() {
    let image = testdata("Lines.embedded.dll");
    let info = debug_info(&image).unwrap();
    let table = LineTable::parse(&info.embedded.unwrap()).unwrap();
    check_lines(&table, &image);
    assert_eq!(info.codeview.unwrap().guid, table.guid());
}

#[test]
fn an_offset_between_points_is_the_line_before_and_none_before_the_first() {
    let image = testdata("Lines.dll");
    let table = LineTable::parse(&testdata("Lines.pdb")).unwrap();
    let row = method_row(&image, "HotLoop");
    let points = table.points(row);
    let visible: Vec<&SequencePoint> = points.iter().filter(|p| !p.is_hidden()).collect();
    assert!(visible.len() >= 3, "{points:?}");
    let (a, b) = (visible[1], visible[2]);
    if b.il_offset > a.il_offset + 1 {
        assert_eq!(table.line_at(row, b.il_offset - 1).unwrap().line, a.line);
    }
    // A hidden point gives the visible line before it.
    if let Some(h) = points.iter().skip(1).find(|p| p.is_hidden()) {
        let before = points
            .iter()
            .rev()
            .find(|p| !p.is_hidden() && p.il_offset < h.il_offset)
            .unwrap();
        assert_eq!(table.line_at(row, h.il_offset).unwrap().line, before.line);
    }
    assert_eq!(table.line_at(0, 0), None);
    assert_eq!(table.line_at(table.methods() + 1, 0), None);
}

#[test]
fn damaged_pdbs_and_images_give_errors_not_panics() {
    let pdb = testdata("Lines.pdb");
    let image = testdata("Lines.embedded.dll");
    for len in (0..pdb.len()).step_by(37) {
        let _ = LineTable::parse(&pdb[..len]);
    }
    for len in (0..image.len()).step_by(41) {
        let _ = debug_info(&image[..len]);
    }
    // Every byte flipped in turn (a sample of the positions, all of the header).
    for at in (0..pdb.len()).filter(|i| i % 7 == 0 || *i < 512) {
        let mut bad = pdb.clone();
        bad[at] ^= 0xA5;
        let _ = LineTable::parse(&bad);
    }
    for at in (0..image.len()).step_by(13) {
        let mut bad = image.clone();
        bad[at] ^= 0x5A;
        if let Ok(DebugInfo {
            embedded: Some(p), ..
        }) = debug_info(&bad)
        {
            let _ = LineTable::parse(&p);
        }
    }
    // A Windows PDB, an image given as a PDB: said so.
    let err = LineTable::parse(b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0").unwrap_err();
    assert!(err.to_string().contains("Windows PDB"), "{err}");
    assert!(LineTable::parse(&image).is_err());
}

#[test]
fn signed_compressed_integers_decode_as_ecma_335_writes_them() {
    // II.23.2's examples: 3 → 06, -3 → 7B, 64 → 80 80, -64 → 01, 8192 → C0 00 40 00,
    // -8192 → 80 01, -268435456 → C0 00 00 01.
    for (bytes, value) in [
        (&[0x06][..], 3),
        (&[0x7B], -3),
        (&[0x80, 0x80], 64),
        (&[0x01], -64),
        (&[0xC0, 0x00, 0x40, 0x00], 8192),
        (&[0x80, 0x01], -8192),
        (&[0xDF, 0xFF, 0xFF, 0xFE], 268_435_455),
        (&[0xC0, 0x00, 0x00, 0x01], -268_435_456),
    ] {
        let b = Bytes::new(bytes, "test");
        assert_eq!(
            b.compressed_signed(0).unwrap(),
            (value, bytes.len()),
            "{bytes:x?}"
        );
    }
}
