//! The `.gcdump` heap snapshot file: the FastSerialization stream (`!FastSerialization.1`)
//! whose entry object is a `GCHeapDump`, holding a `Graphs.MemoryGraph` — every object of a
//! .NET heap as a node (type, size, address) with its references, plus pseudo-nodes for the
//! roots (`[.NET Roots]`, `[static vars]`, ...), as dotnet-gcdump, PerfView and Visual Studio
//! write it.
//!
//! This crate reads and writes that file and knows nothing of how a graph was collected.
//! [`Graph`] keeps the graph in compact arrays (about 24 bytes a node and 4 an edge);
//! [`GraphBuilder`] makes one; [`write()`] and [`read()`] turn it into bytes and back. The reader
//! never panics on input: a damaged file gives an [`Error`] naming the offset and what was
//! expected, and no allocation is sized by a count the file claims beyond what its bytes can
//! hold.
//!
//! ```
//! use gcdump::{DumpInfo, GraphBuilder, HeapDump};
//! let mut b = GraphBuilder::new();
//! let roots = b.add_type("[.NET Roots]", "");
//! let list = b.add_type("System.Collections.Generic.List<Order>", "System.Private.CoreLib");
//! let order = b.add_type("Order", "App");
//! // Nodes are numbered in the order they are added; children may point forward.
//! let root = b.add_node(roots, 0, 0, &[1]);
//! b.add_node(list, 32, 0x1000, &[2, 3]);
//! b.add_node(order, 24, 0x2000, &[]);
//! b.add_node(order, 24, 0x2018, &[]);
//! b.set_root(root);
//! let dump = HeapDump { graph: b.finish()?, info: DumpInfo::default() };
//! let bytes = gcdump::write_to_vec(&dump)?;
//! let back = gcdump::read(&bytes)?;
//! assert_eq!(back.graph.node_count(), 4);
//! assert_eq!(back.graph.children(1), &[2, 3]);
//! assert_eq!(back.graph.type_name(back.graph.node_type(2)), "Order");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod error;
mod graph;
mod read;
mod wire;
mod write;

#[cfg(test)]
mod tests;

pub use error::{Error, ErrorKind};
pub use graph::{Graph, GraphBuilder, NodeIndex, TypeIndex, TypeInfo};
pub use read::{open, read};
pub use write::{write, write_to_vec};

/// True when the file at `path` starts as a `.gcdump` does (`!FastSerialization` in its
/// first bytes), not as a trace.
pub fn is_gcdump(path: &std::path::Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = [0u8; 24];
    let n = std::fs::File::open(path)?.read(&mut head)?;
    Ok(head[..n].windows(18).any(|w| w == b"!FastSerialization"))
}

/// A heap snapshot: the graph and what the file says about where it came from.
#[derive(Clone, Debug)]
pub struct HeapDump {
    /// The objects, their references and the root pseudo-nodes.
    pub graph: Graph,
    /// The process, time and tool.
    pub info: DumpInfo,
}

/// What a `.gcdump` says besides the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct DumpInfo {
    /// True for a 64-bit process.
    pub is_64bit: bool,
    /// The sampling multiplier of counts (1 for a whole, unsampled heap).
    pub count_multiplier: f32,
    /// The sampling multiplier of sizes (1 for a whole heap).
    pub size_multiplier: f32,
    /// The collector's log text.
    pub collection_log: Option<String>,
    /// When it was collected, .NET ticks (100 ns since 0001-01-01).
    pub time_collected_ticks: i64,
    /// The machine's name.
    pub machine_name: Option<String>,
    /// The process's name.
    pub process_name: Option<String>,
    /// The process's id.
    pub process_id: i32,
    /// The process's committed memory, bytes (0 when unknown).
    pub total_process_commit: i64,
    /// The process's working set, bytes (0 when unknown).
    pub total_process_working_set: i64,
    /// The tool that wrote the file, e.g. `dotnet-gcdump` or `clrspy`.
    pub creation_tool: Option<String>,
    /// What the reader could not make sense of after the graph (the graph is whole; these
    /// fields kept their defaults). Empty for files it understood fully.
    pub warnings: Vec<String>,
}

impl Default for DumpInfo {
    fn default() -> Self {
        DumpInfo {
            is_64bit: true,
            count_multiplier: 1.0,
            size_multiplier: 1.0,
            collection_log: None,
            time_collected_ticks: 0,
            machine_name: None,
            process_name: None,
            process_id: 0,
            total_process_commit: 0,
            total_process_working_set: 0,
            creation_tool: None,
            warnings: Vec::new(),
        }
    }
}
