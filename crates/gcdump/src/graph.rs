//! The heap graph in compact arrays: per node a type index, a size and an address; the
//! references of all nodes in one array (`children`) cut by per-node offsets.

use crate::error::{Error, ErrorKind};

/// A node's index in [`Graph`] (nodes are numbered from 0 in file order).
pub type NodeIndex = u32;
/// A type's index in [`Graph::types`].
pub type TypeIndex = u32;

/// One type of the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// Its name, e.g. `System.String` or `[static vars]` for a root pseudo-type.
    pub name: String,
    /// The module (assembly file) that defines it; empty when unknown.
    pub module: String,
    /// The size of the first node of the type (the file's record; sizes are per node).
    pub size: i32,
}

/// The object graph of a heap snapshot.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    types: Vec<TypeInfo>,
    node_type: Vec<TypeIndex>,
    node_size: Vec<u32>,
    node_address: Vec<u64>,
    child_start: Vec<u64>,
    children: Vec<NodeIndex>,
    root: NodeIndex,
}

impl Graph {
    /// Number of nodes (objects and root pseudo-nodes).
    pub fn node_count(&self) -> usize {
        self.node_type.len()
    }
    /// Number of objects: the nodes with a size (root pseudo-nodes have none).
    pub fn object_count(&self) -> u64 {
        self.node_size.iter().filter(|&&s| s > 0).count() as u64
    }
    /// Number of references.
    pub fn edge_count(&self) -> usize {
        self.children.len()
    }
    /// The types.
    pub fn types(&self) -> &[TypeInfo] {
        &self.types
    }
    /// The name of type `t` (empty for an index out of range).
    pub fn type_name(&self, t: TypeIndex) -> &str {
        self.types.get(t as usize).map_or("", |t| t.name.as_str())
    }
    /// The node every root hangs from (`[.NET Roots]` or similar).
    pub fn root(&self) -> NodeIndex {
        self.root
    }
    /// The type of node `n`. Panics if `n` is out of range, like slice indexing.
    pub fn node_type(&self, n: NodeIndex) -> TypeIndex {
        self.node_type[n as usize]
    }
    /// The size of node `n`, bytes (0 for pseudo-nodes).
    pub fn node_size(&self, n: NodeIndex) -> u32 {
        self.node_size[n as usize]
    }
    /// The address of node `n` (0 for pseudo-nodes).
    pub fn node_address(&self, n: NodeIndex) -> u64 {
        self.node_address[n as usize]
    }
    /// The nodes `n` refers to.
    pub fn children(&self, n: NodeIndex) -> &[NodeIndex] {
        let s = self.child_start[n as usize] as usize;
        let e = self.child_start[n as usize + 1] as usize;
        &self.children[s..e]
    }
    /// Sum of all node sizes, bytes.
    pub fn total_size(&self) -> u64 {
        self.node_size.iter().map(|&s| u64::from(s)).sum()
    }
    /// All node types, by node (for whole-graph passes).
    pub fn node_types(&self) -> &[TypeIndex] {
        &self.node_type
    }
    /// All node sizes, by node.
    pub fn node_sizes(&self) -> &[u32] {
        &self.node_size
    }
    /// The references as one array with per-node offsets (`offsets.len() == nodes + 1`).
    pub fn adjacency(&self) -> (&[u64], &[NodeIndex]) {
        (&self.child_start, &self.children)
    }
}

/// Builds a [`Graph`]: add types, then nodes in index order; children may name nodes added
/// later. [`GraphBuilder::finish`] checks every reference.
#[derive(Debug)]
pub struct GraphBuilder {
    g: Graph,
    root_set: bool,
}

impl Default for GraphBuilder {
    fn default() -> Self {
        GraphBuilder::new()
    }
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> GraphBuilder {
        let g = Graph {
            child_start: vec![0],
            ..Graph::default()
        };
        GraphBuilder { g, root_set: false }
    }

    /// Room for about this many nodes and edges (a hint).
    pub fn reserve(&mut self, nodes: usize, edges: usize) {
        self.g.node_type.reserve(nodes);
        self.g.node_size.reserve(nodes);
        self.g.node_address.reserve(nodes);
        self.g.child_start.reserve(nodes);
        self.g.children.reserve(edges);
    }

    /// Adds a type; returns its index. Its recorded size is that of its first node.
    pub fn add_type(&mut self, name: &str, module: &str) -> TypeIndex {
        self.g.types.push(TypeInfo {
            name: name.to_string(),
            module: module.to_string(),
            size: -1,
        });
        (self.g.types.len() - 1) as TypeIndex
    }

    /// Number of types so far.
    pub fn type_count(&self) -> usize {
        self.g.types.len()
    }

    /// Number of nodes so far (the index the next node gets).
    pub fn node_count(&self) -> usize {
        self.g.node_type.len()
    }

    /// Adds a node; returns its index.
    pub fn add_node(
        &mut self,
        ty: TypeIndex,
        size: u32,
        address: u64,
        children: &[NodeIndex],
    ) -> NodeIndex {
        self.g.children.extend_from_slice(children);
        self.push(ty, size, address)
    }

    /// Adds a node whose children were pushed with [`GraphBuilder::push_child`] since the
    /// last node.
    pub fn end_node(&mut self, ty: TypeIndex, size: u32, address: u64) -> NodeIndex {
        self.push(ty, size, address)
    }

    /// Adds one child of the node [`GraphBuilder::end_node`] adds next.
    pub fn push_child(&mut self, child: NodeIndex) {
        self.g.children.push(child);
    }

    fn push(&mut self, ty: TypeIndex, size: u32, address: u64) -> NodeIndex {
        if let Some(t) = self.g.types.get_mut(ty as usize) {
            if t.size < 0 {
                t.size = i32::try_from(size).unwrap_or(i32::MAX);
            }
        }
        self.g.node_type.push(ty);
        self.g.node_size.push(size);
        self.g.node_address.push(address);
        self.g.child_start.push(self.g.children.len() as u64);
        (self.g.node_type.len() - 1) as NodeIndex
    }

    /// Names the node every root hangs from.
    pub fn set_root(&mut self, root: NodeIndex) {
        self.g.root = root;
        self.root_set = true;
    }

    /// The graph, after checking that every type and child index names something.
    pub fn finish(mut self) -> Result<Graph, Error> {
        let n = self.g.node_type.len();
        let invalid = |m: String| Error::at(0, ErrorKind::InvalidGraph(m));
        if n > i32::MAX as usize {
            return Err(invalid(format!("{n} nodes (the format holds < 2^31)")));
        }
        if !self.root_set && n > 0 {
            return Err(invalid("no root node was set".into()));
        }
        if n > 0 && self.g.root as usize >= n {
            return Err(invalid(format!("root {} of {n} nodes", self.g.root)));
        }
        if let Some(&c) = self.g.children.iter().find(|&&c| c as usize >= n) {
            return Err(invalid(format!("reference to node {c} of {n}")));
        }
        let types = self.g.types.len();
        if let Some(&t) = self.g.node_type.iter().find(|&&t| t as usize >= types) {
            return Err(invalid(format!("type {t} of {types}")));
        }
        for t in &mut self.g.types {
            t.size = t.size.max(0);
        }
        Ok(self.g)
    }

    /// Unchecked parts for the reader (it checks as it goes).
    pub(crate) fn from_parts(g: Graph) -> Graph {
        g
    }
}

/// The reader's way in: it fills the arrays directly.
pub(crate) struct RawGraph {
    pub(crate) types: Vec<TypeInfo>,
    pub(crate) node_type: Vec<TypeIndex>,
    pub(crate) node_size: Vec<u32>,
    pub(crate) node_address: Vec<u64>,
    pub(crate) child_start: Vec<u64>,
    pub(crate) children: Vec<NodeIndex>,
    pub(crate) root: NodeIndex,
}

impl From<RawGraph> for Graph {
    fn from(r: RawGraph) -> Graph {
        GraphBuilder::from_parts(Graph {
            types: r.types,
            node_type: r.node_type,
            node_size: r.node_size,
            node_address: r.node_address,
            child_start: r.child_start,
            children: r.children,
            root: r.root,
        })
    }
}
