//! A log file copied line by line through the redactor: streamed, so any size; a line that is
//! not all UTF-8 keeps its other bytes as they are and has its UTF-8 pieces searched.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::HandoffError;

/// The longest line read at once; a longer line is searched in pieces of this size.
const MAX_LINE: usize = 1 << 20;

/// Copies `src` to `dst` (created owner-only, replaced if it exists), each line (its UTF-8
/// pieces) through `text`; the bytes written.
pub(super) fn copy(
    text: &mut dyn FnMut(&str) -> String,
    src: &Path,
    dst: &Path,
) -> Result<u64, HandoffError> {
    let input = File::open(src).map_err(|e| HandoffError::io(src, e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let output =
        clrspy_collect::private::create_private(dst).map_err(|e| HandoffError::io(dst, e))?;
    let mut writer = BufWriter::new(output);
    let mut line = Vec::with_capacity(4096);
    let mut written = 0u64;
    loop {
        line.clear();
        let n = read_line(&mut reader, &mut line).map_err(|e| HandoffError::io(src, e))?;
        if n == 0 {
            break;
        }
        let out = scrub_line(text, &line);
        writer
            .write_all(&out)
            .map_err(|e| HandoffError::io(dst, e))?;
        written += out.len() as u64;
    }
    writer.flush().map_err(|e| HandoffError::io(dst, e))?;
    Ok(written)
}

/// Reads up to and with the next `\n`, or [`MAX_LINE`] bytes, whichever comes first.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(total);
        }
        let room = MAX_LINE - line.len();
        let (take, done) = match buf.iter().take(room).position(|&b| b == b'\n') {
            Some(nl) => (nl + 1, true),
            None => (buf.len().min(room), buf.len() >= room),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

/// One line's bytes with the secrets in its UTF-8 pieces masked; other bytes kept.
fn scrub_line(text: &mut dyn FnMut(&str) -> String, line: &[u8]) -> Vec<u8> {
    if let Ok(whole) = std::str::from_utf8(line) {
        return text(whole).into_bytes();
    }
    let mut out = Vec::with_capacity(line.len());
    for chunk in line.utf8_chunks() {
        out.extend_from_slice(text(chunk.valid()).as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    out
}
