//! The ReadyToRun method signatures that key generic instantiations in
//! `InstanceMethodEntryPoints`: flags, an optional module override, an optional owner type
//! (an ECMA-335 type signature, II.23.2.12, with ReadyToRun's extra element types), the
//! method's token, then instantiation and constraint types. Types are skipped with a depth
//! bound; what names the method is kept.

use crate::metadata::{t, Metadata, Names};
use crate::reader::Bytes;
use crate::Error;

const UPDATE_CONTEXT: u32 = 0x80;
const OWNER_TYPE: u32 = 0x40;
const CONSTRAINED: u32 = 0x20;
const MEMBER_REF_TOKEN: u32 = 0x10;
const SLOT_INSTEAD_OF_TOKEN: u32 = 0x08;
const METHOD_INSTANTIATION: u32 = 0x04;

/// The deepest type nesting followed.
const MAX_DEPTH: u32 = 32;

/// What a method signature says about the method's identity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MethodSig {
    /// The token's module is another one (a module override): our metadata cannot name it.
    pub(crate) foreign: bool,
    /// MethodDef (false) or MemberRef (true) row; 0 for a slot.
    pub(crate) member_ref: bool,
    pub(crate) row: u32,
    /// The owner type's TypeDef or TypeRef (table, row), when it is of this module.
    pub(crate) owner: Option<(usize, u32)>,
}

/// Reads a method signature at `offset`: the signature and the offset after it.
pub(crate) fn method(b: Bytes<'_>, offset: usize) -> Result<(MethodSig, usize), Error> {
    let (flags, mut pos) = b.compressed(offset)?;
    let mut sig = MethodSig::default();
    if flags & UPDATE_CONTEXT != 0 {
        let (module, p) = b.compressed(pos)?;
        sig.foreign = module != 0;
        pos = p;
    }
    if flags & OWNER_TYPE != 0 {
        let mut owner = None;
        pos = skip_type(b, pos, 0, &mut owner)?;
        sig.owner = owner.flatten().filter(|_| !sig.foreign);
    }
    let (token, p) = b.compressed(pos)?;
    pos = p;
    if flags & SLOT_INSTEAD_OF_TOKEN == 0 {
        sig.row = token;
        sig.member_ref = flags & MEMBER_REF_TOKEN != 0;
    }
    if flags & METHOD_INSTANTIATION != 0 {
        let (n, p) = b.compressed(pos)?;
        pos = p;
        for _ in 0..n.min(256) {
            pos = skip_type(b, pos, 0, &mut None)?;
        }
    }
    if flags & CONSTRAINED != 0 {
        pos = skip_type(b, pos, 0, &mut None)?;
    }
    Ok((sig, pos))
}

fn bad(offset: usize, detail: &'static str) -> Error {
    Error::Malformed {
        what: "method signature",
        offset: offset as u64,
        detail,
    }
}

/// Skips one type signature; the first named type (TypeDef/TypeRef of this module) goes to
/// `named` when it is still empty.
fn skip_type(
    b: Bytes<'_>,
    offset: usize,
    depth: u32,
    named: &mut Option<Option<(usize, u32)>>,
) -> Result<usize, Error> {
    if depth > MAX_DEPTH {
        return Err(bad(offset, "type nested too deep"));
    }
    let et = b.u8(offset)?;
    let pos = offset + 1;
    Ok(match et {
        // Primitive types, TypedReference, IntPtr, UIntPtr, Object; __Canon.
        0x01..=0x0e | 0x16 | 0x18 | 0x19 | 0x1c | 0x3e => pos,
        // Pointer, byref, single-dimension array, pinned, native value type: one type follows.
        0x0f | 0x10 | 0x1d | 0x45 | 0x3d => skip_type(b, pos, depth + 1, named)?,
        // Value type, class: a TypeDefOrRef coded token.
        0x11 | 0x12 => {
            let (coded, p) = b.compressed(pos)?;
            if named.is_none() {
                let (tag, row) = Metadata::decode_coded(3, coded);
                *named = Some(match tag {
                    0 => Some((t::TYPE_DEF, row)),
                    1 => Some((t::TYPE_REF, row)),
                    _ => None,
                });
            }
            p
        }
        // Generic parameters: a number.
        0x13 | 0x1e => b.compressed(pos)?.1,
        // Multi-dimensional array: type, rank, sizes, lower bounds.
        0x14 => {
            let mut p = skip_type(b, pos, depth + 1, named)?;
            p = b.compressed(p)?.1; // rank
            let (sizes, q) = b.compressed(p)?;
            p = q;
            for _ in 0..sizes.min(64) {
                p = b.compressed(p)?.1;
            }
            let (bounds, q) = b.compressed(p)?;
            p = q;
            for _ in 0..bounds.min(64) {
                p = b.compressed(p)?.1;
            }
            p
        }
        // Generic instantiation: the generic type, a count, the arguments.
        0x15 => {
            let mut p = skip_type(b, pos, depth + 1, named)?;
            let (n, q) = b.compressed(p)?;
            p = q;
            for _ in 0..n.min(256) {
                p = skip_type(b, p, depth + 1, &mut Some(None))?;
            }
            p
        }
        // Custom modifiers: a token, then the type.
        0x1f | 0x20 => {
            let p = b.compressed(pos)?.1;
            skip_type(b, p, depth + 1, named)?
        }
        // A type of another module: its index, then the type (whose tokens we cannot name).
        0x3f => {
            let (module, p) = b.compressed(pos)?;
            if module != 0 && named.is_none() {
                *named = Some(None);
            }
            skip_type(b, p, depth + 1, named)?
        }
        _ => return Err(bad(offset, "unsupported element type")),
    })
}

/// The first TypeDef or TypeRef (table, row) a type signature at `offset` names (a generic
/// instantiation's generic type, an array's element type); None when it names none of this
/// module's.
pub(crate) fn first_named_type(b: Bytes<'_>, offset: usize) -> Result<Option<(usize, u32)>, Error> {
    let mut named = None;
    skip_type(b, offset, 0, &mut named)?;
    Ok(named.flatten())
}

/// The name of an instantiated method: `Namespace.Type.Method` (without type arguments),
/// None when the tokens are not this module's.
pub(crate) fn name(md: &Metadata<'_>, sig: &MethodSig, names: &Names) -> Option<String> {
    if sig.foreign || sig.row == 0 {
        return None;
    }
    let type_name = |table: usize, row: u32| -> Option<String> {
        match table {
            t::TYPE_DEF => names.type_def(md, row),
            t::TYPE_REF => md.type_ref_name(row).ok(),
            _ => None,
        }
    };
    if sig.member_ref {
        let (name, table, row) = md.member_ref(sig.row).ok()?;
        let ty = sig
            .owner
            .and_then(|(t, r)| type_name(t, r))
            .or_else(|| type_name(table, row))?;
        Some(format!("{ty}.{name}"))
    } else {
        let name = md.method_name(sig.row).ok()?;
        let owner = names.owner(md, sig.row)?;
        let ty = type_name(t::TYPE_DEF, owner)?;
        Some(format!("{ty}.{name}"))
    }
}
