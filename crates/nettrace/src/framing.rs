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
pub(crate) const TAG_END_OBJECT: u8 = 6;

/// How blocks are framed after the stream header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// FastSerialization objects (V3-V5).
    FastSerialization,
    /// V6 block headers.
    V6,
}

/// A block's header, read: where its payload sits relative to the block's first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockHead {
    pub(crate) kind: BlockKind,
    /// FastSerialization object version (0 for V6).
    pub(crate) version: i32,
    /// Payload start, from the block's first byte (the header's length, padding included).
    pub(crate) start: usize,
    /// Payload length.
    pub(crate) len: usize,
    /// Zero bytes between the size field and the payload (V3-V5 only).
    pub(crate) padding: u8,
    /// Bytes after the payload: the EndObject tag in V3-V5, none in V6.
    pub(crate) trailer: usize,
}

impl BlockHead {
    /// The block's whole length.
    pub(crate) fn total(&self) -> usize {
        self.start + self.len + self.trailer
    }
}

/// The outcome of reading a block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// The buffer is shorter than the header: at least this many bytes are needed.
    Need(usize),
    /// A block header.
    Block(BlockHead),
    /// The end-of-stream marker, `total` bytes long.
    End { total: usize },
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

/// Reads the next block header from `buf`, whose first byte sits at absolute offset `offset`.
#[inline]
pub(crate) fn block_head(framing: Framing, buf: &[u8], offset: u64) -> Result<Head> {
    match framing {
        Framing::V6 => Ok(head_v6(buf)),
        Framing::FastSerialization => head_fs(buf, offset),
    }
}

/// Checks the byte after a V3-V5 block's payload (at absolute offset `at`): its EndObject tag.
#[inline]
pub(crate) fn check_end_tag(kind: BlockKind, found: u8, at: u64) -> Result<()> {
    if found == TAG_END_OBJECT {
        return Ok(());
    }
    Err(Error::at(
        at,
        kind,
        ErrorKind::UnexpectedTag {
            expected: "EndObject tag (6) after the block's bytes",
            found,
        },
    ))
}

/// Reads the next whole frame from `buf`, whose first byte sits at absolute offset `offset`.
#[inline]
pub(crate) fn next_frame(framing: Framing, buf: &[u8], offset: u64) -> Result<Frame> {
    match block_head(framing, buf, offset)? {
        Head::Need(needed) => Ok(Frame::NeedMore {
            needed,
            partial: None,
        }),
        Head::End { total } => {
            if buf.len() < total {
                Ok(Frame::NeedMore {
                    needed: total,
                    partial: None,
                })
            } else {
                Ok(Frame::End { total })
            }
        }
        Head::Block(h) => {
            let total = h.total();
            if buf.len() < total {
                return Ok(Frame::NeedMore {
                    needed: total,
                    partial: Some((h.kind, h.start, h.len)),
                });
            }
            if h.trailer != 0 {
                let at = h.start + h.len;
                check_end_tag(h.kind, buf[at], offset + at as u64)?;
            }
            Ok(Frame::Block {
                kind: h.kind,
                version: h.version,
                start: h.start,
                len: h.len,
                total,
            })
        }
    }
}

fn head_v6(buf: &[u8]) -> Head {
    let Some(b) = buf.get(..4) else {
        return Head::Need(4);
    };
    let x = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let len = (x & 0x00ff_ffff) as usize;
    let kind = BlockKind::from_v6((x >> 24) as u8);
    if kind == BlockKind::EndOfStream {
        // The block may carry data in future versions: it is skipped as well.
        return Head::End { total: 4 + len };
    }
    Head::Block(BlockHead {
        kind,
        version: 0,
        start: 4,
        len,
        padding: 0,
        trailer: 0,
    })
}

fn expect_tag(c: &mut Cursor<'_>, ok: &[u8], expected: &'static str) -> Result<Option<()>> {
    let at = c.offset();
    let Ok(tag) = c.u8() else {
        return Ok(None);
    };
    if !ok.contains(&tag) {
        return Err(Error::at(
            at,
            BlockKind::StreamHeader,
            ErrorKind::UnexpectedTag {
                expected,
                found: tag,
            },
        ));
    }
    Ok(Some(()))
}

/// Parses a FastSerialization type object: `BeginObject, NullReference, version, minVersion,
/// name, EndObject`. Returns `None` when the buffer is too short.
fn type_header<'a>(c: &mut Cursor<'a>) -> Result<Option<(i32, &'a [u8])>> {
    macro_rules! get {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(_) => return Ok(None),
            }
        };
    }
    let begin = [TAG_BEGIN_PRIVATE_OBJECT, TAG_BEGIN_OBJECT];
    if expect_tag(c, &begin, "a type object (BeginObject tag 4 or 5)")?.is_none() {
        return Ok(None);
    }
    let null = [TAG_NULL_REFERENCE];
    if expect_tag(c, &null, "NullReference tag (1) in a type object")?.is_none() {
        return Ok(None);
    }
    let version = get!(c.i32());
    let _min_reader = get!(c.i32());
    let at = c.offset();
    let name_len = get!(c.u32());
    if name_len > MAX_TYPE_NAME {
        return Err(Error::at(
            at,
            BlockKind::StreamHeader,
            ErrorKind::LimitExceeded {
                what: "object type name length",
                value: name_len.into(),
                limit: MAX_TYPE_NAME.into(),
            },
        ));
    }
    let name = get!(c.bytes(name_len as usize));
    let end = [TAG_END_OBJECT];
    if expect_tag(c, &end, "EndObject tag (6) after an object's type")?.is_none() {
        return Ok(None);
    }
    Ok(Some((version, name)))
}

fn kind_of_type(name: &[u8]) -> Option<BlockKind> {
    Some(match name {
        b"Trace" | b"Microsoft.DotNet.Runtime.EventPipeFile" => BlockKind::Trace,
        b"EventBlock" => BlockKind::Event,
        b"MetadataBlock" => BlockKind::Metadata,
        b"StackBlock" => BlockKind::Stack,
        b"SPBlock" => BlockKind::SequencePoint,
        _ => return None,
    })
}

/// Size of the Trace object's fields in V3-V5 (SYSTEMTIME, two i64, four i32).
const FS_TRACE_FIELDS: usize = 16 + 8 + 8 + 4 * 4;

fn head_fs(buf: &[u8], offset: u64) -> Result<Head> {
    let Some(&first) = buf.first() else {
        return Ok(Head::Need(1));
    };
    if first == TAG_NULL_REFERENCE {
        return Ok(Head::End { total: 1 });
    }
    if first != TAG_BEGIN_PRIVATE_OBJECT && first != TAG_BEGIN_OBJECT {
        return Err(Error::at(
            offset,
            BlockKind::StreamHeader,
            ErrorKind::UnexpectedTag {
                expected: "an object (BeginObject tag 4 or 5) or the end-of-stream tag (1)",
                found: first,
            },
        ));
    }
    let mut c = Cursor::new(&buf[1..], offset + 1);
    let Some((version, name)) = type_header(&mut c)? else {
        return Ok(Head::Need(buf.len() + 1));
    };
    let Some(kind) = kind_of_type(name) else {
        return Err(Error::at(
            offset + 1,
            BlockKind::StreamHeader,
            ErrorKind::UnknownObjectType {
                name: String::from_utf8_lossy(name).into_owned(),
            },
        ));
    };
    let (start, len, padding) = if kind == BlockKind::Trace {
        (1 + c.position(), FS_TRACE_FIELDS, 0)
    } else {
        let Ok(size) = c.u32() else {
            return Ok(Head::Need(1 + c.position() + 4));
        };
        let pad = ((4 - (c.offset() % 4)) % 4) as usize;
        let start = 1 + c.position() + pad;
        if buf.len() < start {
            return Ok(Head::Need(start));
        }
        (start, size as usize, pad as u8)
    };
    Ok(Head::Block(BlockHead {
        kind,
        version,
        start,
        len,
        padding,
        trailer: 1,
    }))
}

/// Result of reading the stream header: the framing that follows and bytes consumed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamStart {
    pub(crate) framing: Framing,
    pub(crate) netperf: bool,
    pub(crate) v6_minor: u32,
    pub(crate) consumed: usize,
}

impl StreamStart {
    /// The format family the stream header announces.
    pub(crate) fn format(&self) -> FormatVersion {
        match (self.framing, self.netperf) {
            (Framing::V6, _) => FormatVersion::NetTrace6,
            (_, true) => FormatVersion::NetPerf3,
            (_, false) => FormatVersion::NetTrace4,
        }
    }
}

/// The outcome of reading the Trace block.
#[derive(Debug)]
pub(crate) enum TraceStep {
    /// At least this many bytes are needed.
    Need(usize),
    /// The Trace block, `total` bytes long, and what it says.
    Done {
        header: TraceHeader,
        head: BlockHead,
        total: usize,
    },
}

/// Reads the Trace block that follows the stream start, at the start of `buf` (absolute
/// offset `offset`).
pub(crate) fn trace_block(start: &StreamStart, buf: &[u8], offset: u64) -> Result<TraceStep> {
    match block_head(start.framing, buf, offset)? {
        Head::Need(n) => Ok(TraceStep::Need(n)),
        Head::End { .. } => Err(Error::at(
            offset,
            BlockKind::Trace,
            ErrorKind::TraceNotFirst {
                found: BlockKind::EndOfStream,
            },
        )),
        Head::Block(h) if h.kind != BlockKind::Trace => Err(Error::at(
            offset,
            h.kind,
            ErrorKind::TraceNotFirst { found: h.kind },
        )),
        Head::Block(h) => {
            let total = h.total();
            if buf.len() < total {
                return Ok(TraceStep::Need(total));
            }
            if h.trailer != 0 {
                let at = h.start + h.len;
                check_end_tag(h.kind, buf[at], offset + at as u64)?;
            }
            let payload = &buf[h.start..h.start + h.len];
            let header = parse_trace(start, h.version, payload, offset + h.start as u64)?;
            Ok(TraceStep::Done {
                header,
                head: h,
                total,
            })
        }
    }
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
        return Err(Error::at(
            at,
            b,
            ErrorKind::InvalidValue {
                what: "pointer size",
                found: pointer_size.into(),
                expected: "4 or 8",
            },
        ));
    }
    if ticks_per_second <= 0 {
        return Err(Error::at(
            offset + 24,
            b,
            ErrorKind::InvalidValue {
                what: "tick frequency",
                found: ticks_per_second,
                expected: "a positive number",
            },
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
                return Err(Error::at(
                    at,
                    b,
                    ErrorKind::CountTooLarge {
                        what: "key/value pairs",
                        count: count.into(),
                        room: c.remaining() as u64,
                    },
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

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
