//! The GC heap dump's bulk events (keyword `GCHeapDump`, fired during an induced gen2 GC):
//! nodes (objects), edges (references), types, roots, static variables, and the surviving and
//! moved object ranges. Each view holds its header fields and a lazy iterator over its
//! `Values` that reads the elements straight from the payload ([`Elements`]): the count the
//! payload claims only bounds the iteration, nothing is allocated from it, and a damaged
//! element ends the iteration with one error.
//!
//! ```
//! use clr_events::heapdump::GcBulkEdge;
//! let mut p = Vec::new();
//! p.extend(0u32.to_le_bytes()); // Index
//! p.extend(2u32.to_le_bytes()); // Count
//! p.extend(0u16.to_le_bytes()); // ClrInstanceID
//! for (target, field) in [(0x1000u64, 1u32), (0x2000, 2)] {
//!     p.extend(target.to_le_bytes());
//!     p.extend(field.to_le_bytes());
//! }
//! let b = GcBulkEdge::parse(&p, 0, 8).unwrap();
//! let edges: Vec<_> = b.values.map(|e| e.unwrap().target).collect();
//! assert_eq!(edges, [0x1000, 0x2000]);
//! ```

use crate::runtime::{ids, GcRootKind};
use crate::view::{Cursor, Element, Elements, Ints, Utf16Str, ViewError};
use crate::KnownProvider;

fn rt<'a>(id: u32, version: u8, p: &'a [u8], ptr: u8) -> Result<Cursor<'a>, ViewError> {
    Cursor::for_event(KnownProvider::Runtime, id, version, p, ptr)
}

/// One object of `GC/BulkNode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkNode {
    /// The object's address.
    pub address: u64,
    /// Its size, bytes.
    pub size: u64,
    /// Its type id (see [`BulkType`]).
    pub type_id: u64,
    /// How many of the next `GC/BulkEdge` values are its references.
    pub edge_count: u64,
}

impl<'a> Element<'a> for BulkNode {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(BulkNode {
            address: c.u64("Address")?,
            size: c.u64("Size")?,
            type_id: c.u64("TypeID")?,
            edge_count: c.u64("EdgeCount")?,
        })
    }
}

/// One reference of `GC/BulkEdge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkEdge {
    /// The referenced object's address.
    pub target: u64,
    /// The referencing field's id.
    pub referencing_field_id: u32,
}

impl<'a> Element<'a> for BulkEdge {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(BulkEdge {
            target: c.u64("Value")?,
            referencing_field_id: c.u32("ReferencingFieldID")?,
        })
    }
}

/// One type of `Type/BulkType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkType<'a> {
    /// The type id nodes refer to.
    pub type_id: u64,
    /// The module's id.
    pub module_id: u64,
    /// The metadata token.
    pub type_name_id: u32,
    /// Flags.
    pub flags: u32,
    /// The element type (`CorElementType`).
    pub cor_element_type: u8,
    /// The name, e.g. `System.String`.
    pub name: Utf16Str<'a>,
    /// The type ids of its generic parameters.
    pub type_parameters: Ints<'a>,
}

impl<'a> Element<'a> for BulkType<'a> {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(BulkType {
            type_id: c.u64("TypeID")?,
            module_id: c.u64("ModuleID")?,
            type_name_id: c.u32("TypeNameID")?,
            flags: c.u32("Flags")?,
            cor_element_type: c.u64("CorElementType")? as u8,
            name: c.str("Name")?,
            type_parameters: c.ints("TypeParameters")?,
        })
    }
}

/// One root of `GC/BulkRootEdge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkRootEdge {
    /// The rooted object's address.
    pub object: u64,
    /// What roots it.
    pub kind: GcRootKind,
    /// Flags (pinning, weak, interior, ...).
    pub flags: u32,
    /// The root's id (a handle or stack slot address).
    pub root_id: u64,
}

impl<'a> Element<'a> for BulkRootEdge {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(BulkRootEdge {
            object: c.u64("RootedNodeAddress")?,
            kind: GcRootKind::from_u32(c.u32("GCRootKind")?),
            flags: c.u32("GCRootFlag")?,
            root_id: c.u64("GCRootID")?,
        })
    }
}

/// One static variable of `GC/BulkRootStaticVar`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkStaticVar<'a> {
    /// The root's id.
    pub root_id: u64,
    /// The referenced object.
    pub object: u64,
    /// The declaring type.
    pub type_id: u64,
    /// Flags.
    pub flags: u32,
    /// The field's name.
    pub field_name: Utf16Str<'a>,
}

impl<'a> Element<'a> for BulkStaticVar<'a> {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(BulkStaticVar {
            root_id: c.u64("GCRootID")?,
            object: c.u64("ObjectID")?,
            type_id: c.u64("TypeID")?,
            flags: c.u32("Flags")?,
            field_name: c.str("FieldName")?,
        })
    }
}

/// One range of `GC/BulkSurvivingObjectRanges`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurvivingRange {
    /// First address.
    pub base: u64,
    /// Length, bytes.
    pub length: u64,
}

impl<'a> Element<'a> for SurvivingRange {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(SurvivingRange {
            base: c.u64("RangeBase")?,
            length: c.u64("RangeLength")?,
        })
    }
}

/// One range of `GC/BulkMovedObjectRanges`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MovedRange {
    /// Where the objects were.
    pub old_base: u64,
    /// Where they are now.
    pub new_base: u64,
    /// Length, bytes.
    pub length: u64,
}

impl<'a> Element<'a> for MovedRange {
    fn read(c: &mut Cursor<'a>) -> Result<Self, ViewError> {
        Ok(MovedRange {
            old_base: c.u64("OldRangeBase")?,
            new_base: c.u64("NewRangeBase")?,
            length: c.u64("RangeLength")?,
        })
    }
}

/// Declares a bulk event view: `index` (where the event has one), `count` and `values`.
macro_rules! bulk {
    ($(#[$m:meta])* $name:ident, $id:expr, $elem:ty, index) => {
        $(#[$m])*
        #[derive(Clone, Debug)]
        pub struct $name<'a> {
            /// The event's sequence number within the dump.
            pub index: u32,
            /// Elements the payload claims (not trusted: [`Elements`] stops at the bytes).
            pub count: u32,
            /// The elements.
            pub values: Elements<'a, $elem>,
        }

        impl<'a> $name<'a> {
            /// Parses the header; the values are read as they are iterated.
            pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
                let mut c = rt($id, version, payload, pointer_size)?;
                let index = c.u32("Index")?;
                let count = c.u32("Count")?;
                let values = c.structs("Values")?;
                Ok($name { index, count, values })
            }
        }
    };
}

bulk!(
    /// `GC/BulkNode`: objects of the heap.
    GcBulkNode, ids::GC_BULK_NODE, BulkNode, index
);
bulk!(
    /// `GC/BulkEdge`: references of the objects of the `GC/BulkNode` events, in order.
    GcBulkEdge, ids::GC_BULK_EDGE, BulkEdge, index
);
bulk!(
    /// `GC/BulkRootEdge`: roots.
    GcBulkRootEdge, ids::GC_BULK_ROOT_EDGE, BulkRootEdge, index
);
bulk!(
    /// `GC/BulkSurvivingObjectRanges`: what survived a GC.
    GcBulkSurvivingObjectRanges, ids::GC_BULK_SURVIVING_OBJECT_RANGES, SurvivingRange, index
);
bulk!(
    /// `GC/BulkMovedObjectRanges`: what a compacting GC moved.
    GcBulkMovedObjectRanges, ids::GC_BULK_MOVED_OBJECT_RANGES, MovedRange, index
);

/// `Type/BulkType`: the types the nodes refer to.
#[derive(Clone, Debug)]
pub struct GcBulkType<'a> {
    /// Elements the payload claims.
    pub count: u32,
    /// The types.
    pub values: Elements<'a, BulkType<'a>>,
}

impl<'a> GcBulkType<'a> {
    /// Parses the header; the values are read as they are iterated.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_BULK_TYPE, version, payload, pointer_size)?;
        let count = c.u32("Count")?;
        let values = c.structs("Values")?;
        Ok(GcBulkType { count, values })
    }
}

/// `GC/BulkRootStaticVar`: static fields that root objects.
#[derive(Clone, Debug)]
pub struct GcBulkRootStaticVar<'a> {
    /// Elements the payload claims.
    pub count: u32,
    /// The app domain.
    pub app_domain_id: u64,
    /// The static variables.
    pub values: Elements<'a, BulkStaticVar<'a>>,
}

impl<'a> GcBulkRootStaticVar<'a> {
    /// Parses the header; the values are read as they are iterated.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::GC_BULK_ROOT_STATIC_VAR, version, payload, pointer_size)?;
        let count = c.u32("Count")?;
        let app_domain_id = c.u64("AppDomainID")?;
        let values = c.structs("Values")?;
        Ok(GcBulkRootStaticVar {
            count,
            app_domain_id,
            values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend([0, 0]);
        v
    }

    #[test]
    fn nodes_on_a_32_bit_process() {
        let mut p = Vec::new();
        p.extend(3u32.to_le_bytes());
        p.extend(2u32.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        for (a, s) in [(0x100u32, 24u64), (0x200, 32)] {
            p.extend(a.to_le_bytes());
            p.extend(s.to_le_bytes());
            p.extend(7u64.to_le_bytes());
            p.extend(1u64.to_le_bytes());
        }
        let b = GcBulkNode::parse(&p, 0, 4).unwrap();
        assert_eq!((b.index, b.count), (3, 2));
        let nodes: Vec<BulkNode> = b.values.map(Result::unwrap).collect();
        assert_eq!(nodes[1].address, 0x200);
        assert_eq!(nodes[1].size, 32);
    }

    #[test]
    fn a_huge_count_reads_what_is_there_then_one_error() {
        let mut p = Vec::new();
        p.extend(0u32.to_le_bytes());
        p.extend(u32::MAX.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        p.extend(0x10u64.to_le_bytes());
        p.extend(8u64.to_le_bytes());
        p.extend(0x20u64.to_le_bytes()); // half of a second range
        let b = GcBulkSurvivingObjectRanges::parse(&p, 0, 8).unwrap();
        assert!(b.values.size_hint().1.unwrap() < 100);
        let got: Vec<_> = b.values.collect();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            Ok(SurvivingRange {
                base: 0x10,
                length: 8
            })
        );
        let e = got[1].clone().unwrap_err();
        assert_eq!(e.event, "GC/BulkSurvivingObjectRanges");
        assert!(e.to_string().contains("RangeLength"), "{e}");
    }

    #[test]
    fn types_with_parameters_and_roots() {
        let mut p = Vec::new();
        p.extend(2u32.to_le_bytes());
        p.extend(0u16.to_le_bytes());
        for (id, name, params) in [(1u64, "List`1", 1u32), (2, "System.Int32", 0)] {
            p.extend(id.to_le_bytes());
            p.extend(9u64.to_le_bytes());
            p.extend(0x0200_0001u32.to_le_bytes());
            p.extend(0u32.to_le_bytes());
            p.push(18);
            p.extend(utf16z(name));
            p.extend(params.to_le_bytes());
            for k in 0..params {
                p.extend(u64::from(k + 2).to_le_bytes());
            }
        }
        let t = GcBulkType::parse(&p, 0, 8).unwrap();
        let types: Vec<BulkType> = t.values.map(Result::unwrap).collect();
        let names: Vec<String> = types.iter().map(|v| v.name.to_string()).collect();
        assert_eq!(names, ["List`1", "System.Int32"]);
        assert_eq!(types[0].type_parameters.iter().collect::<Vec<_>>(), [2]);
        assert!(types[1].type_parameters.is_empty());
        // A parameter count larger than the payload is an error, not an allocation.
        let mut huge = Vec::new();
        huge.extend(1u32.to_le_bytes());
        huge.extend(0u16.to_le_bytes());
        huge.extend([0u8; 25]);
        huge.extend(utf16z("T"));
        huge.extend(u32::MAX.to_le_bytes());
        huge.extend(5u64.to_le_bytes());
        let t = GcBulkType::parse(&huge, 0, 8).unwrap();
        let r: Vec<_> = t.values.collect();
        assert_eq!(r.len(), 1);
        let e = r[0].clone().unwrap_err();
        assert!(matches!(
            e.error,
            crate::DecodeError::CountTooLarge {
                field: "TypeParameters",
                ..
            }
        ));

        let mut r = Vec::new();
        r.extend(0u32.to_le_bytes());
        r.extend(1u32.to_le_bytes());
        r.extend(0u16.to_le_bytes());
        r.extend(0x500u64.to_le_bytes());
        r.push(2);
        r.extend(1u32.to_le_bytes());
        r.extend(0x77u64.to_le_bytes());
        let roots = GcBulkRootEdge::parse(&r, 0, 8).unwrap();
        let root = roots.values.clone().next().unwrap().unwrap();
        assert_eq!(
            (root.object, root.kind, root.root_id),
            (0x500, GcRootKind::Handle, 0x77)
        );

        let mut s = Vec::new();
        s.extend(1u32.to_le_bytes());
        s.extend(5u64.to_le_bytes());
        s.extend(0u16.to_le_bytes());
        for v in [1u64, 0x900, 3] {
            s.extend(v.to_le_bytes());
        }
        s.extend(0u32.to_le_bytes());
        s.extend(utf16z("s_cache"));
        let st = GcBulkRootStaticVar::parse(&s, 0, 8).unwrap();
        assert_eq!(st.app_domain_id, 5);
        let v: Vec<_> = st.values.collect();
        assert_eq!(v.len(), 1);
        assert!(v[0].as_ref().unwrap().field_name.eq_str("s_cache"));

        let mut m = Vec::new();
        m.extend(0u32.to_le_bytes());
        m.extend(1u32.to_le_bytes());
        m.extend(0u16.to_le_bytes());
        for v in [0x10u64, 0x20, 0x30] {
            m.extend(v.to_le_bytes());
        }
        let mv = GcBulkMovedObjectRanges::parse(&m, 0, 8).unwrap();
        let r: Vec<_> = mv.values.map(Result::unwrap).collect();
        assert_eq!(r[0].new_base, 0x20);
    }

    #[test]
    fn never_panics_on_bytes() {
        let mut seed = 0x1234_5678u32;
        for len in 0..200usize {
            let p: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    (seed >> 16) as u8
                })
                .collect();
            for ptr in [4, 8] {
                if let Ok(b) = GcBulkType::parse(&p, 0, ptr) {
                    b.values.take(1000).for_each(drop);
                }
                if let Ok(b) = GcBulkNode::parse(&p, 0, ptr) {
                    b.values.take(1000).for_each(drop);
                }
                if let Ok(b) = GcBulkRootStaticVar::parse(&p, 0, ptr) {
                    b.values.take(1000).for_each(drop);
                }
            }
        }
    }
}
