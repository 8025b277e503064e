//! A core's bytes into the output file: compressed (gzip, zstd) or copied, counted, bounded by
//! [`CopyLimits`], and checked to be an ELF core.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use super::spec::{Compression, CopyLimits};
use crate::{Error, Result};
use coredump::seekable::{SeekTable, SeekableWriter};

/// Counts the bytes written through it; refuses to pass `limit`.
struct Counting<W> {
    inner: W,
    bytes: u64,
    limit: Option<u64>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(limit) = self.limit {
            if self.bytes.saturating_add(buf.len() as u64) > limit {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    format!(
                        "the dump outgrew the {} MB it may take (the rule's disk budget): stopped and removed",
                        limit >> 20
                    ),
                ));
            }
        }
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A compressor writing into the output file (or a plain copy, for [`Compression::None`]).
enum Encoder {
    Plain(Counting<BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<Counting<BufWriter<File>>>),
    /// Seekable zstd (`coredump::seekable`): readable in place, by any zstd decoder whole.
    Zstd(SeekableWriter<Counting<BufWriter<File>>>),
}

impl Encoder {
    fn new(kind: Compression, file: File, limit: Option<u64>) -> std::io::Result<Encoder> {
        let out = Counting {
            inner: BufWriter::with_capacity(1 << 20, file),
            bytes: 0,
            limit,
        };
        Ok(match kind {
            Compression::None => Encoder::Plain(out),
            Compression::Zstd => Encoder::Zstd(SeekableWriter::new(out, 3)?),
            _ => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(6),
            )),
        })
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Plain(e) => e.write_all(buf),
            Encoder::Gzip(e) => e.write_all(buf),
            Encoder::Zstd(e) => e.write_all(buf),
        }
    }

    /// Ends the stream, flushes and syncs the file; returns its size.
    fn finish(self) -> std::io::Result<u64> {
        let mut out = match self {
            Encoder::Plain(e) => e,
            Encoder::Gzip(e) => e.finish()?,
            Encoder::Zstd(e) => e.finish()?,
        };
        out.flush()?;
        let bytes = out.bytes;
        let file = out.inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(bytes)
    }
}

/// What a copy gave: raw bytes read, bytes written, the first four bytes, how it was
/// compressed.
pub(super) struct Copied {
    pub(super) raw: u64,
    pub(super) written: u64,
    pub(super) magic: Vec<u8>,
    pub(super) kind: Compression,
}

/// Compresses (or copies) everything `src` gives into `out`, within `limits`.
pub(super) fn compress_stream(
    src: &mut dyn Read,
    out: File,
    kind: Compression,
    limits: CopyLimits,
) -> std::io::Result<Copied> {
    let mut enc = Encoder::new(kind, out, limits.file)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut raw = 0u64;
    let mut magic = Vec::with_capacity(4);
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if magic.len() < 4 {
            let take = (4 - magic.len()).min(n);
            magic.extend_from_slice(&buf[..take]);
        }
        raw += n as u64;
        if let Some(limit) = limits.raw.filter(|&l| raw > l) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                format!(
                    "more than {} MB came: larger than any core of the process (twice its readable memory), so not its dump; stopped and removed",
                    limit >> 20
                ),
            ));
        }
        enc.write_all(&buf[..n])?;
    }
    let written = enc.finish()?;
    Ok(Copied {
        raw,
        written,
        magic,
        kind,
    })
}

/// Checks what streamed through looks like a core (on Linux), and that a zstd file reads
/// back through its seek table: every byte accounted for, the first frame the core's start.
pub(super) fn check_streamed(path: &Path, c: &Copied) -> Result<()> {
    let bad = |why: String| Error::DumpCheck {
        path: path.to_path_buf(),
        why,
        source: None,
    };
    let raw = c.raw;
    if raw < 4 {
        return Err(bad(format!(
            "createdump wrote {raw} bytes: not a core file"
        )));
    }
    if cfg!(target_os = "linux") && c.magic != b"\x7fELF" {
        return Err(bad("createdump did not write an ELF core file".into()));
    }
    if c.kind == Compression::Zstd {
        let read = |f: &mut File| -> std::io::Result<(u64, Vec<u8>)> {
            let t = SeekTable::read(f)?
                .ok_or_else(|| std::io::Error::other("no seek table at its end"))?;
            Ok((t.total_bytes(), t.frame(f, 0)?))
        };
        match File::open(path).and_then(|mut f| read(&mut f)) {
            Ok((total, first)) if total == raw && first.starts_with(&c.magic) => {}
            Ok((total, _)) => {
                return Err(bad(format!(
                    "the compressed file reads back as {total} bytes through its seek table, {raw} were written"
                )))
            }
            Err(e) => {
                return Err(bad(format!(
                    "the compressed file does not read back through its seek table: {e}"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn core_like() -> Vec<u8> {
        let mut v = b"\x7fELF".to_vec();
        for i in 0..200_000u32 {
            v.extend_from_slice(&(i % 977).to_le_bytes());
        }
        v
    }

    #[test]
    fn both_compressors_round_trip_and_count() {
        let dir = tempfile::tempdir().unwrap();
        let data = core_like();
        for kind in [Compression::Gzip, Compression::Zstd] {
            let p = dir.path().join(kind.extension());
            let f = File::create(&p).unwrap();
            let c =
                compress_stream(&mut Cursor::new(&data), f, kind, CopyLimits::default()).unwrap();
            assert_eq!(c.raw, data.len() as u64);
            assert_eq!(c.magic, b"\x7fELF");
            assert_eq!(c.written, std::fs::metadata(&p).unwrap().len());
            assert!(
                c.written < c.raw / 4,
                "{kind:?}: {} of {}",
                c.written,
                c.raw
            );
            let mut back = Vec::new();
            let f = File::open(&p).unwrap();
            match kind {
                Compression::Gzip => {
                    flate2::read::GzDecoder::new(f)
                        .read_to_end(&mut back)
                        .unwrap();
                }
                _ => {
                    zstd::stream::read::Decoder::new(f)
                        .unwrap()
                        .read_to_end(&mut back)
                        .unwrap();
                }
            }
            assert_eq!(back, data);
        }
    }

    #[test]
    fn an_endless_source_and_a_full_budget_stop_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        // /dev/zero's bytes from a reader that never ends: stopped at the raw limit.
        let mut endless = std::io::repeat(0);
        let f = File::create(dir.path().join("z")).unwrap();
        let limits = CopyLimits {
            raw: Some(3 << 20),
            file: None,
        };
        let e = compress_stream(&mut endless, f, Compression::Zstd, limits)
            .err()
            .unwrap();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("more than 3 MB came"), "{e}");
        // A plain copy larger than the file's budget.
        let f = File::create(dir.path().join("p")).unwrap();
        let limits = CopyLimits {
            raw: None,
            file: Some(1 << 20),
        };
        let mut big = Cursor::new(vec![1u8; 3 << 20]);
        let e = compress_stream(&mut big, f, Compression::None, limits)
            .err()
            .unwrap();
        assert!(e.to_string().contains("outgrew the 1 MB"), "{e}");
        assert!(std::fs::metadata(dir.path().join("p")).unwrap().len() <= 1 << 20);
    }

    #[test]
    fn a_stream_that_is_not_a_core_is_refused() {
        let p = Path::new("/x.dmp.gz");
        let copied = |raw: u64, magic: &[u8], kind: Compression| Copied {
            raw,
            written: raw,
            magic: magic.to_vec(),
            kind,
        };
        assert!(check_streamed(p, &copied(0, b"", Compression::Gzip)).is_err());
        if cfg!(target_os = "linux") {
            let e = check_streamed(p, &copied(100, b"MZ\0\0", Compression::Gzip)).unwrap_err();
            assert!(e.to_string().contains("not write an ELF core"), "{e}");
        }
        assert!(check_streamed(p, &copied(100, b"\x7fELF", Compression::Gzip)).is_ok());
        // A zstd file is read back through its seek table: one cut short is refused.
        let dir = tempfile::tempdir().unwrap();
        let data = core_like();
        let z = dir.path().join("x.zst");
        let c = compress_stream(
            &mut Cursor::new(&data),
            File::create(&z).unwrap(),
            Compression::Zstd,
            CopyLimits::default(),
        )
        .unwrap();
        assert!(check_streamed(&z, &c).is_ok());
        let bytes = std::fs::read(&z).unwrap();
        std::fs::write(&z, &bytes[..bytes.len() - 3]).unwrap();
        let e = check_streamed(&z, &c).unwrap_err();
        assert!(e.to_string().contains("does not read back"), "{e}");
    }
}
