//! Writing a [`HeapDump`] as a `.gcdump`: the FastSerialization frame, the `GCHeapDump`
//! entry object, its `Graphs.MemoryGraph` (types, per-node blob offsets, the blob of node
//! records, addresses) and the fields that follow.

use std::io::Write;

use crate::error::{Error, ErrorKind};
use crate::wire::{put_compressed, tag, Out, HEADER};
use crate::{Graph, HeapDump};

/// Type names and versions the readers of the format check.
pub(crate) mod names {
    pub(crate) const HEAP_DUMP: &str = "GCHeapDump";
    pub(crate) const HEAP_DUMP_VERSION: i32 = 10;
    pub(crate) const HEAP_DUMP_MIN_READER: i32 = 8;
    pub(crate) const MEMORY_GRAPH: &str = "Graphs.MemoryGraph";
    pub(crate) const MEMORY_GRAPH_VERSION: i32 = 1;
    pub(crate) const DOTNET_HEAP_INFO: &str = "DotNetHeapInfo";
}

/// Writes `dump` to `w` as a `.gcdump`.
///
/// ```
/// let mut b = gcdump::GraphBuilder::new();
/// let t = b.add_type("[root]", "");
/// let r = b.add_node(t, 0, 0, &[]);
/// b.set_root(r);
/// let dump = gcdump::HeapDump { graph: b.finish()?, info: Default::default() };
/// let mut file = Vec::new();
/// gcdump::write(&mut file, &dump)?;
/// assert!(file.len() > 20);
/// # Ok::<(), gcdump::Error>(())
/// ```
pub fn write<W: Write>(mut w: W, dump: &HeapDump) -> Result<(), Error> {
    let bytes = write_to_vec(dump)?;
    w.write_all(&bytes)
        .map_err(|e| Error::at(0, ErrorKind::Io(e)))?;
    w.flush().map_err(|e| Error::at(0, ErrorKind::Io(e)))
}

/// The `.gcdump` bytes of `dump`.
pub fn write_to_vec(dump: &HeapDump) -> Result<Vec<u8>, Error> {
    let mut o = Out::default();
    o.string(Some(HEADER));
    begin_object(
        &mut o,
        names::HEAP_DUMP,
        names::HEAP_DUMP_VERSION,
        names::HEAP_DUMP_MIN_READER,
    );
    begin_object(&mut o, names::MEMORY_GRAPH, names::MEMORY_GRAPH_VERSION, 0);
    graph(&mut o, &dump.graph)?;
    o.u8(tag::END_OBJECT);
    let i = &dump.info;
    o.u8(u8::from(i.is_64bit));
    o.f32(i.count_multiplier);
    o.f32(i.size_multiplier);
    o.u8(tag::NULL_REFERENCE); // JSHeapInfo
    begin_object(&mut o, names::DOTNET_HEAP_INFO, 0, 0);
    o.i64(0); // SizeOfAllSegments
    o.i32(0); // segments
    o.u8(tag::END_OBJECT);
    o.string(i.collection_log.as_deref());
    o.i64(i.time_collected_ticks);
    o.string(i.machine_name.as_deref());
    o.string(i.process_name.as_deref());
    o.i32(i.process_id);
    o.i64(i.total_process_commit);
    o.i64(i.total_process_working_set);
    o.i32(0); // CountMultipliersByType: none (unsampled)
              // Tagged InteropInfo (none): a skippable region whose end is forward reference 0.
    o.u8(tag::SKIP_REGION);
    o.i32(0);
    o.u8(tag::NULL_REFERENCE);
    let interop_end = o.pos();
    if let Some(tool) = &i.creation_tool {
        o.u8(tag::STRING);
        o.string(Some(tool));
    }
    o.u8(tag::END_OBJECT); // GCHeapDump
                           // The trailer: an unbalanced end, the forward-reference table (the InteropInfo region's
                           // end), the trailer (the table's label), and the trailer's label last.
    o.u8(tag::END_OBJECT);
    let table = o.pos();
    o.i32(1);
    o.i32(interop_end as i32);
    let trailer = o.pos();
    o.i32(table as i32);
    o.i32(trailer as i32);
    Ok(o.buf)
}

fn begin_object(o: &mut Out, name: &str, version: i32, min_reader: i32) {
    o.u8(tag::BEGIN_OBJECT);
    o.u8(tag::BEGIN_OBJECT);
    o.u8(tag::NULL_REFERENCE); // a type's own type
    o.i32(version);
    o.i32(min_reader);
    o.string(Some(name));
    o.u8(tag::END_OBJECT);
}

fn graph(o: &mut Out, g: &Graph) -> Result<(), Error> {
    let n = g.node_count();
    if n > i32::MAX as usize {
        return Err(Error::at(
            0,
            ErrorKind::InvalidGraph(format!("{n} nodes (the format holds < 2^31)")),
        ));
    }
    if g.types().len() >= 1 << 30 {
        return Err(Error::at(
            0,
            ErrorKind::InvalidGraph(format!(
                "{} types (the format holds < 2^30)",
                g.types().len()
            )),
        ));
    }
    o.i64(g.total_size() as i64);
    o.i32(g.root() as i32);
    o.i32(g.types().len() as i32);
    for t in g.types() {
        o.string(Some(&t.name));
        o.i32(t.size);
        o.string(Some(&t.module));
    }
    // Node records, then each node's offset into them.
    let mut blob = Vec::with_capacity(n * 4 + g.edge_count() * 2);
    let mut offsets = Vec::with_capacity(n);
    for i in 0..n as u32 {
        let t = g.node_type(i);
        let size = g.node_size(i);
        let first = g.types().get(t as usize).map_or(-1, |t| i64::from(t.size));
        let differs = i64::from(size) != first;
        if blob.len() > i32::MAX as usize {
            return Err(Error::at(
                0,
                ErrorKind::InvalidGraph("the node records exceed 2 GB".into()),
            ));
        }
        offsets.push(blob.len() as i32);
        put_compressed(&mut blob, ((t as i32) << 1) | i32::from(differs));
        if differs {
            put_compressed(&mut blob, size.min(i32::MAX as u32) as i32);
        }
        let ch = g.children(i);
        put_compressed(&mut blob, ch.len() as i32);
        for &c in ch {
            put_compressed(&mut blob, (i64::from(c) - i64::from(i)) as i32);
        }
    }
    o.i32(n as i32);
    for off in offsets {
        o.i32(off);
    }
    o.i32(blob.len() as i32);
    o.buf.extend_from_slice(&blob);
    drop(blob);
    o.i32(n as i32);
    for i in 0..n as u32 {
        o.i64(g.node_address(i) as i64);
    }
    // Tagged Is64Bit.
    o.u8(tag::BYTE);
    o.u8(1);
    Ok(())
}
