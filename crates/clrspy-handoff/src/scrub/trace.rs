//! A trace's secrets masked in place. EventPipe strings are UTF-16LE (log messages, exception
//! messages, DiagnosticSource arguments, command lines, URLs), a few UTF-8; payloads are never
//! compressed (NetTrace V4–V6 compress only V6's event headers). So the whole file's bytes are
//! searched for text runs — UTF-16LE at both byte parities, and UTF-8 — each run goes through
//! the redactor's patterns and learned literals, and every secret's code units are overwritten
//! with `*` (`*\0` in UTF-16): the file keeps its length and framing, and every reader opens
//! it. The events are then walked once, on the memory map, to say which event each secret was
//! in.

use std::fs::OpenOptions;
use std::ops::Range;
use std::path::Path;

use clrspy_values::redact::{Found, Span};

use crate::HandoffError;

/// The fewest ASCII characters a run holds to be searched: shorter runs are numbers and
/// flags that happen to look like text, and hold no secret worth a pattern.
const MIN_ASCII: usize = 6;

/// What scrubbing a trace did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceScrub {
    /// Secrets masked.
    pub secrets: u64,
    /// Bytes overwritten.
    pub(crate) bytes: u64,
    /// Events read to place them (0 when nothing was masked).
    pub(crate) events: u64,
}

/// One secret in the file: its bytes and how to overwrite them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Edit {
    /// Its bytes in the file.
    pub(crate) range: Range<u64>,
    /// UTF-16LE (`*\0` per code unit) or UTF-8 (`*` per byte).
    pub(crate) wide: bool,
    /// What kind of secret.
    pub(crate) kind: Found,
}

/// Every secret in `data` (a whole trace, or any bytes): the text runs found and passed to
/// `spans`, which gives the secrets' byte ranges in the run's text; sorted by offset.
pub(super) fn find(data: &[u8], spans: &dyn Fn(&str) -> Vec<Span>) -> Vec<Edit> {
    let mut edits = Vec::new();
    let mut text = String::new();
    for parity in 0..2 {
        utf16_runs(data, parity, &mut |start, units| {
            wide_edits(data, (start, units), spans, &mut text, &mut edits)
        });
    }
    utf8_runs(data, &mut |start, end| {
        narrow_edits(data, start, end, spans, &mut edits)
    });
    edits.sort_by_key(|e| (e.range.start, e.range.end));
    edits
}

/// Overwrites each edit's bytes in `data` with `*` (UTF-8) or `*\0` (UTF-16LE).
#[cfg(test)]
pub(super) fn apply(data: &mut [u8], edits: &[Edit]) {
    for e in edits {
        let (Ok(start), Ok(end)) = (usize::try_from(e.range.start), usize::try_from(e.range.end))
        else {
            continue;
        };
        if let Some(bytes) = data.get_mut(start..end) {
            bytes.copy_from_slice(&stars(bytes.len(), e.wide));
        }
    }
}

/// `len` bytes of `*` (or `*\0` pairs).
fn stars(len: usize, wide: bool) -> Vec<u8> {
    (0..len)
        .map(|i| if wide && i % 2 == 1 { 0 } else { b'*' })
        .collect()
}

/// True for a UTF-16 code unit that is text by itself: printable ASCII, tab and line breaks,
/// and the basic plane's characters but surrogates and non-characters.
fn wide_text(u: u16) -> bool {
    matches!(u, 0x09 | 0x0A | 0x0D | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD)
}

/// The code unit at byte `i`, if two bytes are there.
fn unit(data: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*data.get(i)?, *data.get(i + 1)?]))
}

/// Calls `each(start, units)` for every run of text code units (and surrogate pairs) at byte
/// parity `parity` that holds at least [`MIN_ASCII`] ASCII characters.
fn utf16_runs(data: &[u8], parity: usize, each: &mut dyn FnMut(usize, usize)) {
    let mut start = parity;
    let mut units = 0;
    let mut ascii = 0;
    let mut i = parity;
    while let Some(u) = unit(data, i) {
        let width = if wide_text(u) {
            1
        } else if (0xD800..=0xDBFF).contains(&u)
            && unit(data, i + 2).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low))
        {
            2
        } else {
            0
        };
        if width > 0 {
            if units == 0 {
                start = i;
            }
            units += width;
            ascii += usize::from(u < 0x80);
        } else {
            if ascii >= MIN_ASCII {
                each(start, units);
            }
            units = 0;
            ascii = 0;
        }
        i += 2 * width.max(1);
    }
    if ascii >= MIN_ASCII {
        each(start, units);
    }
}

/// The secrets of one UTF-16LE run of `units` code units at `start`; `text` is a buffer.
fn wide_edits(
    data: &[u8],
    (start, units): (usize, usize),
    spans: &dyn Fn(&str) -> Vec<Span>,
    text: &mut String,
    edits: &mut Vec<Edit>,
) {
    text.clear();
    let run = (0..units).filter_map(|k| unit(data, start + 2 * k));
    text.extend(char::decode_utf16(run).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)));
    for (range, kind) in spans(text) {
        let (Some(before), Some(secret)) = (text.get(..range.start), text.get(range)) else {
            continue;
        };
        let u0: usize = before.chars().map(char::len_utf16).sum();
        let u1 = u0 + secret.chars().map(char::len_utf16).sum::<usize>();
        if u1 > u0 && !masked(secret) {
            edits.push(Edit {
                range: (start + 2 * u0) as u64..(start + 2 * u1) as u64,
                wide: true,
                kind,
            });
        }
    }
}

/// Calls `each(start, end)` for every run of bytes that may be UTF-8 text (printable ASCII,
/// tab, line breaks, and bytes of multi-byte characters), at least [`MIN_ASCII`] long.
fn utf8_runs(data: &[u8], each: &mut dyn FnMut(usize, usize)) {
    let mut start = 0;
    for (i, &b) in data.iter().enumerate() {
        let text = matches!(b, 0x09 | 0x0A | 0x0D | 0x20..=0x7E) || b >= 0x80;
        if !text {
            if i - start >= MIN_ASCII {
                each(start, i);
            }
            start = i + 1;
        }
    }
    if data.len().saturating_sub(start) >= MIN_ASCII {
        each(start, data.len());
    }
}

/// The secrets of the UTF-8 pieces of `data[start..end]`.
fn narrow_edits(
    data: &[u8],
    start: usize,
    end: usize,
    spans: &dyn Fn(&str) -> Vec<Span>,
    edits: &mut Vec<Edit>,
) {
    let mut at = start;
    for chunk in data[start..end].utf8_chunks() {
        let text = chunk.valid();
        if text.len() >= MIN_ASCII {
            for (range, kind) in spans(text) {
                if !range.is_empty() && !masked(text.get(range.clone()).unwrap_or_default()) {
                    edits.push(Edit {
                        range: (at + range.start) as u64..(at + range.end) as u64,
                        wide: false,
                        kind,
                    });
                }
            }
        }
        at += text.len() + chunk.invalid().len();
    }
}

/// True when a secret's text is already masked (all `*`): scrubbing twice changes nothing.
fn masked(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b == b'*')
}

/// Scrubs the trace at `path` in place (see the module's note), finding secrets with
/// `spans`; what it did, and where each secret was and its kind.
pub(super) fn scrub(
    path: &Path,
    spans: &dyn Fn(&str) -> Vec<Span>,
) -> Result<(TraceScrub, Vec<(String, Found)>), HandoffError> {
    let file = nettrace::TraceFile::open(path).map_err(|e| HandoffError::io(path, e))?;
    let edits = find(file.bytes(), spans);
    if edits.is_empty() {
        return Ok((TraceScrub::default(), Vec::new()));
    }
    let (places, events) = place(&file, &edits);
    drop(file);
    let out = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| HandoffError::io(path, e))?;
    let mut bytes = 0;
    for e in &edits {
        let len = usize::try_from(e.range.end - e.range.start).unwrap_or(0);
        write_at(&out, &stars(len, e.wide), e.range.start)
            .map_err(|err| HandoffError::io(path, err))?;
        bytes += len as u64;
    }
    out.sync_all().map_err(|e| HandoffError::io(path, e))?;
    let done = TraceScrub {
        secrets: edits.len() as u64,
        bytes,
        events,
    };
    Ok((
        done,
        places
            .into_iter()
            .zip(edits.iter().map(|e| e.kind))
            .collect(),
    ))
}

/// Where each edit was: `trace (<provider>/<event>)` for one inside an event's payload, else
/// `trace`; and how many events were read. A trace the reader cannot open (or that ends in
/// damage) leaves the rest as `trace`.
fn place(file: &nettrace::TraceFile, edits: &[Edit]) -> (Vec<String>, u64) {
    let mut places = vec!["trace".to_string(); edits.len()];
    let (base, len) = (file.bytes().as_ptr() as usize, file.bytes().len());
    let Ok(mut reader) = file.reader() else {
        return (places, 0);
    };
    let mut events = 0;
    while let Ok(Some(ev)) = reader.next_event() {
        events += 1;
        // Payloads borrow the map; one the reader had to copy is not placed.
        let Some(start) = (ev.payload.as_ptr() as usize)
            .checked_sub(base)
            .filter(|s| s + ev.payload.len() <= len)
        else {
            continue;
        };
        let (start, end) = (start as u64, (start + ev.payload.len()) as u64);
        let first = edits.partition_point(|e| e.range.start < start);
        for (k, e) in edits.iter().enumerate().skip(first) {
            if e.range.start >= end {
                break;
            }
            let name = match ev.metadata_name() {
                "" => format!("event {}", ev.event_id()),
                n => n.to_string(),
            };
            places[k] = format!("trace ({}/{name})", ev.provider());
        }
    }
    (places, events)
}

#[cfg(unix)]
fn write_at(file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_at(mut file: &std::fs::File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}
