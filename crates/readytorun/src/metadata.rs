//! The ECMA-335 metadata of an image (Partition II §24): the stream headers, the `#~` table
//! stream's row counts and row sizes (which depend on heap sizes and row counts), and the few
//! tables needed to name methods — Module (the MVID), TypeRef, TypeDef, MethodDef, MemberRef,
//! NestedClass — with the `#Strings` and `#GUID` heaps. A portable PDB is the same format with
//! its own tables (0x30–0x37) and a `#Pdb` stream holding the row counts of the image's tables
//! its indexes point into.

use crate::reader::Bytes;
use crate::Error;

/// Table numbers (II.22).
pub(crate) mod t {
    pub(crate) const MODULE: usize = 0x00;
    pub(crate) const TYPE_REF: usize = 0x01;
    pub(crate) const TYPE_DEF: usize = 0x02;
    pub(crate) const FIELD: usize = 0x04;
    pub(crate) const METHOD_DEF: usize = 0x06;
    pub(crate) const MEMBER_REF: usize = 0x0A;
    pub(crate) const CUSTOM_ATTRIBUTE: usize = 0x0C;
    pub(crate) const ASSEMBLY: usize = 0x20;
    pub(crate) const NESTED_CLASS: usize = 0x29;
    pub(crate) const DOCUMENT: usize = 0x30;
    pub(crate) const METHOD_DEBUG_INFORMATION: usize = 0x31;
}

/// One column's kind.
#[derive(Clone, Copy)]
enum Col {
    /// A fixed number of bytes.
    Fixed(usize),
    Str,
    Guid,
    Blob,
    /// An index into one table.
    Index(usize),
    /// A coded index over these tables (usize::MAX: an unused tag).
    Coded(&'static [usize]),
}

const N: usize = usize::MAX;
const RESOLUTION_SCOPE: &[usize] = &[0x00, 0x1A, 0x23, 0x01];
const TYPE_DEF_OR_REF: &[usize] = &[0x02, 0x01, 0x1B];
const HAS_CONSTANT: &[usize] = &[0x04, 0x08, 0x17];
const HAS_CUSTOM_ATTRIBUTE: &[usize] = &[
    0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x00, 0x0E, 0x17, 0x14, 0x11, 0x1A, 0x1B, 0x20, 0x23,
    0x26, 0x27, 0x28, 0x2A, 0x2C, 0x2B,
];
const CUSTOM_ATTRIBUTE_TYPE: &[usize] = &[N, N, 0x06, 0x0A, N];
const HAS_FIELD_MARSHAL: &[usize] = &[0x04, 0x08];
const HAS_DECL_SECURITY: &[usize] = &[0x02, 0x06, 0x20];
const MEMBER_REF_PARENT: &[usize] = &[0x02, 0x01, 0x1A, 0x06, 0x1B];
const HAS_SEMANTICS: &[usize] = &[0x14, 0x17];
const METHOD_DEF_OR_REF: &[usize] = &[0x06, 0x0A];
const MEMBER_FORWARDED: &[usize] = &[0x04, 0x06];
const IMPLEMENTATION: &[usize] = &[0x26, 0x23, 0x27];
const TYPE_OR_METHOD_DEF: &[usize] = &[0x02, 0x06];
const HAS_CUSTOM_DEBUG_INFORMATION: &[usize] = &[
    0x06, 0x04, 0x01, 0x02, 0x08, 0x09, 0x0A, 0x00, 0x0E, 0x17, 0x14, 0x11, 0x1A, 0x1B, 0x20, 0x23,
    0x26, 0x27, 0x28, 0x2A, 0x2C, 0x2B, 0x30, 0x32, 0x33, 0x34, 0x35,
];

use Col::{Blob, Coded, Fixed, Guid, Index, Str};

/// The columns of every table this reader knows: the image's (0x00..=0x2C, II.22) and the
/// portable PDB's (0x30..=0x37); 0x2D..=0x2F are unused.
const TABLES: &[&[Col]] = &[
    &[Fixed(2), Str, Guid, Guid, Guid],   // Module
    &[Coded(RESOLUTION_SCOPE), Str, Str], // TypeRef
    &[
        Fixed(4),
        Str,
        Str,
        Coded(TYPE_DEF_OR_REF),
        Index(0x04),
        Index(0x06),
    ], // TypeDef
    &[Index(0x04)],                       // FieldPtr
    &[Fixed(2), Str, Blob],               // Field
    &[Index(0x06)],                       // MethodPtr
    &[Fixed(4), Fixed(2), Fixed(2), Str, Blob, Index(0x08)], // MethodDef
    &[Index(0x08)],                       // ParamPtr
    &[Fixed(2), Fixed(2), Str],           // Param
    &[Index(0x02), Coded(TYPE_DEF_OR_REF)], // InterfaceImpl
    &[Coded(MEMBER_REF_PARENT), Str, Blob], // MemberRef
    &[Fixed(2), Coded(HAS_CONSTANT), Blob], // Constant
    &[
        Coded(HAS_CUSTOM_ATTRIBUTE),
        Coded(CUSTOM_ATTRIBUTE_TYPE),
        Blob,
    ], // CustomAttribute
    &[Coded(HAS_FIELD_MARSHAL), Blob],    // FieldMarshal
    &[Fixed(2), Coded(HAS_DECL_SECURITY), Blob], // DeclSecurity
    &[Fixed(2), Fixed(4), Index(0x02)],   // ClassLayout
    &[Fixed(4), Index(0x04)],             // FieldLayout
    &[Blob],                              // StandAloneSig
    &[Index(0x02), Index(0x14)],          // EventMap
    &[Index(0x14)],                       // EventPtr
    &[Fixed(2), Str, Coded(TYPE_DEF_OR_REF)], // Event
    &[Index(0x02), Index(0x17)],          // PropertyMap
    &[Index(0x17)],                       // PropertyPtr
    &[Fixed(2), Str, Blob],               // Property
    &[Fixed(2), Index(0x06), Coded(HAS_SEMANTICS)], // MethodSemantics
    &[
        Index(0x02),
        Coded(METHOD_DEF_OR_REF),
        Coded(METHOD_DEF_OR_REF),
    ], // MethodImpl
    &[Str],                               // ModuleRef
    &[Blob],                              // TypeSpec
    &[Fixed(2), Coded(MEMBER_FORWARDED), Str, Index(0x1A)], // ImplMap
    &[Fixed(4), Index(0x04)],             // FieldRVA
    &[Fixed(4), Fixed(4)],                // EncLog
    &[Fixed(4)],                          // EncMap
    &[Fixed(4), Fixed(8), Fixed(4), Blob, Str, Str], // Assembly
    &[Fixed(4)],                          // AssemblyProcessor
    &[Fixed(12)],                         // AssemblyOS
    &[Fixed(8), Fixed(4), Blob, Str, Str, Blob], // AssemblyRef
    &[Fixed(4), Index(0x23)],             // AssemblyRefProcessor
    &[Fixed(12), Index(0x23)],            // AssemblyRefOS
    &[Fixed(4), Str, Blob],               // File
    &[Fixed(4), Fixed(4), Str, Str, Coded(IMPLEMENTATION)], // ExportedType
    &[Fixed(4), Fixed(4), Str, Coded(IMPLEMENTATION)], // ManifestResource
    &[Index(0x02), Index(0x02)],          // NestedClass
    &[Fixed(2), Fixed(2), Coded(TYPE_OR_METHOD_DEF), Str], // GenericParam
    &[Coded(METHOD_DEF_OR_REF), Blob],    // MethodSpec
    &[Index(0x2A), Coded(TYPE_DEF_OR_REF)], // GenericParamConstraint
    &[],                                  // 0x2D
    &[],                                  // 0x2E
    &[],                                  // 0x2F
    &[Blob, Guid, Blob, Guid],            // Document
    &[Index(0x30), Blob],                 // MethodDebugInformation
    &[
        Index(0x06),
        Index(0x35),
        Index(0x33),
        Index(0x34),
        Fixed(4),
        Fixed(4),
    ], // LocalScope
    &[Fixed(2), Fixed(2), Str],           // LocalVariable
    &[Str, Blob],                         // LocalConstant
    &[Index(0x35), Blob],                 // ImportScope
    &[Index(0x06), Index(0x06)],          // StateMachineMethod
    &[Coded(HAS_CUSTOM_DEBUG_INFORMATION), Guid, Blob], // CustomDebugInformation
];

/// The most rows a table may declare (a hard limit, not an allocation hint).
const MAX_ROWS: u32 = 1 << 24;

/// Where one table's rows are and how its columns lie.
#[derive(Clone, Debug, Default)]
struct Table {
    rows: u32,
    offset: usize,
    row_size: usize,
    /// (offset in row, width) of each column.
    cols: Vec<(usize, usize)>,
}

/// A parsed metadata blob (borrowing the image's bytes).
#[derive(Clone, Debug)]
pub(crate) struct Metadata<'a> {
    tables_bytes: Bytes<'a>,
    strings: Bytes<'a>,
    guids: Bytes<'a>,
    blobs: Bytes<'a>,
    tables: Vec<Table>,
    /// A portable PDB's `#Pdb` stream.
    pdb: Option<&'a [u8]>,
}

fn bits_for(n: usize) -> u32 {
    // Tag bits of a coded index over n tables.
    usize::BITS - (n.max(1) - 1).leading_zeros()
}

impl<'a> Metadata<'a> {
    /// Parses the metadata root at the start of `data` (II.24.2.1).
    pub(crate) fn parse(data: &'a [u8]) -> Result<Metadata<'a>, Error> {
        let root = Bytes::new(data, "metadata root");
        if root.u32(0)? != 0x424A_5342 {
            return Err(Error::NotManaged("no metadata signature"));
        }
        let version_len = root.u32(12)? as usize;
        let mut pos = 16usize
            .checked_add(version_len)
            .ok_or(Error::NotManaged("bad metadata version length"))?;
        let streams = root.u16(pos + 2)?;
        pos += 4;
        let (mut tables, mut strings, mut guids, mut blobs) = (None, None, None, None);
        let mut pdb = None;
        for _ in 0..streams {
            let offset = root.u32(pos)? as usize;
            let size = root.u32(pos + 4)? as usize;
            let name = root.cstr(pos + 8, 32)?;
            pos += 8 + (name.len() + 4) / 4 * 4;
            let body = root.slice(offset, size)?;
            match name {
                b"#~" => tables = Some(body),
                b"#-" => return Err(Error::NotManaged("uncompressed metadata tables (#-)")),
                b"#Strings" => strings = Some(body),
                b"#GUID" => guids = Some(body),
                b"#Blob" => blobs = Some(body),
                b"#Pdb" => pdb = Some(body),
                _ => {}
            }
        }
        let tables = tables.ok_or(Error::NotManaged("no #~ stream"))?;
        let mut md = Metadata {
            tables_bytes: Bytes::new(tables, "#~ stream"),
            strings: Bytes::new(strings.unwrap_or(&[]), "#Strings heap"),
            guids: Bytes::new(guids.unwrap_or(&[]), "#GUID heap"),
            blobs: Bytes::new(blobs.unwrap_or(&[]), "#Blob heap"),
            tables: Vec::new(),
            pdb,
        };
        md.lay_out()?;
        Ok(md)
    }

    /// Reads the row counts and computes every table's position and column layout.
    fn lay_out(&mut self) -> Result<(), Error> {
        let b = self.tables_bytes;
        let heap_sizes = b.u8(6)?;
        let valid = b.u64(8)?;
        let mut pos = 24usize;
        let mut rows = [0u32; 64];
        for (i, r) in rows.iter_mut().enumerate() {
            if valid & (1 << i) != 0 {
                if i >= TABLES.len() {
                    return Err(Error::Malformed {
                        what: "#~ stream",
                        offset: 8,
                        detail: "a table this reader does not know",
                    });
                }
                *r = b.u32(pos)?;
                if *r > MAX_ROWS {
                    return Err(Error::Malformed {
                        what: "#~ stream",
                        offset: pos as u64,
                        detail: "too many rows",
                    });
                }
                pos += 4;
            }
        }
        if heap_sizes & 0x40 != 0 {
            pos += 4; // extra data
        }
        // A PDB's indexes into the image's tables are as wide as the image's row counts say.
        let mut widths = rows;
        if let Some(p) = self.pdb {
            let p = Bytes::new(p, "#Pdb stream");
            let referenced = p.u64(24)?;
            let mut at = 32usize;
            for (i, w) in widths.iter_mut().enumerate() {
                if referenced & (1 << i) != 0 {
                    *w = (*w).max(p.u32(at)?);
                    at += 4;
                }
            }
        }
        let rows_for_width = widths;
        let str_w = if heap_sizes & 1 != 0 { 4 } else { 2 };
        let guid_w = if heap_sizes & 2 != 0 { 4 } else { 2 };
        let blob_w = if heap_sizes & 4 != 0 { 4 } else { 2 };
        let index_w = |t: usize| if rows_for_width[t] < (1 << 16) { 2 } else { 4 };
        let coded_w = |ts: &[usize]| {
            let max = ts
                .iter()
                .map(|&t| if t == N { 0 } else { rows_for_width[t] })
                .max()
                .unwrap_or(0);
            if u64::from(max) < (1u64 << (16 - bits_for(ts.len()))) {
                2
            } else {
                4
            }
        };
        for (i, cols) in TABLES.iter().enumerate() {
            let mut layout = Vec::with_capacity(cols.len());
            let mut at = 0;
            for c in cols.iter() {
                let w = match *c {
                    Fixed(n) => n,
                    Str => str_w,
                    Guid => guid_w,
                    Blob => blob_w,
                    Index(t) => index_w(t),
                    Coded(ts) => coded_w(ts),
                };
                layout.push((at, w));
                at += w;
            }
            let size = (rows[i] as usize).checked_mul(at).ok_or(Error::Malformed {
                what: "#~ stream",
                offset: 8,
                detail: "table too large",
            })?;
            self.tables.push(Table {
                rows: rows[i],
                offset: pos,
                row_size: at,
                cols: layout,
            });
            pos = pos.checked_add(size).ok_or(Error::Malformed {
                what: "#~ stream",
                offset: 8,
                detail: "tables too large",
            })?;
        }
        // Every table must fit in the stream.
        b.slice(0, pos)?;
        Ok(())
    }

    /// Number of rows of table `t`.
    pub(crate) fn rows(&self, t: usize) -> u32 {
        self.tables.get(t).map_or(0, |x| x.rows)
    }

    /// Column `col` of row `row` (1-based) of table `t`.
    pub(crate) fn cell(&self, t: usize, row: u32, col: usize) -> Result<u32, Error> {
        let table = self.tables.get(t).ok_or(Error::Malformed {
            what: "#~ stream",
            offset: 0,
            detail: "no such table",
        })?;
        if row == 0 || row > table.rows {
            return Err(Error::BadToken {
                table: t as u8,
                row,
            });
        }
        let &(at, w) = table.cols.get(col).ok_or(Error::Malformed {
            what: "#~ stream",
            offset: 0,
            detail: "no such column",
        })?;
        let off = table.offset + (row as usize - 1) * table.row_size + at;
        match w {
            1 => self.tables_bytes.u8(off).map(u32::from),
            2 => self.tables_bytes.u16(off).map(u32::from),
            _ => self.tables_bytes.u32(off),
        }
    }

    /// A string of the `#Strings` heap (lossy UTF-8, at most 1 KiB).
    pub(crate) fn string(&self, index: u32) -> Result<String, Error> {
        let s = self.strings.cstr(index as usize, 1024)?;
        Ok(String::from_utf8_lossy(s).into_owned())
    }

    /// A blob of the `#Blob` heap: its bytes after the compressed length (II.24.2.4).
    pub(crate) fn blob(&self, index: u32) -> Result<&'a [u8], Error> {
        let (len, at) = self.blobs.compressed(index as usize)?;
        self.blobs.slice(at, len as usize)
    }

    /// A portable PDB's `#Pdb` stream, when this is one.
    pub(crate) fn pdb_stream(&self) -> Option<&'a [u8]> {
        self.pdb
    }

    /// The module's MVID (from the `#GUID` heap).
    pub(crate) fn mvid(&self) -> Result<[u8; 16], Error> {
        let i = self.cell(t::MODULE, 1, 2)?;
        let at = (i as usize)
            .checked_sub(1)
            .ok_or(Error::BadToken { table: 0, row: 0 })?
            * 16;
        let g = self.guids.slice(at, 16)?;
        let mut out = [0u8; 16];
        out.copy_from_slice(g);
        Ok(out)
    }

    /// The width of a coded index's tag for tables `ts`.
    pub(crate) fn decode_coded(ts_len: usize, value: u32) -> (usize, u32) {
        let bits = bits_for(ts_len);
        ((value & ((1 << bits) - 1)) as usize, value >> bits)
    }

    /// Full names of every TypeDef (index 0 is row 1): `Namespace.Outer+Inner`.
    pub(crate) fn type_names(&self) -> Result<Vec<String>, Error> {
        let n = self.rows(t::TYPE_DEF);
        let mut enclosing = vec![0u32; n as usize];
        for r in 1..=self.rows(t::NESTED_CLASS) {
            let nested = self.cell(t::NESTED_CLASS, r, 0)?;
            let outer = self.cell(t::NESTED_CLASS, r, 1)?;
            if let Some(e) = nested
                .checked_sub(1)
                .and_then(|i| enclosing.get_mut(i as usize))
            {
                *e = outer;
            }
        }
        let mut simple = Vec::with_capacity(n as usize);
        for r in 1..=n {
            let name = self.string(self.cell(t::TYPE_DEF, r, 1)?)?;
            let ns = self.string(self.cell(t::TYPE_DEF, r, 2)?)?;
            simple.push(if ns.is_empty() {
                name
            } else {
                format!("{ns}.{name}")
            });
        }
        let mut full = Vec::with_capacity(n as usize);
        for r in 0..n as usize {
            let mut name = simple[r].clone();
            let mut cur = enclosing[r];
            // Nesting is shallow; a cycle in damaged metadata stops at the bound.
            for _ in 0..32 {
                let Some(i) = cur.checked_sub(1).map(|i| i as usize) else {
                    break;
                };
                let Some(outer) = simple.get(i) else { break };
                name = format!("{outer}+{name}");
                cur = enclosing[i];
            }
            full.push(name);
        }
        Ok(full)
    }

    /// The owning TypeDef row (1-based) of every MethodDef (index 0 is row 1), from the
    /// TypeDefs' method lists; 0 where none owns it.
    pub(crate) fn method_owners(&self) -> Result<Vec<u32>, Error> {
        let methods = self.rows(t::METHOD_DEF);
        let types = self.rows(t::TYPE_DEF);
        let mut owner = vec![0u32; methods as usize];
        for r in 1..=types {
            let first = self.cell(t::TYPE_DEF, r, 5)?;
            let end = if r < types {
                self.cell(t::TYPE_DEF, r + 1, 5)?
            } else {
                methods + 1
            };
            for m in first.max(1)..end.min(methods + 1) {
                owner[m as usize - 1] = r;
            }
        }
        Ok(owner)
    }

    /// TypeDef names and MethodDef owners for naming `wanted` methods: the whole tables when
    /// many are wanted, else each looked up on its own.
    pub(crate) fn names_for(&self, wanted: usize) -> Result<Names, Error> {
        if wanted.saturating_mul(32) >= self.rows(t::METHOD_DEF) as usize {
            Ok(Names::Tables {
                types: self.type_names()?,
                owners: self.method_owners()?,
            })
        } else {
            Ok(Names::Lookup)
        }
    }

    /// The last row (1-based) of table `t` whose column `col` is at most `value`, by binary
    /// search (the column sorted, as ECMA-335 sorts NestedClass by its first column and
    /// lays out TypeDefs' method lists in order); 0 when none is.
    fn last_at_most(&self, t: usize, col: usize, value: u32) -> Result<u32, Error> {
        let (mut lo, mut hi) = (1u32, self.rows(t) + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cell(t, mid, col)? <= value {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo - 1)
    }

    /// One TypeDef's full name, as [`Metadata::type_names`] gives it, found on its own
    /// (binary searches, not the whole table: for naming a few methods of a big image).
    pub(crate) fn type_def_name(&self, row: u32) -> Result<String, Error> {
        let simple = |r: u32| -> Result<String, Error> {
            let name = self.string(self.cell(t::TYPE_DEF, r, 1)?)?;
            let ns = self.string(self.cell(t::TYPE_DEF, r, 2)?)?;
            Ok(if ns.is_empty() {
                name
            } else {
                format!("{ns}.{name}")
            })
        };
        let mut name = simple(row)?;
        let mut cur = row;
        // Nesting is shallow; a cycle in damaged metadata stops at the bound.
        for _ in 0..32 {
            let at = self.last_at_most(t::NESTED_CLASS, 0, cur)?;
            if at == 0 || self.cell(t::NESTED_CLASS, at, 0)? != cur {
                break;
            }
            let outer = self.cell(t::NESTED_CLASS, at, 1)?;
            if outer == 0 || outer > self.rows(t::TYPE_DEF) {
                break;
            }
            name = format!("{}+{name}", simple(outer)?);
            cur = outer;
        }
        Ok(name)
    }

    /// The owning TypeDef row of MethodDef `method`, as [`Metadata::method_owners`] gives
    /// it, found by a binary search; 0 where none owns it.
    pub(crate) fn method_owner(&self, method: u32) -> Result<u32, Error> {
        if method == 0 || method > self.rows(t::METHOD_DEF) {
            return Ok(0);
        }
        self.last_at_most(t::TYPE_DEF, 5, method)
    }

    /// A TypeRef's `Namespace.Name` (nested TypeRefs: `Outer+Inner`).
    pub(crate) fn type_ref_name(&self, row: u32) -> Result<String, Error> {
        let mut name = String::new();
        let mut cur = row;
        for _ in 0..32 {
            let n = self.string(self.cell(t::TYPE_REF, cur, 1)?)?;
            let ns = self.string(self.cell(t::TYPE_REF, cur, 2)?)?;
            let part = if ns.is_empty() {
                n
            } else {
                format!("{ns}.{n}")
            };
            name = if name.is_empty() {
                part
            } else {
                format!("{part}+{name}")
            };
            let scope = self.cell(t::TYPE_REF, cur, 0)?;
            let (tag, r) = Self::decode_coded(RESOLUTION_SCOPE.len(), scope);
            if RESOLUTION_SCOPE[tag] == t::TYPE_REF && r != 0 {
                cur = r;
            } else {
                break;
            }
        }
        Ok(name)
    }

    /// A MethodDef's name.
    pub(crate) fn method_name(&self, row: u32) -> Result<String, Error> {
        self.string(self.cell(t::METHOD_DEF, row, 3)?)
    }

    /// A MemberRef's name and its parent (coded MemberRefParent: table, row).
    pub(crate) fn member_ref(&self, row: u32) -> Result<(String, usize, u32), Error> {
        let parent = self.cell(t::MEMBER_REF, row, 0)?;
        let (tag, r) = Self::decode_coded(MEMBER_REF_PARENT.len(), parent);
        let table = MEMBER_REF_PARENT.get(tag).copied().unwrap_or(N);
        Ok((self.string(self.cell(t::MEMBER_REF, row, 1)?)?, table, r))
    }

    /// The custom attributes on the assembly (its Assembly row): each one's attribute type
    /// (`Namespace.Name`) and value blob.
    pub(crate) fn assembly_attributes(&self) -> Result<Vec<(String, &'a [u8])>, Error> {
        let assembly_tag = HAS_CUSTOM_ATTRIBUTE
            .iter()
            .position(|&x| x == t::ASSEMBLY)
            .unwrap_or(usize::MAX);
        let mut out = Vec::new();
        let mut owners: Option<Vec<u32>> = None;
        let mut types: Option<Vec<String>> = None;
        for r in 1..=self.rows(t::CUSTOM_ATTRIBUTE) {
            let (tag, _) = Self::decode_coded(
                HAS_CUSTOM_ATTRIBUTE.len(),
                self.cell(t::CUSTOM_ATTRIBUTE, r, 0)?,
            );
            if tag != assembly_tag {
                continue;
            }
            let (ctor_tag, ctor) = Self::decode_coded(
                CUSTOM_ATTRIBUTE_TYPE.len(),
                self.cell(t::CUSTOM_ATTRIBUTE, r, 1)?,
            );
            let type_def = |row: u32, types: &mut Option<Vec<String>>| -> Result<String, Error> {
                if types.is_none() {
                    *types = Some(self.type_names()?);
                }
                Ok(types
                    .as_ref()
                    .and_then(|t| t.get(row.checked_sub(1)? as usize))
                    .cloned()
                    .unwrap_or_default())
            };
            let name = match CUSTOM_ATTRIBUTE_TYPE.get(ctor_tag).copied().unwrap_or(N) {
                t::MEMBER_REF => match self.member_ref(ctor)? {
                    (_, t::TYPE_REF, row) => self.type_ref_name(row)?,
                    (_, t::TYPE_DEF, row) => type_def(row, &mut types)?,
                    _ => continue,
                },
                t::METHOD_DEF => {
                    if owners.is_none() {
                        owners = Some(self.method_owners()?);
                    }
                    let owner = owners
                        .as_ref()
                        .and_then(|o| o.get(ctor.checked_sub(1)? as usize))
                        .copied()
                        .unwrap_or(0);
                    type_def(owner, &mut types)?
                }
                _ => continue,
            };
            out.push((name, self.blob(self.cell(t::CUSTOM_ATTRIBUTE, r, 2)?)?));
        }
        Ok(out)
    }

    /// The Assembly row: its name and version (major, minor, build, revision); None for a
    /// module without one.
    pub(crate) fn assembly(&self) -> Result<Option<(String, [u16; 4])>, Error> {
        if self.rows(t::ASSEMBLY) == 0 {
            return Ok(None);
        }
        // The version is one 8-byte column (row 1): four u16 read by hand.
        let at = self
            .tables
            .get(t::ASSEMBLY)
            .and_then(|table| Some(table.offset + table.cols.get(1)?.0))
            .ok_or(Error::Malformed {
                what: "#~ stream",
                offset: 0,
                detail: "no Assembly table",
            })?;
        let mut v = [0u16; 4];
        for (i, part) in v.iter_mut().enumerate() {
            *part = self.tables_bytes.u16(at + 2 * i)?;
        }
        let name = self.string(self.cell(t::ASSEMBLY, 1, 4)?)?;
        Ok(Some((name, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coded_index_tags() {
        assert_eq!(bits_for(TYPE_DEF_OR_REF.len()), 2);
        assert_eq!(bits_for(HAS_CUSTOM_ATTRIBUTE.len()), 5);
        assert_eq!(bits_for(MEMBER_REF_PARENT.len()), 3);
        assert_eq!(bits_for(HAS_SEMANTICS.len()), 1);
        assert_eq!(Metadata::decode_coded(3, (7 << 2) | 1), (1, 7));
        assert!(Metadata::parse(b"BSJB").is_err());
        assert!(Metadata::parse(b"nope").is_err());
    }
}

/// TypeDef names and MethodDef owners ([`Metadata::names_for`]).
#[derive(Debug)]
pub(crate) enum Names {
    /// Every TypeDef's name and every MethodDef's owner (index 0 is row 1).
    Tables {
        /// [`Metadata::type_names`].
        types: Vec<String>,
        /// [`Metadata::method_owners`].
        owners: Vec<u32>,
    },
    /// Found per row ([`Metadata::type_def_name`], [`Metadata::method_owner`]).
    Lookup,
}

impl Names {
    /// TypeDef `row`'s full name.
    pub(crate) fn type_def(&self, md: &Metadata<'_>, row: u32) -> Option<String> {
        match self {
            Names::Tables { types, .. } => types.get(row.checked_sub(1)? as usize).cloned(),
            Names::Lookup => md.type_def_name(row).ok(),
        }
    }

    /// The TypeDef row owning MethodDef `method` (0: none).
    pub(crate) fn owner(&self, md: &Metadata<'_>, method: u32) -> Option<u32> {
        match self {
            Names::Tables { owners, .. } => owners.get(method.checked_sub(1)? as usize).copied(),
            Names::Lookup => md.method_owner(method).ok(),
        }
    }
}
