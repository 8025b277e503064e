//! Event metadata: what a metadata row says about a kind of event (provider, id, name, version,
//! level, keywords, opcode and the payload's field layout), parsed from the V3-V5 encoding
//! (UTF-16 strings, optional V5 OpCode/V2Params tags) and the V6 encoding.

use crate::cursor::Cursor;
use crate::error::{BlockKind, Error, ErrorKind, InBlock, Result};
use crate::value::Guid;

/// Hard limit on nesting of object/array field types.
pub(crate) const MAX_TYPE_DEPTH: usize = 32;

/// The type of one payload field, as the metadata declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldType {
    /// A nested object: its fields, concatenated.
    Object(Vec<FieldDesc>),
    /// A 4-byte boolean (type code 3).
    Bool32,
    /// A UTF-16 code unit (4).
    Char16,
    /// Signed byte (5).
    I8,
    /// Byte (6).
    U8,
    /// Signed 16-bit (7).
    I16,
    /// Unsigned 16-bit (8).
    U16,
    /// Signed 32-bit (9).
    I32,
    /// Unsigned 32-bit (10).
    U32,
    /// Signed 64-bit (11).
    I64,
    /// Unsigned 64-bit (12).
    U64,
    /// 32-bit float (13).
    F32,
    /// 64-bit float (14).
    F64,
    /// 16-byte decimal (15); see FIELD-NOTES: runtimes have written it as an 8-byte double.
    Decimal,
    /// A date/time (16): 8 bytes, a Windows FILETIME.
    DateTime,
    /// A GUID (17).
    Guid,
    /// A NUL-terminated UTF-16 string (18).
    String16,
    /// An array prefixed by a `u16` element count (19).
    Array(Box<FieldType>),
    /// V6: a zig-zag variable-length signed integer (20).
    VarInt,
    /// V6: a variable-length unsigned integer (21).
    VarUInt,
    /// V6: an array of a fixed number of elements (22).
    FixedArray(Box<FieldType>, u16),
    /// V6: a UTF-8 code unit (23).
    Char8,
    /// V6: an array at a location relative to the end of this 4-byte field (24).
    RelLoc(Box<FieldType>),
    /// V6: an array at a location relative to the payload start (25).
    DataLoc(Box<FieldType>),
}

impl FieldType {
    /// The encoded size in bytes, when it does not depend on the payload.
    pub fn fixed_size(&self) -> Option<usize> {
        Some(match self {
            FieldType::Bool32 | FieldType::I32 | FieldType::U32 | FieldType::F32 => 4,
            FieldType::Char16 | FieldType::I16 | FieldType::U16 => 2,
            FieldType::I8 | FieldType::U8 | FieldType::Char8 => 1,
            FieldType::I64 | FieldType::U64 | FieldType::F64 | FieldType::DateTime => 8,
            FieldType::Decimal | FieldType::Guid => 16,
            FieldType::RelLoc(_) | FieldType::DataLoc(_) => 4,
            FieldType::FixedArray(t, n) => t.fixed_size()? * (*n as usize),
            FieldType::Object(fields) => {
                let mut sum = 0;
                for f in fields {
                    sum += f.ty.fixed_size()?;
                }
                sum
            }
            FieldType::String16 | FieldType::Array(_) | FieldType::VarInt | FieldType::VarUInt => {
                return None
            }
        })
    }
}

/// A named payload field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDesc {
    /// Field name.
    pub name: String,
    /// Field type.
    pub ty: FieldType,
}

/// What one metadata row says about a kind of event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventMetadata {
    /// The id events use to refer to this row.
    pub metadata_id: u32,
    /// Provider name, e.g. `Microsoft-Windows-DotNETRuntime`.
    pub provider: String,
    /// Event id within the provider.
    pub event_id: u32,
    /// Event name as written in the trace (often empty for the runtime's own events).
    pub event_name: String,
    /// Keywords of the event.
    pub keywords: u64,
    /// Event version.
    pub version: u8,
    /// Level (1 critical .. 5 verbose).
    pub level: u8,
    /// Opcode (0 when not given; V5 tag or V6 optional metadata).
    pub opcode: u8,
    /// Payload fields, when the metadata lists them. The runtime's own events list none: use
    /// built-in layouts for those (the `clr-events` crate).
    pub fields: Vec<FieldDesc>,
    /// Set when the field list could not be parsed (it is then empty); the rest of the row is kept.
    pub fields_error: Option<String>,
    /// True when V5 metadata tags (OpCode or V2Params) were present.
    pub has_v5_tags: bool,
    /// V6: message template.
    pub message_template: Option<String>,
    /// V6: description.
    pub description: Option<String>,
    /// V6: provider GUID.
    pub provider_guid: Option<Guid>,
    /// V6: extra key/value attributes.
    pub attributes: Vec<(String, String)>,
}

fn type_from_code(
    c: &mut Cursor<'_>,
    code: u32,
    depth: usize,
    v6: bool,
    read_nested: &mut dyn FnMut(&mut Cursor<'_>, usize) -> Result<FieldType>,
    read_fields: &mut dyn FnMut(&mut Cursor<'_>, usize) -> Result<Vec<FieldDesc>>,
) -> Result<FieldType> {
    let at = c.offset();
    Ok(match code {
        1 => FieldType::Object(read_fields(c, depth + 1)?),
        3 => FieldType::Bool32,
        4 => FieldType::Char16,
        5 => FieldType::I8,
        6 => FieldType::U8,
        7 => FieldType::I16,
        8 => FieldType::U16,
        9 => FieldType::I32,
        10 => FieldType::U32,
        11 => FieldType::I64,
        12 => FieldType::U64,
        13 => FieldType::F32,
        14 => FieldType::F64,
        15 => FieldType::Decimal,
        16 => FieldType::DateTime,
        17 => FieldType::Guid,
        18 => FieldType::String16,
        19 => FieldType::Array(Box::new(read_nested(c, depth + 1)?)),
        20 if v6 => FieldType::VarInt,
        21 if v6 => FieldType::VarUInt,
        22 if v6 => {
            let elem = read_nested(c, depth + 1)?;
            let n = c.u16()?;
            FieldType::FixedArray(Box::new(elem), n)
        }
        23 if v6 => FieldType::Char8,
        24 | 25 if v6 => {
            let elem = read_nested(c, depth + 1)?;
            if elem.fixed_size().is_none() {
                return Err(Error::at(
                    at,
                    BlockKind::Metadata,
                    ErrorKind::InvalidValue {
                        what: "RelLoc/DataLoc field type code",
                        found: code.into(),
                        expected: "a fixed-size element type",
                    },
                ));
            }
            if code == 24 {
                FieldType::RelLoc(Box::new(elem))
            } else {
                FieldType::DataLoc(Box::new(elem))
            }
        }
        other => {
            return Err(Error::at(
                at,
                BlockKind::Metadata,
                ErrorKind::UnknownCode {
                    what: "field type code",
                    found: other.into(),
                },
            ))
        }
    })
}

fn depth_check(depth: usize, at: u64) -> Result<()> {
    if depth > MAX_TYPE_DEPTH {
        return Err(Error::new(
            at,
            Some(BlockKind::Metadata),
            ErrorKind::LimitExceeded {
                what: "field type nesting depth",
                value: depth as u64,
                limit: MAX_TYPE_DEPTH as u64,
            },
        ));
    }
    Ok(())
}

fn count_check(count: u64, remaining: usize, min_each: usize, at: u64) -> Result<()> {
    if count.saturating_mul(min_each as u64) > remaining as u64 {
        return Err(Error::at(
            at,
            BlockKind::Metadata,
            ErrorKind::CountTooLarge {
                what: "fields",
                count,
                room: remaining as u64,
            },
        ));
    }
    Ok(())
}

// ---- V3-V5 ---------------------------------------------------------------------------------

/// V1 type (int32 code); objects nest V1 field lists.
fn v1_type(c: &mut Cursor<'_>, depth: usize) -> Result<FieldType> {
    depth_check(depth, c.offset())?;
    let code = c.u32()?;
    type_from_code(c, code, depth, false, &mut v1_type, &mut v1_fields)
}

fn v1_fields(c: &mut Cursor<'_>, depth: usize) -> Result<Vec<FieldDesc>> {
    depth_check(depth, c.offset())?;
    let at = c.offset();
    let count = c.u32()?;
    count_check(count.into(), c.remaining(), 6, at)?;
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let ty = v1_type(c, depth)?;
        let name = c.utf16z()?;
        out.push(FieldDesc { name, ty });
    }
    Ok(out)
}

/// V2 type (int32 code; arrays carry an element type; objects nest V2 field lists).
fn v2_type(c: &mut Cursor<'_>, depth: usize) -> Result<FieldType> {
    depth_check(depth, c.offset())?;
    let code = c.u32()?;
    type_from_code(c, code, depth, false, &mut v2_type, &mut v2_fields)
}

fn v2_fields(c: &mut Cursor<'_>, depth: usize) -> Result<Vec<FieldDesc>> {
    depth_check(depth, c.offset())?;
    let at = c.offset();
    let count = c.u32()?;
    count_check(count.into(), c.remaining(), 10, at)?;
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at = c.offset();
        let size = c.u32()? as usize;
        if size < 4 {
            return Err(Error::at(
                at,
                BlockKind::Metadata,
                ErrorKind::SizeOutOfRange {
                    what: "V2 field size",
                    found: size as u64,
                    min: 4,
                    max: u32::MAX.into(),
                },
            ));
        }
        let body = c.bytes(size - 4)?;
        let mut fc = Cursor::new(body, at + 4);
        let name = fc.utf16z()?;
        let ty = v2_type(&mut fc, depth)?;
        out.push(FieldDesc { name, ty });
    }
    Ok(out)
}

/// Parses a V3-V5 metadata payload (the payload of a metadata "event").
pub(crate) fn parse_v5(payload: &[u8], offset: u64) -> Result<EventMetadata> {
    let b = BlockKind::Metadata;
    let mut c = Cursor::new(payload, offset);
    let mut m = EventMetadata {
        metadata_id: c.u32().in_block(b)?,
        provider: c.utf16z().in_block(b)?,
        event_id: c.u32().in_block(b)?,
        event_name: c.utf16z().in_block(b)?,
        keywords: c.u64().in_block(b)?,
        version: c.u32().in_block(b)? as u8,
        level: c.u32().in_block(b)? as u8,
        ..EventMetadata::default()
    };
    if c.is_empty() {
        return Ok(m);
    }
    match v1_fields(&mut c, 0) {
        Ok(f) => m.fields = f,
        Err(e) => {
            // Like TraceEvent: unparsable field metadata drops the fields, not the event.
            m.fields_error = Some(e.to_string());
            return Ok(m);
        }
    }
    while !c.is_empty() {
        let tag_len = c.u32().in_block(b)? as usize;
        let tag = c.u8().in_block(b)?;
        let tag_at = c.offset();
        let body = c.bytes(tag_len).in_block(b)?;
        let mut tc = Cursor::new(body, tag_at);
        m.has_v5_tags = true;
        match tag {
            1 => m.opcode = tc.u8().in_block(b)?,
            2 => match v2_fields(&mut tc, 0) {
                Ok(f) => m.fields = f,
                Err(e) => {
                    m.fields.clear();
                    m.fields_error = Some(e.to_string());
                }
            },
            _ => {} // unknown tags are skipped
        }
    }
    Ok(m)
}

// ---- V6 --------------------------------------------------------------------------------------

fn v6_type(c: &mut Cursor<'_>, depth: usize) -> Result<FieldType> {
    depth_check(depth, c.offset())?;
    let code = c.u8()?;
    type_from_code(c, code.into(), depth, true, &mut v6_type, &mut v6_fields)
}

fn v6_fields(c: &mut Cursor<'_>, depth: usize) -> Result<Vec<FieldDesc>> {
    depth_check(depth, c.offset())?;
    let at = c.offset();
    let count = c.u16()?;
    count_check(count.into(), c.remaining(), 4, at)?;
    let mut out = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let at = c.offset();
        let size = c.u16()? as usize;
        let body = c.bytes(size)?;
        let mut fc = Cursor::new(body, at + 2);
        let name = fc.utf8_varlen()?;
        let ty = v6_type(&mut fc, depth)?;
        out.push(FieldDesc { name, ty });
    }
    Ok(out)
}

/// Parses one V6 metadata row (the bytes after its `u16` size).
pub(crate) fn parse_v6_row(row: &[u8], offset: u64) -> Result<EventMetadata> {
    let b = BlockKind::Metadata;
    let mut c = Cursor::new(row, offset);
    let mut m = EventMetadata {
        metadata_id: c.varu32().in_block(b)?,
        provider: c.utf8_varlen().in_block(b)?,
        event_id: c.varu32().in_block(b)?,
        event_name: c.utf8_varlen().in_block(b)?,
        ..EventMetadata::default()
    };
    m.fields = v6_fields(&mut c, 0).in_block(b)?;
    let size = c.u16().in_block(b)? as usize;
    let at = c.offset();
    let body = c.bytes(size).in_block(b)?;
    let mut oc = Cursor::new(body, at);
    while !oc.is_empty() {
        let at = oc.offset();
        match oc.u8().in_block(b)? {
            1 => m.opcode = oc.u8().in_block(b)?,
            3 => m.keywords = oc.u64().in_block(b)?,
            4 => m.message_template = Some(oc.utf8_varlen().in_block(b)?),
            5 => m.description = Some(oc.utf8_varlen().in_block(b)?),
            6 => {
                let k = oc.utf8_varlen().in_block(b)?;
                let v = oc.utf8_varlen().in_block(b)?;
                m.attributes.push((k, v));
            }
            7 => m.provider_guid = Some(oc.guid().in_block(b)?),
            8 => m.level = oc.u8().in_block(b)?,
            9 => m.version = oc.u8().in_block(b)?,
            k => {
                return Err(Error::at(
                    at,
                    b,
                    ErrorKind::UnknownCode {
                        what: "optional metadata kind",
                        found: k.into(),
                    },
                ))
            }
        }
    }
    Ok(m)
}
