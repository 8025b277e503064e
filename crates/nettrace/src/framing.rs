//! Splitting the byte stream into blocks: the stream header, FastSerialization objects (NetPerf
//! and NetTrace V4/V5) and V6 block headers. Pure functions over a buffer: they either find a
//! whole block, ask for more bytes, or fail. They do no I/O, so the slice reader and the
//! incremental `io::Read` reader share them.

use crate::cursor::Cursor;
use crate::error::{BlockKind, Error, ErrorKind, InBlock, Result};
use crate::header::{FormatVersion, TraceHeader};

/// Hard limit on a FastSerialization type name.
const MAX_TYPE_NAME: u32 = 1024;

const FS_SIGNATURE: &[u8] = b"!FastSerialization.1";
const MAGIC: &[u8] = b"Nettrace";

/// FastSerialization tags used by the format.
const TAG_NULL_REFERENCE: u8 = 1;
const TAG_BEGIN_OBJECT: u8 = 4;
const TAG_BEGIN_PRIVATE_OBJECT: u8 = 5;
const TAG_END_OBJECT: u8 = 6;

/// How blocks are framed after the stream header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// FastSerialization objects (V3-V5).
    FastSerialization,
    /// V6 block headers.
    V6,
}

/// One step of framing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole block: payload at `start..start+len` of the buffer; `total` bytes consumed.
    Block {
        kind: BlockKind,
        version: i32,
        start: usize,
        len: usize,
        total: usize,
    },
    /// The end-of-stream marker; `total` bytes consumed.
    End { total: usize },
    /// The buffer holds less than a whole block. `needed` is the total buffer length needed
    /// (when known). `partial` is set when the block header was read: kind, payload start and
    /// declared payload length, so a truncated block can be salvaged.
    NeedMore {
        needed: usize,
        partial: Option<(BlockKind, usize, usize)>,
    },
}

fn need(needed: usize) -> Frame {
    Frame::NeedMore {
        needed,
        partial: None,
    }
}

/// Reads the next frame from `buf`, whose first byte sits at absolute offset `offset`.
pub(crate) fn next_frame(framing: Framing, buf: &[u8], offset: u64) -> Result<Frame> {
    match framing {
        Framing::V6 => next_frame_v6(buf),
        Framing::FastSerialization => next_frame_fs(buf, offset),
    }
}

fn next_frame_v6(buf: &[u8]) -> Result<Frame> {
    if buf.len() < 4 {
        return Ok(need(4));
    }
    let x = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let len = (x & 0x00ff_ffff) as usize;
    let kind = BlockKind::from_v6((x >> 24) as u8);
    if kind == BlockKind::EndOfStream {
        // The block may carry data in future versions: skip it as well.
        if buf.len() < 4 + len {
            return Ok(need(4 + len));
        }
        return Ok(Frame::End { total: 4 + len });
    }
    if buf.len() < 4 + len {
        return Ok(Frame::NeedMore {
            needed: 4 + len,
            partial: Some((kind, 4, len)),
        });
    }
    Ok(Frame::Block {
        kind,
        version: 0,
        start: 4,
        len,
        total: 4 + len,
    })
}

/// Parses a FastSerialization type object: `BeginObject, NullReference, version, minVersion,
/// name, EndObject`. Returns `None` when the buffer is too short.
fn type_header(c: &mut Cursor<'_>) -> Result<Option<(i32, String)>> {
    macro_rules! get {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(_) => return Ok(None),
            }
        };
    }
    let at = c.offset();
    let tag = get!(c.u8());
    if tag != TAG_BEGIN_PRIVATE_OBJECT && tag != TAG_BEGIN_OBJECT {
        return Err(Error::malformed(
            at,
            BlockKind::StreamHeader,
            format!("expected a type object (BeginObject tag 4 or 5), found byte {tag}"),
        ));
    }
    let at = c.offset();
    let tag = get!(c.u8());
    if tag != TAG_NULL_REFERENCE {
        return Err(Error::malformed(
            at,
            BlockKind::StreamHeader,
            format!("expected NullReference tag (1) in a type object, found byte {tag}"),
        ));
    }
    let version = get!(c.i32());
    let _min_reader = get!(c.i32());
    let at = c.offset();
    let name_len = get!(c.u32());
    if name_len > MAX_TYPE_NAME {
        return Err(Error::new(
            at,
            Some(BlockKind::StreamHeader),
            ErrorKind::LimitExceeded {
                what: "object type name length",
                value: name_len.into(),
                limit: MAX_TYPE_NAME.into(),
            },
        ));
    }
    let name = get!(c.bytes(name_len as usize));
    let name = String::from_utf8_lossy(name).into_owned();
    let at = c.offset();
    let tag = get!(c.u8());
    if tag != TAG_END_OBJECT {
        return Err(Error::malformed(
            at,
            BlockKind::StreamHeader,
            format!("expected EndObject tag (6) after type '{name}', found byte {tag}"),
        ));
    }
    Ok(Some((version, name)))
}

fn kind_of_type(name: &str) -> Option<BlockKind> {
    Some(match name {
        "Trace" | "Microsoft.DotNet.Runtime.EventPipeFile" => BlockKind::Trace,
        "EventBlock" => BlockKind::Event,
        "MetadataBlock" => BlockKind::Metadata,
        "StackBlock" => BlockKind::Stack,
        "SPBlock" => BlockKind::SequencePoint,
        _ => return None,
    })
}

/// Size of the Trace object's fields in V3-V5 (SYSTEMTIME, two i64, four i32).
pub(crate) const FS_TRACE_FIELDS: usize = 16 + 8 + 8 + 4 * 4;

fn next_frame_fs(buf: &[u8], offset: u64) -> Result<Frame> {
    let Some(&first) = buf.first() else {
        return Ok(need(1));
    };
    if first == TAG_NULL_REFERENCE {
        return Ok(Frame::End { total: 1 });
    }
    if first != TAG_BEGIN_PRIVATE_OBJECT && first != TAG_BEGIN_OBJECT {
        return Err(Error::malformed(
            offset,
            BlockKind::StreamHeader,
            format!("expected an object (BeginObject tag 4 or 5) or the end-of-stream tag (1), found byte {first}"),
        ));
    }
    let mut c = Cursor::new(&buf[1..], offset + 1);
    let Some((version, name)) = type_header(&mut c)? else {
        return Ok(need(buf.len() + 1));
    };
    let at = offset + 1;
    let Some(kind) = kind_of_type(&name) else {
        return Err(Error::malformed(
            at,
            BlockKind::StreamHeader,
            format!("unknown object type '{name}' (expected EventBlock, MetadataBlock, StackBlock, SPBlock or Trace)"),
        ));
    };
    let (start, len) = if kind == BlockKind::Trace {
        (1 + c.position(), FS_TRACE_FIELDS)
    } else {
        let Ok(size) = c.u32() else {
            return Ok(need(1 + c.position() + 4));
        };
        let after_size = c.offset();
        let pad = ((4 - (after_size % 4)) % 4) as usize;
        (1 + c.position() + pad, size as usize)
    };
    let end = start + len;
    if buf.len() < end + 1 {
        return Ok(Frame::NeedMore {
            needed: end + 1,
            partial: Some((kind, start, len)),
        });
    }
    if buf[end] != TAG_END_OBJECT {
        return Err(Error::malformed(
            offset + end as u64,
            kind,
            format!(
                "expected EndObject tag (6) after the block's {len} bytes, found byte {}",
                buf[end]
            ),
        ));
    }
    Ok(Frame::Block {
        kind,
        version,
        start,
        len,
        total: end + 1,
    })
}

/// Result of reading the stream header: the framing that follows and bytes consumed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamStart {
    pub framing: Framing,
    pub netperf: bool,
    pub v6_minor: u32,
    pub consumed: usize,
}

/// Reads the stream header. `Ok(None)` means more bytes are needed.
pub(crate) fn stream_start(buf: &[u8]) -> Result<Option<StreamStart>> {
    let fs_header = |at: usize| -> Result<Option<usize>> {
        if buf.len() < at + 4 + FS_SIGNATURE.len() {
            // Check what we have so far against the signature to fail fast on junk.
            let have = &buf[at.min(buf.len())..];
            let mut expect = (FS_SIGNATURE.len() as u32).to_le_bytes().to_vec();
            expect.extend_from_slice(FS_SIGNATURE);
            if !expect.starts_with(have) {
                return Err(Error::new(
                    at as u64,
                    Some(BlockKind::StreamHeader),
                    ErrorKind::NotATrace,
                ));
            }
            return Ok(None);
        }
        let len = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
        if len as usize != FS_SIGNATURE.len()
            || &buf[at + 4..at + 4 + FS_SIGNATURE.len()] != FS_SIGNATURE
        {
            return Err(Error::new(
                at as u64,
                Some(BlockKind::StreamHeader),
                ErrorKind::NotATrace,
            ));
        }
        Ok(Some(at + 4 + FS_SIGNATURE.len()))
    };
    if buf.len() < MAGIC.len() {
        if !MAGIC.starts_with(buf)
            && !(FS_SIGNATURE.len() as u32)
                .to_le_bytes()
                .starts_with(&buf[..buf.len().min(4)])
        {
            return Err(Error::new(
                0,
                Some(BlockKind::StreamHeader),
                ErrorKind::NotATrace,
            ));
        }
        return Ok(None);
    }
    if &buf[..MAGIC.len()] != MAGIC {
        // NetPerf: no magic, straight into the FastSerialization header.
        return Ok(fs_header(0)?.map(|consumed| StreamStart {
            framing: Framing::FastSerialization,
            netperf: true,
            v6_minor: 0,
            consumed,
        }));
    }
    if buf.len() < 12 {
        return Ok(None);
    }
    let reserved = u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]);
    if reserved != 0 {
        return Ok(fs_header(8)?.map(|consumed| StreamStart {
            framing: Framing::FastSerialization,
            netperf: false,
            v6_minor: 0,
            consumed,
        }));
    }
    if buf.len() < 20 {
        return Ok(None);
    }
    let major = u32::from_le_bytes([buf[12], buf[13], buf[14], buf[15]]);
    let minor = u32::from_le_bytes([buf[16], buf[17], buf[18], buf[19]]);
    if major != 6 {
        return Err(Error::new(
            12,
            Some(BlockKind::StreamHeader),
            ErrorKind::UnsupportedVersion(major),
        ));
    }
    Ok(Some(StreamStart {
        framing: Framing::V6,
        netperf: false,
        v6_minor: minor,
        consumed: 20,
    }))
}

/// Parses the Trace block's payload into a header.
pub(crate) fn parse_trace(
    start: &StreamStart,
    object_version: i32,
    payload: &[u8],
    offset: u64,
) -> Result<TraceHeader> {
    let b = BlockKind::Trace;
    let mut c = Cursor::new(payload, offset);
    let sync_time_utc = c.system_time().in_block(b)?;
    let sync_time_ticks = c.i64().in_block(b)?;
    let ticks_per_second = c.i64().in_block(b)?;
    let at = c.offset();
    let pointer_size = c.i32().in_block(b)?;
    if pointer_size != 4 && pointer_size != 8 {
        return Err(Error::malformed(
            at,
            b,
            format!("pointer size is {pointer_size}, expected 4 or 8"),
        ));
    }
    if ticks_per_second <= 0 {
        return Err(Error::malformed(
            offset + 24,
            b,
            format!("tick frequency is {ticks_per_second}, expected a positive number"),
        ));
    }
    let mut header = TraceHeader {
        format: FormatVersion::NetTrace4,
        v6_minor: start.v6_minor,
        trace_object_version: object_version,
        sync_time_utc,
        sync_time_ticks,
        ticks_per_second,
        pointer_size: pointer_size as u8,
        process_id: None,
        cpu_count: None,
        sampling_interval_ns: None,
        key_values: Vec::new(),
    };
    match start.framing {
        Framing::FastSerialization => {
            header.format = if start.netperf {
                if object_version < 3 {
                    return Err(Error::new(
                        offset,
                        Some(b),
                        ErrorKind::UnsupportedVersion(object_version.max(0) as u32),
                    ));
                }
                FormatVersion::NetPerf3
            } else {
                FormatVersion::NetTrace4
            };
            let pid = c.i32().in_block(b)?;
            let cpus = c.i32().in_block(b)?;
            let rate = c.i32().in_block(b)?;
            header.process_id = u64::try_from(pid).ok();
            header.cpu_count = u32::try_from(cpus).ok().filter(|&n| n > 0);
            header.sampling_interval_ns = u32::try_from(rate).ok().filter(|&n| n > 0);
        }
        Framing::V6 => {
            header.format = FormatVersion::NetTrace6;
            let at = c.offset();
            let count = c.u32().in_block(b)?;
            if count as usize > c.remaining() / 2 {
                return Err(Error::malformed(
                    at,
                    b,
                    format!("{count} key/value pairs cannot fit in the block"),
                ));
            }
            for _ in 0..count {
                let k = c.utf8_varlen().in_block(b)?;
                let v = c.utf8_varlen().in_block(b)?;
                match k.as_str() {
                    "HardwareThreadCount" => header.cpu_count = v.trim().parse().ok(),
                    "ProcessId" => header.process_id = v.trim().parse().ok(),
                    "ExpectedCPUSamplingRate" => {
                        header.sampling_interval_ns = v.trim().parse().ok()
                    }
                    _ => {}
                }
                header.key_values.push((k, v));
            }
        }
    }
    Ok(header)
}
