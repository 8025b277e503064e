//! Seekable zstd: a dump's bytes as independent zstd frames of [`FRAME_BYTES`] each, then the
//! zstd seekable format's seek table (a skippable frame listing each frame's compressed and
//! decompressed size). Any zstd decoder (`zstd -d`, every library) reads the file whole and
//! skips the table; a reader that knows the table reaches any offset of the core by
//! decompressing only the frame that holds it, so a compressed dump can be analysed without
//! unpacking it to disk.

use std::io::{self, Read, Seek, SeekFrom, Write};

/// Uncompressed bytes per frame: small enough that reading one address costs little, large
/// enough that compression loses almost nothing (a core is mostly pages of zeros or code).
pub const FRAME_BYTES: usize = 4 << 20;
/// The skippable frame's magic the seekable format uses.
const SKIPPABLE_MAGIC: u32 = 0x184D_2A5E;
/// The seek table footer's magic.
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
/// Frames count, descriptor, magic.
const FOOTER_BYTES: u64 = 9;
/// The format's bounds: frames in a table and bytes in a frame.
const MAX_FRAMES: u64 = 0x800_0000;
const MAX_FRAME_BYTES: u32 = 0x4000_0000;

/// Writes zstd frames of [`FRAME_BYTES`] into `out`, and the seek table at [`Self::finish`].
pub struct SeekableWriter<W: Write> {
    out: W,
    pending: Vec<u8>,
    /// (compressed, decompressed) size of each frame written.
    frames: Vec<(u32, u32)>,
    zstd: zstd::bulk::Compressor<'static>,
}

impl<W: Write> SeekableWriter<W> {
    /// A writer compressing at `level`.
    pub fn new(out: W, level: i32) -> io::Result<Self> {
        Ok(SeekableWriter {
            out,
            pending: Vec::with_capacity(FRAME_BYTES),
            frames: Vec::new(),
            zstd: zstd::bulk::Compressor::new(level)?,
        })
    }

    fn flush_frame(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let frame = self.zstd.compress(&self.pending)?;
        self.out.write_all(&frame)?;
        let size = |n: usize| u32::try_from(n).map_err(|_| io::Error::other("frame too large"));
        self.frames
            .push((size(frame.len())?, size(self.pending.len())?));
        self.pending.clear();
        Ok(())
    }

    /// Writes the last frame and the seek table; the output, not flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_frame()?;
        let entries = self.frames.len() * 8;
        let mut table = Vec::with_capacity(8 + entries + FOOTER_BYTES as usize);
        table.extend(SKIPPABLE_MAGIC.to_le_bytes());
        let body = u32::try_from(entries as u64 + FOOTER_BYTES)
            .map_err(|_| io::Error::other("too many frames for a seek table"))?;
        table.extend(body.to_le_bytes());
        for (c, d) in &self.frames {
            table.extend(c.to_le_bytes());
            table.extend(d.to_le_bytes());
        }
        table.extend((self.frames.len() as u32).to_le_bytes());
        table.push(0); // descriptor: no checksums
        table.extend(SEEKABLE_MAGIC.to_le_bytes());
        self.out.write_all(&table)?;
        Ok(self.out)
    }
}

impl<W: Write> Write for SeekableWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(FRAME_BYTES - self.pending.len());
        self.pending.extend_from_slice(&buf[..n]);
        if self.pending.len() == FRAME_BYTES {
            self.flush_frame()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// One frame of a seekable file: where its compressed bytes are and which core bytes they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeekFrame {
    /// Offset of the compressed frame in the file.
    pub file_offset: u64,
    /// Its compressed size.
    pub file_bytes: u32,
    /// Offset of its first byte in the decompressed data.
    pub offset: u64,
    /// Its decompressed size.
    pub bytes: u32,
}

/// The frames of a seekable zstd file, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeekTable {
    /// Every frame.
    pub frames: Vec<SeekFrame>,
}

impl SeekTable {
    /// The decompressed size of the whole file.
    pub fn total_bytes(&self) -> u64 {
        self.frames
            .last()
            .map_or(0, |f| f.offset + u64::from(f.bytes))
    }

    /// Reads the seek table at the end of `file`: None when the file does not end with one
    /// (a zstd stream written otherwise); an error for a table that contradicts the file.
    pub fn read<R: Read + Seek>(file: &mut R) -> io::Result<Option<SeekTable>> {
        let len = file.seek(SeekFrom::End(0))?;
        if len < 8 + FOOTER_BYTES {
            return Ok(None);
        }
        let mut footer = [0u8; FOOTER_BYTES as usize];
        file.seek(SeekFrom::Start(len - FOOTER_BYTES))?;
        file.read_exact(&mut footer)?;
        let le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if le(&footer[5..9]) != SEEKABLE_MAGIC {
            return Ok(None);
        }
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        let count = u64::from(le(&footer[0..4]));
        let descriptor = footer[4];
        if descriptor & 0x7c != 0 {
            return Err(bad(format!(
                "seek table descriptor {descriptor:#x} sets reserved bits"
            )));
        }
        let entry = if descriptor & 0x80 != 0 { 12 } else { 8 };
        let table = count * entry + FOOTER_BYTES;
        if count > MAX_FRAMES || table + 8 > len {
            return Err(bad(format!(
                "seek table of {count} frames does not fit a file of {len} bytes"
            )));
        }
        let start = len - table - 8;
        file.seek(SeekFrom::Start(start))?;
        let mut head = [0u8; 8];
        file.read_exact(&mut head)?;
        if le(&head[0..4]) != SKIPPABLE_MAGIC || u64::from(le(&head[4..8])) != table {
            return Err(bad(format!(
                "no skippable frame of {table} bytes at offset {start} before the seek table's footer"
            )));
        }
        let mut entries = vec![0u8; (count * entry) as usize];
        file.read_exact(&mut entries)?;
        let mut frames = Vec::with_capacity(count as usize);
        let (mut at, mut offset) = (0u64, 0u64);
        for (i, e) in entries.chunks_exact(entry as usize).enumerate() {
            let (file_bytes, bytes) = (le(&e[0..4]), le(&e[4..8]));
            if bytes > MAX_FRAME_BYTES || at + u64::from(file_bytes) > start {
                return Err(bad(format!(
                    "seek table frame {i} ({file_bytes} bytes holding {bytes}) runs past the data, which ends at offset {start}"
                )));
            }
            frames.push(SeekFrame {
                file_offset: at,
                file_bytes,
                offset,
                bytes,
            });
            at += u64::from(file_bytes);
            offset += u64::from(bytes);
        }
        if at != start {
            return Err(bad(format!(
                "the seek table's frames end at offset {at}, its own frame starts at {start}"
            )));
        }
        Ok(Some(SeekTable { frames }))
    }

    /// The decompressed bytes of frame `i` of `file`.
    pub fn frame<R: Read + Seek>(&self, file: &mut R, i: usize) -> io::Result<Vec<u8>> {
        let f = self
            .frames
            .get(i)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such frame"))?;
        file.seek(SeekFrom::Start(f.file_offset))?;
        let mut compressed = vec![0u8; f.file_bytes as usize];
        file.read_exact(&mut compressed)?;
        let data = zstd::bulk::decompress(&compressed, f.bytes as usize)?;
        if data.len() != f.bytes as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "frame {i} gave {} bytes where the seek table says {}",
                    data.len(),
                    f.bytes
                ),
            ));
        }
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Bytes that compress some but not entirely: a counter's text, with runs of zeros.
    fn sample(n: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(n);
        let mut i = 0u64;
        while v.len() < n {
            v.extend(format!("{i:x} ").bytes());
            if i.is_multiple_of(1000) {
                v.extend(std::iter::repeat_n(0u8, 5000));
            }
            i += 1;
        }
        v.truncate(n);
        v
    }

    fn write(data: &[u8], chunk: usize) -> Vec<u8> {
        let mut w = SeekableWriter::new(Vec::new(), 3).unwrap();
        for c in data.chunks(chunk) {
            w.write_all(c).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn any_zstd_decoder_reads_it_whole_and_the_table_reads_each_frame() {
        let data = sample(FRAME_BYTES * 2 + 12_345);
        let file = write(&data, 100_000);
        // Every frame, and the skippable table, through the ordinary streaming decoder.
        assert_eq!(zstd::stream::decode_all(&file[..]).unwrap(), data);
        let mut f = Cursor::new(&file);
        let t = SeekTable::read(&mut f).unwrap().unwrap();
        assert_eq!(t.frames.len(), 3);
        assert_eq!(t.total_bytes(), data.len() as u64);
        let last = t.frames[2];
        assert_eq!((last.offset, last.bytes), (2 * FRAME_BYTES as u64, 12_345));
        let got = t.frame(&mut f, 1).unwrap();
        assert_eq!(got, &data[FRAME_BYTES..2 * FRAME_BYTES]);
        assert!(t.frame(&mut f, 3).is_err());
    }

    #[test]
    fn empty_input_is_a_table_of_no_frames() {
        let file = write(&[], 1);
        let t = SeekTable::read(&mut Cursor::new(&file)).unwrap().unwrap();
        assert_eq!((t.frames.len(), t.total_bytes()), (0, 0));
    }

    #[test]
    fn a_plain_stream_has_no_table_and_a_damaged_table_is_an_error() {
        let plain = zstd::stream::encode_all(&b"not seekable"[..], 3).unwrap();
        assert_eq!(SeekTable::read(&mut Cursor::new(&plain)).unwrap(), None);
        assert_eq!(SeekTable::read(&mut Cursor::new(&[0u8; 4])).unwrap(), None);
        let good = write(&sample(50_000), 7_000);
        // A frame count that does not fit the file.
        let mut bad = good.clone();
        let n = bad.len();
        bad[n - 9..n - 5].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = SeekTable::read(&mut Cursor::new(&bad)).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        // A frame size that runs past the data.
        let mut bad = good.clone();
        let entry = n - 9 - 8;
        bad[entry..entry + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
        let e = SeekTable::read(&mut Cursor::new(&bad)).unwrap_err();
        assert!(e.to_string().contains("runs past the data"), "{e}");
        // Reserved descriptor bits.
        let mut bad = good;
        bad[n - 5] = 0x04;
        let e = SeekTable::read(&mut Cursor::new(&bad)).unwrap_err();
        assert!(e.to_string().contains("reserved"), "{e}");
    }
}
