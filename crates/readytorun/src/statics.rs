//! The static fields an assembly declares (ECMA-335 II.22.15 Field, II.22.37 TypeDef's
//! FieldList): each with its declaring type and the type its signature names. A heap
//! snapshot's static roots carry the field's name and the type of the object it holds, not
//! the class that declares it; these let a reader name the class.

use crate::metadata::{t, Metadata};
use crate::reader::Bytes;
use crate::{layout, sig, Error, Rvas};

/// Field flags (II.23.1.5): static, and literal (a constant: no storage, no root).
const STATIC: u32 = 0x0010;
const LITERAL: u32 = 0x0040;

/// One static field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticField {
    /// The declaring type: `Namespace.Type`, nested types as `Outer+Inner`.
    pub declaring_type: String,
    /// The field's name.
    pub name: String,
    /// The type its signature names (a generic type without its arguments, as
    /// `System.Collections.Generic.List`1`; an array's element type), when it is a class or
    /// value type of the metadata (None for primitives, generic parameters, other modules').
    pub type_name: Option<String>,
}

/// The static fields (constants left out) of the managed image `data`, in metadata order.
///
/// ```no_run
/// let bytes = std::fs::read("MyApp.dll")?;
/// for f in readytorun::static_fields(&bytes)? {
///     println!("{}.{}", f.declaring_type, f.name);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn static_fields(data: &[u8]) -> Result<Vec<StaticField>, Error> {
    let l = layout(data)?;
    let rvas = Rvas {
        data,
        sections: &l.sections,
    };
    let md = Metadata::parse(rvas.slice(l.metadata.0, l.metadata.1)?)?;
    let (types, fields) = (md.rows(t::TYPE_DEF), md.rows(t::FIELD));
    let mut out = Vec::new();
    let mut next_start = if types > 0 {
        md.cell(t::TYPE_DEF, 1, 4)?
    } else {
        0
    };
    for row in 1..=types {
        let start = next_start;
        next_start = if row < types {
            md.cell(t::TYPE_DEF, row + 1, 4)?
        } else {
            fields + 1
        };
        // Damaged lists (out of order, past the table) are cut to what exists.
        let end = next_start.min(fields + 1);
        let mut declaring: Option<String> = None;
        for f in start.max(1)..end {
            let flags = md.cell(t::FIELD, f, 0)?;
            if flags & STATIC == 0 || flags & LITERAL != 0 {
                continue;
            }
            let name = md.string(md.cell(t::FIELD, f, 1)?)?;
            let type_name = field_type(&md, md.cell(t::FIELD, f, 2)?);
            let declaring_type = match &declaring {
                Some(d) => d.clone(),
                None => declaring.insert(md.type_def_name(row)?).clone(),
            };
            out.push(StaticField {
                declaring_type,
                name,
                type_name,
            });
        }
    }
    Ok(out)
}

/// The class or value type a field signature (II.23.2.4: 0x06, custom modifiers, the type)
/// names first; None for anything else or a blob that does not read.
fn field_type(md: &Metadata<'_>, blob: u32) -> Option<String> {
    let blob = md.blob(blob).ok()?;
    let b = Bytes::new(blob, "field signature");
    if b.u8(0).ok()? != 0x06 {
        return None;
    }
    let (table, row) = sig::first_named_type(b, 1).ok()??;
    match table {
        t::TYPE_DEF => md.type_def_name(row).ok(),
        t::TYPE_REF => md.type_ref_name(row).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary's own build folder holds no .NET assembly; the runtime's does.
    fn corelib() -> Option<Vec<u8>> {
        let out = std::process::Command::new("dotnet")
            .arg("--list-runtimes")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rfind(|l| l.starts_with("Microsoft.NETCore.App "))?;
        let version = line.split_whitespace().nth(1)?;
        let dir = line.split('[').nth(1)?.trim_end_matches(']');
        std::fs::read(format!("{dir}/{version}/System.Private.CoreLib.dll")).ok()
    }

    #[test]
    fn corelibs_statics_name_their_class_and_type() {
        let Some(bytes) = corelib() else {
            eprintln!("no .NET runtime here: skipped");
            return;
        };
        let fields = static_fields(&bytes).unwrap();
        assert!(fields.len() > 1000, "{}", fields.len());
        // `String.Empty` is a static readonly string, declared on System.String.
        let empty = fields
            .iter()
            .find(|f| f.declaring_type == "System.String" && f.name == "Empty")
            .unwrap();
        assert_eq!(empty.type_name, None, "a primitive (ELEMENT_TYPE_STRING)");
        // Constants are no statics with storage.
        assert!(!fields
            .iter()
            .any(|f| f.declaring_type == "System.Int32" && f.name == "MaxValue"));
        // A class-typed static names its class.
        assert!(fields
            .iter()
            .any(|f| f.type_name.as_deref() == Some("System.Text.Encoding")));
    }

    #[test]
    fn damaged_images_are_errors_not_panics() {
        assert!(static_fields(b"MZ").is_err());
        assert!(static_fields(&[0u8; 4096]).is_err());
    }
}
