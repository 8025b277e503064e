//! Decoded payload values: the typed result of reading an event's payload, either from the
//! trace's own metadata (self-describing EventSource/TraceLogging events) or from a built-in
//! layout (the `clr-events` crate).

use std::borrow::Cow;
use std::fmt;

/// A 16-byte GUID as stored in traces (`Data1` little-endian `u32`, `Data2`/`Data3` `u16`, 8 bytes).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guid(pub [u8; 16]);

impl Guid {
    /// The all-zero GUID.
    pub const ZERO: Guid = Guid([0; 16]);

    /// Builds a GUID from its 16 bytes in trace (little-endian `Data1..3`) order.
    pub fn from_bytes(b: [u8; 16]) -> Guid {
        Guid(b)
    }

    /// True when all bytes are zero.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        let d1 = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let d2 = u16::from_le_bytes([b[4], b[5]]);
        let d3 = u16::from_le_bytes([b[6], b[7]]);
        write!(
            f,
            "{d1:08x}-{d2:04x}-{d3:04x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
            b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A calendar time as the runtime writes it (a Windows `SYSTEMTIME`: eight 16-bit parts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemTime {
    /// Year, e.g. 2026.
    pub year: u16,
    /// Month, 1-12.
    pub month: u16,
    /// Day of week, 0 = Sunday.
    pub day_of_week: u16,
    /// Day of month, 1-31.
    pub day: u16,
    /// Hour, 0-23.
    pub hour: u16,
    /// Minute, 0-59.
    pub minute: u16,
    /// Second, 0-59.
    pub second: u16,
    /// Millisecond, 0-999.
    pub millisecond: u16,
}

impl fmt::Display for SystemTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second, self.millisecond
        )
    }
}

/// One decoded payload value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// Signed 8-bit integer.
    I8(i8),
    /// Unsigned 8-bit integer.
    U8(u8),
    /// Signed 16-bit integer.
    I16(i16),
    /// Unsigned 16-bit integer.
    U16(u16),
    /// Signed 32-bit integer.
    I32(i32),
    /// Unsigned 32-bit integer.
    U32(u32),
    /// Signed 64-bit integer.
    I64(i64),
    /// Unsigned 64-bit integer.
    U64(u64),
    /// A pointer-sized value (address or handle), already widened to 64 bits.
    Pointer(u64),
    /// 32-bit float.
    F32(f32),
    /// 64-bit float.
    F64(f64),
    /// A single character (UTF-16 or UTF-8 code unit, decoded where valid).
    Char(char),
    /// A GUID.
    Guid(Guid),
    /// A calendar time.
    DateTime(SystemTime),
    /// A string (invalid UTF-16/UTF-8 sequences replaced).
    String(String),
    /// Raw bytes (byte arrays).
    Bytes(Vec<u8>),
    /// An array of values.
    Array(Vec<Value>),
    /// A nested object: named fields in order.
    Object(Vec<Field>),
}

/// A named payload value.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The field name from the metadata or built-in layout (built-in names are borrowed, so
    /// decoding the runtime's events allocates no names).
    pub name: Cow<'static, str>,
    /// The decoded value.
    pub value: Value,
}

impl Field {
    /// Builds a field.
    pub fn new(name: impl Into<Cow<'static, str>>, value: Value) -> Field {
        Field {
            name: name.into(),
            value,
        }
    }
}

impl Value {
    /// The value as an unsigned integer, when it is an integer (or bool/pointer) that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Bool(b) => Some(b as u64),
            Value::U8(v) => Some(v as u64),
            Value::U16(v) => Some(v as u64),
            Value::U32(v) => Some(v as u64),
            Value::U64(v) | Value::Pointer(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a signed integer, when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v as i64),
            Value::I16(v) => Some(v as i64),
            Value::I32(v) => Some(v as i64),
            Value::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// The value as a float, for any numeric value.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => self
                .as_i64()
                .map(|v| v as f64)
                .or(self.as_u64().map(|v| v as f64)),
        }
    }

    /// The value as a string slice, when it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(v) => write!(f, "{v}"),
            Value::I8(v) => write!(f, "{v}"),
            Value::U8(v) => write!(f, "{v}"),
            Value::I16(v) => write!(f, "{v}"),
            Value::U16(v) => write!(f, "{v}"),
            Value::I32(v) => write!(f, "{v}"),
            Value::U32(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::U64(v) => write!(f, "{v}"),
            Value::Pointer(v) => write!(f, "0x{v:x}"),
            Value::F32(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::Char(v) => write!(f, "{v}"),
            Value::Guid(v) => write!(f, "{v}"),
            Value::DateTime(v) => write!(f, "{v}"),
            Value::String(v) => write!(f, "{v:?}"),
            Value::Bytes(v) => {
                write!(f, "0x")?;
                for b in v {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            Value::Array(items) => {
                write!(f, "[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{v}")?;
                }
                write!(f, "]")
            }
            Value::Object(fields) => {
                write!(f, "{{")?;
                for (i, fl) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}={}", fl.name, fl.value)?;
                }
                write!(f, "}}")
            }
        }
    }
}
