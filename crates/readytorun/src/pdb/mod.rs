//! Source lines from portable PDBs: which file and line each IL offset of a method is.
//!
//! A portable PDB is ECMA-335 metadata with its own tables. `MethodDebugInformation` has a
//! row per MethodDef of the image (the same row number) holding the method's document and
//! its sequence points: a blob mapping IL offsets to a document's line and column spans.
//! `Document` names the files (each name a blob of path parts). The `#Pdb` stream starts with
//! the PDB's id: its first 16 bytes are the GUID the image's CodeView debug entry names, so a
//! PDB is matched to its image ([`debug_info`]). The PDB may also be inside the image,
//! deflated, in an `EmbeddedPortablePdb` debug entry.
//!
//! Every read is bounds-checked: any bytes give a [`LineTable`] or an [`Error`] with the
//! offset that was wrong, never a panic; what is kept is bounded by the input's size.
//!
//! ```no_run
//! let pdb = std::fs::read("App.pdb")?;
//! let lines = readytorun::pdb::LineTable::parse(&pdb)?;
//! // MethodDef row 6 (token 0x06000006), IL offset 0x12.
//! if let Some(at) = lines.line_at(6, 0x12) {
//!     println!("{}:{}", at.file, at.line);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::Read;

use object::pe::IMAGE_DIRECTORY_ENTRY_DEBUG;
use object::read::pe::{ImageNtHeaders, PeFile32, PeFile64};
use object::LittleEndian as LE;

use crate::metadata::{t, Metadata};
use crate::reader::Bytes;
use crate::Error;

/// The line a hidden sequence point has (code the compiler added: no line of its own).
const HIDDEN_LINE: u32 = 0x00FE_EFEE;
/// The largest embedded PDB inflated (its declared size is the input's word, so bounded).
const MAX_EMBEDDED: u32 = 256 << 20;

/// One sequence point: from `il_offset` on (to the next point), the method runs this span of
/// the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencePoint {
    /// The first IL offset it covers.
    pub il_offset: u32,
    /// Index into [`LineTable::documents`].
    pub document: u32,
    /// First line (1-based); 0 for a hidden point.
    pub line: u32,
    /// First column (1-based).
    pub column: u32,
    /// Last line.
    pub end_line: u32,
    /// Column past the span's end.
    pub end_column: u32,
}

impl SequencePoint {
    /// True for a hidden point: code the compiler added, on no line.
    pub fn is_hidden(&self) -> bool {
        self.line == 0
    }
}

/// A place in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLine<'a> {
    /// The document's path as the compiler wrote it.
    pub file: &'a str,
    /// Its index in [`LineTable::documents`].
    pub document: u32,
    /// Line (1-based).
    pub line: u32,
    /// Column (1-based).
    pub column: u32,
}

/// The sequence points of every method of a portable PDB.
#[derive(Clone, Debug, Default)]
pub struct LineTable {
    id: [u8; 20],
    documents: Vec<String>,
    /// Index `r - 1`: MethodDef row `r`'s points, by IL offset.
    methods: Vec<Vec<SequencePoint>>,
}

impl LineTable {
    /// Reads a portable PDB (the bytes of a `.pdb` file, or an embedded one inflated).
    pub fn parse(data: &[u8]) -> Result<LineTable, Error> {
        if data.get(..4) != Some(b"BSJB") {
            return Err(Error::NotManaged(
                "not a portable PDB (no metadata signature; a Windows PDB?)",
            ));
        }
        let md = Metadata::parse(data)?;
        let stream = md.pdb_stream().ok_or(Error::NotManaged(
            "metadata without a #Pdb stream: not a PDB",
        ))?;
        let mut id = [0u8; 20];
        id.copy_from_slice(Bytes::new(stream, "#Pdb stream").slice(0, 20)?);
        let mut documents = Vec::with_capacity(md.rows(t::DOCUMENT).min(1 << 16) as usize);
        for r in 1..=md.rows(t::DOCUMENT) {
            documents.push(document_name(&md, md.cell(t::DOCUMENT, r, 0)?)?);
        }
        let rows = md.rows(t::METHOD_DEBUG_INFORMATION);
        let mut methods = Vec::with_capacity(rows.min(1 << 20) as usize);
        for r in 1..=rows {
            let document = md.cell(t::METHOD_DEBUG_INFORMATION, r, 0)?;
            let blob = md.cell(t::METHOD_DEBUG_INFORMATION, r, 1)?;
            methods.push(if blob == 0 {
                Vec::new()
            } else {
                sequence_points(md.blob(blob)?, document, documents.len() as u32)?
            });
        }
        Ok(LineTable {
            id,
            documents,
            methods,
        })
    }

    /// The PDB's id: the GUID (16 bytes) and stamp (4) its image's CodeView entry names.
    pub fn id(&self) -> [u8; 20] {
        self.id
    }

    /// The GUID of the id, as the image's CodeView entry has it.
    pub fn guid(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        g.copy_from_slice(&self.id[..16]);
        g
    }

    /// The documents (source files), as the compiler wrote their paths.
    pub fn documents(&self) -> &[String] {
        &self.documents
    }

    /// The sequence points of MethodDef row `method_row` (a method token's low 24 bits), by
    /// IL offset; empty for a method without any (abstract, or compiled without a PDB).
    pub fn points(&self, method_row: u32) -> &[SequencePoint] {
        method_row
            .checked_sub(1)
            .and_then(|i| self.methods.get(i as usize))
            .map_or(&[], Vec::as_slice)
    }

    /// Methods with rows in the table (the image's MethodDef rows).
    pub fn methods(&self) -> u32 {
        self.methods.len() as u32
    }

    /// The source line of IL offset `il_offset` of MethodDef row `method_row`: the last
    /// sequence point at or before it; a hidden one (compiler-added code) gives the line of
    /// the visible point before it. `None` when the method has no point at or before it.
    pub fn line_at(&self, method_row: u32, il_offset: u32) -> Option<SourceLine<'_>> {
        let points = self.points(method_row);
        let end = points.partition_point(|p| p.il_offset <= il_offset);
        let p = points[..end].iter().rev().find(|p| !p.is_hidden())?;
        Some(SourceLine {
            file: self.documents.get(p.document as usize)?,
            document: p.document,
            line: p.line,
            column: p.column,
        })
    }
}

/// A document's name: a blob of a separator and the blob indexes of the path's parts.
fn document_name(md: &Metadata<'_>, blob: u32) -> Result<String, Error> {
    let b = Bytes::new(md.blob(blob)?, "Document name blob");
    if b.len() == 0 {
        return Ok(String::new());
    }
    let separator = b.u8(0)?;
    let mut name = String::new();
    let mut at = 1;
    let mut first = true;
    while at < b.len() {
        let (part, next) = b.compressed(at)?;
        at = next;
        if !first && separator != 0 {
            name.push(char::from(separator));
        }
        first = false;
        if part != 0 {
            name.push_str(&String::from_utf8_lossy(md.blob(part)?));
        }
        if name.len() > 4096 {
            return Err(Error::Malformed {
                what: "Document name blob",
                offset: u64::from(blob),
                detail: "a path over 4 KiB",
            });
        }
    }
    Ok(name)
}

/// The sequence points of a `MethodDebugInformation` blob; `document` is the row's document
/// (0 when the blob names its first), `documents` how many there are.
fn sequence_points(
    blob: &[u8],
    document: u32,
    documents: u32,
) -> Result<Vec<SequencePoint>, Error> {
    let b = Bytes::new(blob, "sequence points blob");
    let bad = |offset: usize, detail: &'static str| Error::Malformed {
        what: "sequence points blob",
        offset: offset as u64,
        detail,
    };
    // Header: the local signature, then the first document when the row names none.
    let (_, mut at) = b.compressed(0)?;
    let mut doc = document;
    if doc == 0 {
        let (d, next) = b.compressed(at)?;
        doc = d;
        at = next;
    }
    let mut out = Vec::new();
    let mut il: u32 = 0;
    let mut previous: Option<(u32, u32)> = None; // the last visible point's line and column
    let mut first = true;
    while at < b.len() {
        let start = at;
        let (delta_il, next) = b.compressed(at)?;
        at = next;
        if !first && delta_il == 0 {
            // A document record: the points that follow are in another document.
            let (d, next) = b.compressed(at)?;
            doc = d;
            at = next;
            continue;
        }
        il = if first {
            delta_il
        } else {
            il.checked_add(delta_il)
                .ok_or_else(|| bad(start, "IL offset overflows"))?
        };
        first = false;
        let (delta_lines, next) = b.compressed(at)?;
        at = next;
        let delta_columns = if delta_lines == 0 {
            let (c, next) = b.compressed(at)?;
            at = next;
            i64::from(c)
        } else {
            let (c, next) = b.compressed_signed(at)?;
            at = next;
            i64::from(c)
        };
        let index = doc
            .checked_sub(1)
            .filter(|&i| i < documents)
            .ok_or_else(|| bad(start, "a document row that does not exist"))?;
        if delta_lines == 0 && delta_columns == 0 {
            out.push(SequencePoint {
                il_offset: il,
                document: index,
                line: 0,
                column: 0,
                end_line: 0,
                end_column: 0,
            });
            continue;
        }
        let (line, column) = match previous {
            None => {
                let (l, next) = b.compressed(at)?;
                let (c, next) = b.compressed(next)?;
                at = next;
                (i64::from(l), i64::from(c))
            }
            Some((pl, pc)) => {
                let (l, next) = b.compressed_signed(at)?;
                let (c, next) = b.compressed_signed(next)?;
                at = next;
                (i64::from(pl) + i64::from(l), i64::from(pc) + i64::from(c))
            }
        };
        let end_line = line + i64::from(delta_lines);
        let end_column = column + delta_columns;
        let fits = |v: i64| (1..i64::from(HIDDEN_LINE)).contains(&v);
        if !fits(line)
            || !fits(end_line)
            || !(0..=0xFFFF).contains(&column)
            || !(0..=0xFFFF).contains(&end_column)
        {
            return Err(bad(start, "a line or column out of range"));
        }
        previous = Some((line as u32, column as u32));
        out.push(SequencePoint {
            il_offset: il,
            document: index,
            line: line as u32,
            column: column as u32,
            end_line: end_line as u32,
            end_column: end_column as u32,
        });
    }
    // Compilers write them in IL order; a damaged blob keeps its points findable anyway.
    out.sort_by_key(|p| p.il_offset);
    Ok(out)
}

/// What an image's debug directory says of its PDB.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DebugInfo {
    /// The CodeView entry: the PDB the compiler wrote.
    pub codeview: Option<CodeView>,
    /// The PDB inside the image (`EmbeddedPortablePdb`), inflated.
    pub embedded: Option<Vec<u8>>,
}

/// A CodeView (`RSDS`) debug entry: which PDB belongs to the image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeView {
    /// The PDB's GUID (the first 16 bytes of a portable PDB's id).
    pub guid: [u8; 16],
    /// Its age (1 for portable PDBs).
    pub age: u32,
    /// The path the compiler wrote it to.
    pub path: String,
    /// True when the entry says the PDB is portable (minor version `0x504D`, "PM").
    pub portable: bool,
}

/// Debug directory entry types.
const CODEVIEW: u32 = 2;
const EMBEDDED_PORTABLE_PDB: u32 = 17;

/// Reads an image's debug directory: its CodeView entry and its embedded PDB, if any.
pub fn debug_info(image: &[u8]) -> Result<DebugInfo, Error> {
    let entries = debug_entries(image)?;
    let mut out = DebugInfo::default();
    for e in entries {
        let Some(body) = image
            .get(e.file_offset as usize..)
            .and_then(|b| b.get(..e.size as usize))
        else {
            return Err(Error::OutOfBounds {
                what: "debug directory entry",
                offset: u64::from(e.file_offset),
                len: u64::from(e.size),
            });
        };
        let b = Bytes::new(body, "debug directory entry");
        match e.kind {
            CODEVIEW if out.codeview.is_none() && b.u32(0)? == 0x5344_5352 => {
                let mut guid = [0u8; 16];
                guid.copy_from_slice(b.slice(4, 16)?);
                let age = b.u32(20)?;
                let path = b.cstr(24, 4096)?;
                out.codeview = Some(CodeView {
                    guid,
                    age,
                    path: String::from_utf8_lossy(path).into_owned(),
                    portable: e.minor == 0x504D,
                });
            }
            EMBEDDED_PORTABLE_PDB if out.embedded.is_none() => {
                if b.u32(0)? != 0x4244_504D {
                    return Err(Error::Malformed {
                        what: "embedded PDB",
                        offset: u64::from(e.file_offset),
                        detail: "no MPDB signature",
                    });
                }
                let size = b.u32(4)?;
                if size > MAX_EMBEDDED {
                    return Err(Error::Malformed {
                        what: "embedded PDB",
                        offset: u64::from(e.file_offset) + 4,
                        detail: "declares over 256 MiB",
                    });
                }
                let mut pdb = Vec::with_capacity(size.min(1 << 20) as usize);
                flate2::read::DeflateDecoder::new(b.slice(8, body.len() - 8)?)
                    .take(u64::from(size) + 1)
                    .read_to_end(&mut pdb)
                    .map_err(|_| Error::Malformed {
                        what: "embedded PDB",
                        offset: u64::from(e.file_offset) + 8,
                        detail: "its deflated bytes do not inflate",
                    })?;
                if pdb.len() != size as usize {
                    return Err(Error::Malformed {
                        what: "embedded PDB",
                        offset: u64::from(e.file_offset) + 4,
                        detail: "inflates to another size than it declares",
                    });
                }
                out.embedded = Some(pdb);
            }
            _ => {}
        }
    }
    Ok(out)
}

/// One debug directory entry (IMAGE_DEBUG_DIRECTORY).
struct DebugEntry {
    kind: u32,
    minor: u16,
    size: u32,
    file_offset: u32,
}

/// The entries of a PE image's debug directory.
fn debug_entries(image: &[u8]) -> Result<Vec<DebugEntry>, Error> {
    fn read<H: ImageNtHeaders>(
        pe: &object::read::pe::PeFile<'_, H>,
        image: &[u8],
    ) -> Result<Vec<DebugEntry>, Error> {
        let Some(dir) = pe.data_directory(IMAGE_DIRECTORY_ENTRY_DEBUG) else {
            return Ok(Vec::new());
        };
        let (rva, size) = (dir.virtual_address.get(LE), dir.size.get(LE));
        if rva == 0 || size == 0 {
            return Ok(Vec::new());
        }
        let table = dir
            .data(image, &pe.section_table())
            .map_err(|_| Error::OutOfBounds {
                what: "debug directory",
                offset: u64::from(rva),
                len: u64::from(size),
            })?;
        let b = Bytes::new(table, "debug directory");
        // 28 bytes an entry; a directory of thousands is damage, not a compiler's.
        (0..(table.len() / 28).min(64))
            .map(|i| {
                let at = i * 28;
                Ok(DebugEntry {
                    minor: b.u16(at + 10)?,
                    kind: b.u32(at + 12)?,
                    size: b.u32(at + 16)?,
                    file_offset: b.u32(at + 24)?,
                })
            })
            .collect()
    }
    match object::FileKind::parse(image) {
        Ok(object::FileKind::Pe64) => {
            let pe = PeFile64::parse(image).map_err(|_| Error::NotPe("bad PE32+ headers"))?;
            read(&pe, image)
        }
        Ok(object::FileKind::Pe32) => {
            let pe = PeFile32::parse(image).map_err(|_| Error::NotPe("bad PE32 headers"))?;
            read(&pe, image)
        }
        _ => Err(Error::NotPe("not a PE file")),
    }
}

#[cfg(test)]
mod tests;
