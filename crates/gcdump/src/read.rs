//! Reading a `.gcdump`: the frame and object tags are checked as they come; the graph is
//! decoded into [`Graph`]'s arrays, each node's record from its offset in the blob, with
//! every count bounded by the bytes that are left.

use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::graph::RawGraph;
use crate::wire::{tag, Cursor, HEADER};
use crate::write::names;
use crate::{DumpInfo, Graph, HeapDump, TypeInfo};

/// Reads a `.gcdump` from its bytes.
///
/// ```
/// let e = gcdump::read(b"not a gcdump").unwrap_err();
/// assert!(e.to_string().contains("offset"));
/// ```
pub fn read(bytes: &[u8]) -> Result<HeapDump, Error> {
    let mut c = Cursor::new(bytes);
    let at = c.pos;
    let header = c.string("the header").map_err(|e| match e.kind {
        ErrorKind::Truncated { .. } | ErrorKind::BadValue { .. } => Error::at(
            at,
            ErrorKind::BadHeader {
                found: String::from_utf8_lossy(&bytes[..bytes.len().min(24)]).into_owned(),
            },
        ),
        _ => e,
    })?;
    if header.as_deref() != Some(HEADER) {
        return Err(Error::at(
            at,
            ErrorKind::BadHeader {
                found: header.unwrap_or_default(),
            },
        ));
    }
    let mut types = TypeTable::default();
    let (name, version) = types.begin_object(&mut c, "the GCHeapDump object")?;
    if name != names::HEAP_DUMP {
        return Err(c.err(ErrorKind::WrongType {
            found: name,
            expected: names::HEAP_DUMP,
        }));
    }
    if version < 9 {
        return Err(c.err(ErrorKind::Version {
            what: "GCHeapDump",
            version,
            supported: "9 and later",
        }));
    }
    let (name, _) = types.begin_object(&mut c, "the MemoryGraph object")?;
    if name != names::MEMORY_GRAPH {
        return Err(c.err(ErrorKind::WrongType {
            found: name,
            expected: names::MEMORY_GRAPH,
        }));
    }
    let (graph, is_64bit) = memory_graph(&mut c)?;
    let mut info = DumpInfo {
        is_64bit,
        ..DumpInfo::default()
    };
    // The graph is whole; what follows only describes it.
    if let Err(e) = rest(&mut c, &mut types, &mut info) {
        info.warnings.push(format!("after the graph: {e}"));
    }
    Ok(HeapDump { graph, info })
}

/// Reads the `.gcdump` at `path` (mapped, not copied, into memory).
pub fn open(path: &Path) -> Result<HeapDump, Error> {
    let f = std::fs::File::open(path).map_err(|e| Error::at(0, ErrorKind::Io(e)))?;
    // SAFETY: the map is only read while this function runs; a file changed underneath
    // gives wrong bytes, which the reader treats like any other damaged input.
    #[allow(unsafe_code)]
    let map = unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::at(0, ErrorKind::Io(e)))?;
    read(&map)
}

/// The types the stream defined, by the label (offset) of their definition.
#[derive(Default)]
struct TypeTable {
    by_label: Vec<(u32, String, i32)>,
}

impl TypeTable {
    /// An object's start: its tag and its type (defined here or referenced); returns the
    /// type's name and version.
    fn begin_object(
        &mut self,
        c: &mut Cursor<'_>,
        what: &'static str,
    ) -> Result<(String, i32), Error> {
        c.expect_tag(tag::BEGIN_OBJECT, "BeginObject", what)?;
        let at = c.pos;
        match c.u8(what)? {
            tag::BEGIN_OBJECT | tag::BEGIN_PRIVATE_OBJECT => {
                let t = c.u8("a type's type")?;
                match t {
                    tag::NULL_REFERENCE => {}
                    tag::OBJECT_REFERENCE => {
                        c.u32("a type's type")?;
                    }
                    found => {
                        return Err(Error::at(
                            c.pos - 1,
                            ErrorKind::UnexpectedTag {
                                found,
                                expected: "NullReference or ObjectReference",
                                what: "a type's type",
                            },
                        ))
                    }
                }
                let version = c.i32("a type's version")?;
                let _min_reader = c.i32("a type's minimum reader version")?;
                let name = c.string("a type's name")?.unwrap_or_default();
                c.expect_tag(tag::END_OBJECT, "EndObject", "a type")?;
                self.by_label.push((at as u32, name.clone(), version));
                Ok((name, version))
            }
            tag::OBJECT_REFERENCE => {
                let label = c.u32("a type reference")?;
                // Labels name the definition's first tag (or, by some writers, the next byte).
                self.by_label
                    .iter()
                    .find(|(l, _, _)| *l == label || l.wrapping_add(1) == label)
                    .map(|(_, n, v)| (n.clone(), *v))
                    .ok_or_else(|| c.err(ErrorKind::UnknownTypeLabel { label }))
            }
            found => Err(Error::at(
                at,
                ErrorKind::UnexpectedTag {
                    found,
                    expected: "BeginObject or ObjectReference",
                    what: "an object's type",
                },
            )),
        }
    }
}

fn memory_graph(c: &mut Cursor<'_>) -> Result<(Graph, bool), Error> {
    let _total = c.i64("the graph's total size")?;
    let root = c.i32("the root index")?;
    // A type is at least two string lengths and a size.
    let ntypes = c.count("the type count", 12)?;
    let mut types = Vec::with_capacity(ntypes);
    for _ in 0..ntypes {
        let name = c.string("a type's name")?.unwrap_or_default();
        let size = c.i32("a type's size")?;
        let module = c.string("a type's module")?.unwrap_or_default();
        types.push(TypeInfo { name, module, size });
    }
    let n = c.count("the node count", 4)?;
    let offsets = c.take(n * 4, "the node offsets")?;
    let blob_at = c.pos;
    let blob_len = c.count("the node records' length", 1)?;
    let blob = c.take(blob_len, "the node records")?;
    let blob_start = blob_at + 4;
    if root < 0 || (root as usize >= n && n > 0) {
        return Err(Error::at(
            blob_at,
            ErrorKind::BadValue {
                what: "the root index",
                value: root.into(),
                why: "names no node",
            },
        ));
    }
    let mut g = RawGraph {
        types,
        node_type: Vec::with_capacity(n),
        node_size: Vec::with_capacity(n),
        node_address: Vec::new(),
        child_start: Vec::with_capacity(n + 1),
        children: Vec::with_capacity(blob_len / 2),
        root: root as u32,
    };
    g.child_start.push(0);
    let mut undefined: Option<u32> = None;
    for i in 0..n {
        let o = &offsets[i * 4..i * 4 + 4];
        let off = i32::from_le_bytes([o[0], o[1], o[2], o[3]]);
        if off < 0 || off as usize >= blob.len() {
            // A node the collector named but never described.
            let t = *undefined.get_or_insert_with(|| {
                g.types.push(TypeInfo {
                    name: "[undefined]".into(),
                    module: String::new(),
                    size: 0,
                });
                (g.types.len() - 1) as u32
            });
            g.node_type.push(t);
            g.node_size.push(0);
            g.child_start.push(g.children.len() as u64);
            continue;
        }
        node(&mut g, blob, blob_start, off as usize, i as u32, n)?;
    }
    let addr_at = c.pos;
    let na = c.count("the address count", 8)?;
    if na != n {
        return Err(Error::at(
            addr_at,
            ErrorKind::BadValue {
                what: "the address count",
                value: na as i64,
                why: "differs from the node count",
            },
        ));
    }
    g.node_address.reserve_exact(n);
    for _ in 0..n {
        g.node_address.push(c.i64("a node's address")? as u64);
    }
    let mut is_64bit = true;
    if c.peek() == Some(tag::BYTE) {
        c.u8("Is64Bit")?;
        is_64bit = c.u8("Is64Bit")? != 0;
    }
    // Anything else the graph object holds (a deferred region) is skipped to its end.
    skip_to_end(c, "the MemoryGraph object")?;
    Ok((Graph::from(g), is_64bit))
}

fn node(
    g: &mut RawGraph,
    blob: &[u8],
    blob_start: usize,
    off: usize,
    i: u32,
    n: usize,
) -> Result<(), Error> {
    let mut b = Cursor::new(blob);
    b.pos = off;
    let rebase = |e: Error| Error {
        offset: e.offset + blob_start as u64,
        kind: e.kind,
    };
    let bad =
        |b: &Cursor<'_>, why| Error::at(blob_start + b.pos, ErrorKind::BadNode { node: i, why });
    let ti = b.compressed("a node's type").map_err(rebase)?;
    let t = (ti >> 1) as u32;
    let Some(ty) = g.types.get(t as usize) else {
        return Err(bad(&b, "its type index names no type"));
    };
    let size = if ti & 1 != 0 {
        let s = b.compressed("a node's size").map_err(rebase)?;
        if s < 0 {
            return Err(bad(&b, "its size is negative"));
        }
        s as u32
    } else {
        ty.size.max(0) as u32
    };
    let count = b.compressed("a node's child count").map_err(rebase)?;
    if count < 0 || count as usize > b.remaining() {
        return Err(bad(&b, "its child count is more than the records hold"));
    }
    for _ in 0..count {
        let d = b.compressed("a node's child").map_err(rebase)?;
        let c = i64::from(i) + i64::from(d);
        if c < 0 || c as usize >= n {
            return Err(bad(&b, "a child index names no node"));
        }
        g.children.push(c as u32);
    }
    g.node_type.push(t);
    g.node_size.push(size);
    g.child_start.push(g.children.len() as u64);
    Ok(())
}

/// Skips tagged values up to and past the current object's `EndObject`.
fn skip_to_end(c: &mut Cursor<'_>, what: &'static str) -> Result<(), Error> {
    loop {
        match c.u8(what)? {
            tag::END_OBJECT => return Ok(()),
            tag::BYTE => {
                c.u8(what)?;
            }
            tag::INT16 => {
                c.take(2, what)?;
            }
            tag::INT32 => {
                c.i32(what)?;
            }
            tag::INT64 => {
                c.i64(what)?;
            }
            tag::STRING => {
                c.string(what)?;
            }
            tag::NULL_REFERENCE => {}
            found => {
                return Err(Error::at(
                    c.pos - 1,
                    ErrorKind::UnexpectedTag {
                        found,
                        expected: "a tagged value or EndObject",
                        what,
                    },
                ))
            }
        }
    }
}

/// The fields after the graph.
fn rest(c: &mut Cursor<'_>, types: &mut TypeTable, info: &mut DumpInfo) -> Result<(), Error> {
    info.is_64bit = c.u8("Is64Bit")? != 0;
    info.count_multiplier = c.f32("AverageCountMultiplier")?;
    info.size_multiplier = c.f32("AverageSizeMultiplier")?;
    match c.peek() {
        Some(tag::NULL_REFERENCE) => {
            c.u8("JSHeapInfo")?;
        }
        _ => {
            return Err(c.err(ErrorKind::UnexpectedTag {
                found: c.peek().unwrap_or(0),
                expected: "NullReference",
                what: "JSHeapInfo",
            }))
        }
    }
    if c.peek() == Some(tag::NULL_REFERENCE) {
        c.u8("DotNetHeapInfo")?;
    } else {
        let (name, _) = types.begin_object(c, "DotNetHeapInfo")?;
        if name != names::DOTNET_HEAP_INFO {
            return Err(c.err(ErrorKind::WrongType {
                found: name,
                expected: names::DOTNET_HEAP_INFO,
            }));
        }
        c.i64("SizeOfAllSegments")?;
        let segs = c.count("the segment count", 10)?;
        for _ in 0..segs {
            let (name, _) = types.begin_object(c, "a GCHeapDumpSegment")?;
            if name != "GCHeapDumpSegment" {
                return Err(c.err(ErrorKind::WrongType {
                    found: name,
                    expected: "GCHeapDumpSegment",
                }));
            }
            skip_i64s_to_end(c)?;
        }
        c.expect_tag(tag::END_OBJECT, "EndObject", "DotNetHeapInfo")?;
    }
    info.collection_log = c.string("CollectionLog")?;
    info.time_collected_ticks = c.i64("TimeCollected")?;
    info.machine_name = c.string("MachineName")?;
    info.process_name = c.string("ProcessName")?;
    info.process_id = c.i32("ProcessID")?;
    info.total_process_commit = c.i64("TotalProcessCommit")?;
    info.total_process_working_set = c.i64("TotalProcessWorkingSet")?;
    let m = c.count("CountMultipliersByType", 4)?;
    c.take(m * 4, "CountMultipliersByType")?;
    // Tagged fields: InteropInfo (an object), CreationTool (a string), in that order.
    loop {
        match c.u8("the GCHeapDump's tagged fields")? {
            tag::END_OBJECT => return Ok(()),
            tag::NULL_REFERENCE => {}
            tag::SKIP_REGION => skip_region(c)?,
            tag::STRING => info.creation_tool = c.string("CreationTool")?,
            tag::BYTE => {
                c.u8("a tagged byte")?;
            }
            tag::INT32 => {
                c.i32("a tagged int")?;
            }
            tag::INT64 => {
                c.i64("a tagged long")?;
            }
            found => {
                return Err(Error::at(
                    c.pos - 1,
                    ErrorKind::UnexpectedTag {
                        found,
                        expected: "a tagged field this reader knows",
                        what: "the GCHeapDump's tagged fields",
                    },
                ))
            }
        }
    }
}

/// A skippable region (a tagged object such as InteropInfo): a null object, or one this
/// reader does not read, skipped to the region's end from the forward-reference table.
fn skip_region(c: &mut Cursor<'_>) -> Result<(), Error> {
    let index = c.i32("a skippable region's end")?;
    if c.peek() == Some(tag::NULL_REFERENCE) {
        c.u8("a skippable region")?;
        return Ok(());
    }
    let end = forward_label(c.bytes, index).ok_or_else(|| {
        c.err(ErrorKind::BadValue {
            what: "a skippable region's end",
            value: index.into(),
            why: "is not in the file's forward-reference table",
        })
    })?;
    if end < c.pos || end > c.bytes.len() {
        return Err(c.err(ErrorKind::BadValue {
            what: "a skippable region's end",
            value: end as i64,
            why: "is outside the file",
        }));
    }
    c.pos = end;
    Ok(())
}

/// Entry `index` of the forward-reference table, found from the file's last four bytes (the
/// trailer's label) and the trailer (the table's label).
fn forward_label(bytes: &[u8], index: i32) -> Option<usize> {
    let at = |p: usize| -> Option<u32> {
        let b = bytes.get(p..p.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let trailer = at(bytes.len().checked_sub(4)?)? as usize;
    let table = at(trailer)? as usize;
    let count = at(table)?;
    let index = u32::try_from(index).ok()?;
    if index >= count {
        return None;
    }
    at(table + 4 + 4 * index as usize).map(|l| l as usize)
}

/// A segment: start, end and the ends of generations 0 to 4.
fn skip_i64s_to_end(c: &mut Cursor<'_>) -> Result<(), Error> {
    for _ in 0..7 {
        c.i64("a segment's field")?;
    }
    c.expect_tag(tag::END_OBJECT, "EndObject", "a segment")
}
