//! A core file's bytes at any offset, whatever its packing: a raw core is read in place, a
//! seekable zstd file (what `clrspy dump` writes) one 4 MiB frame at a time through its seek
//! table, and any other zstd or gzip stream — which cannot be entered in the middle — is unpacked
//! once to an owner-only temporary file that is gone when the reader is.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use crate::seekable::SeekTable;

/// Frames kept decompressed: a heap walk reads forward, the stacks and the runtime's globals
/// come back to a few places.
const CACHED_FRAMES: usize = 12;

/// How the core was packed, said to the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// A raw core.
    Raw,
    /// Seekable zstd, read in place.
    SeekableZstd,
    /// A zstd stream without a seek table, unpacked to a temporary file.
    ZstdUnpacked,
    /// gzip, unpacked to a temporary file.
    GzipUnpacked,
}

impl Packing {
    /// One phrase for the output.
    pub fn describe(self) -> &'static str {
        match self {
            Packing::Raw => "raw core",
            Packing::SeekableZstd => "seekable zstd, read in place",
            Packing::ZstdUnpacked => "zstd without a seek table, unpacked to a temporary file",
            Packing::GzipUnpacked => "gzip, unpacked to a temporary file",
        }
    }
}

/// Decompressed frames by index, most recently used last.
type FrameCache = Mutex<Vec<(usize, std::sync::Arc<Vec<u8>>)>>;

/// Frames larger than this are refused when read: clrspy writes 4 MiB frames, other writers
/// of the format smaller ones, and a frame is decompressed whole into memory.
const MAX_READ_FRAME: u32 = 256 << 20;

enum Inner {
    Plain(File),
    Memory(Vec<u8>),
    Seekable {
        file: File,
        table: SeekTable,
        /// (frame index, its bytes), most recent last.
        cache: FrameCache,
    },
}

/// Random access to a core's bytes.
pub(crate) struct CoreBytes {
    inner: Inner,
    len: u64,
    /// Keeps an unpacked core's temporary file alive (it is already unlinked).
    packing: Packing,
}

impl CoreBytes {
    /// Opens `path`, recognising its packing by its first bytes.
    pub(crate) fn open(path: &Path) -> io::Result<CoreBytes> {
        let mut file = File::open(path)?;
        let mut magic = [0u8; 4];
        let got = read_up_to(&mut file, &mut magic)?;
        let magic = &magic[..got];
        if magic == [0x28, 0xb5, 0x2f, 0xfd] {
            if let Some(table) = SeekTable::read(&mut file)? {
                if let Some(big) = table.frames.iter().find(|f| f.bytes > MAX_READ_FRAME) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "a seekable frame of {} bytes: more than the {} MiB read at once",
                            big.bytes,
                            MAX_READ_FRAME >> 20
                        ),
                    ));
                }
                let len = table.total_bytes();
                return Ok(CoreBytes {
                    inner: Inner::Seekable {
                        file,
                        table,
                        cache: Mutex::new(Vec::new()),
                    },
                    len,
                    packing: Packing::SeekableZstd,
                });
            }
            file.seek(SeekFrom::Start(0))?;
            let mut decoder = zstd::stream::read::Decoder::new(file)?;
            return unpack(&mut decoder, Packing::ZstdUnpacked);
        }
        if magic.starts_with(&[0x1f, 0x8b]) {
            file.seek(SeekFrom::Start(0))?;
            let mut decoder = flate2::read::MultiGzDecoder::new(io::BufReader::new(file));
            return unpack(&mut decoder, Packing::GzipUnpacked);
        }
        let len = file.metadata()?.len();
        Ok(CoreBytes {
            inner: Inner::Plain(file),
            len,
            packing: Packing::Raw,
        })
    }

    /// A raw core already in memory.
    pub(crate) fn from_vec(bytes: Vec<u8>) -> CoreBytes {
        CoreBytes {
            len: bytes.len() as u64,
            inner: Inner::Memory(bytes),
            packing: Packing::Raw,
        }
    }

    /// The core's size, unpacked.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// How it was packed.
    pub(crate) fn packing(&self) -> Packing {
        self.packing
    }

    /// Fills as much of `buf` as the core holds from `offset`; the bytes read.
    pub(crate) fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        match &self.inner {
            Inner::Memory(b) => {
                let from = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
                let n = buf.len().min(b.len() - from);
                buf[..n].copy_from_slice(&b[from..from + n]);
                Ok(n)
            }
            Inner::Plain(f) => {
                let mut done = 0;
                while done < buf.len() {
                    match f.read_at(&mut buf[done..], offset + done as u64) {
                        Ok(0) => break,
                        Ok(n) => done += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(done)
            }
            Inner::Seekable { file, table, cache } => {
                let mut done = 0;
                while done < buf.len() {
                    let at = offset + done as u64;
                    let i = table
                        .frames
                        .partition_point(|f| f.offset + u64::from(f.bytes) <= at);
                    let Some(frame) = table.frames.get(i) else {
                        break;
                    };
                    let data = cached_frame(file, table, cache, i)?;
                    let from = (at - frame.offset) as usize;
                    let n = (buf.len() - done).min(data.len().saturating_sub(from));
                    if n == 0 {
                        break;
                    }
                    buf[done..done + n].copy_from_slice(&data[from..from + n]);
                    done += n;
                }
                Ok(done)
            }
        }
    }
}

fn cached_frame(
    file: &File,
    table: &SeekTable,
    cache: &FrameCache,
    i: usize,
) -> io::Result<std::sync::Arc<Vec<u8>>> {
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(pos) = cache.iter().position(|(k, _)| *k == i) {
        let hit = cache.remove(pos);
        let data = hit.1.clone();
        cache.push(hit);
        return Ok(data);
    }
    // `SeekTable::frame` seeks: a clone of the handle shares the offset, so read through our
    // own positioned reader instead.
    let mut reader = PositionedFile { file, at: 0 };
    let data = std::sync::Arc::new(table.frame(&mut reader, i)?);
    if cache.len() >= CACHED_FRAMES {
        cache.remove(0);
    }
    cache.push((i, data.clone()));
    Ok(data)
}

/// `Read + Seek` over a shared file through positioned reads.
struct PositionedFile<'a> {
    file: &'a File,
    at: u64,
}

impl Read for PositionedFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

impl Seek for PositionedFile<'_> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let len = self.file.metadata()?.len();
        let to = match pos {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => len.checked_add_signed(d),
            SeekFrom::Current(d) => self.at.checked_add_signed(d),
        };
        self.at = to.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before 0"))?;
        Ok(self.at)
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Unpacks a stream to an unlinked, owner-only temporary file.
fn unpack(stream: &mut impl Read, packing: Packing) -> io::Result<CoreBytes> {
    let mut out = tempfile::tempfile()?;
    let len = io::copy(stream, &mut out)
        .map_err(|e| io::Error::new(e.kind(), format!("unpacking the core: {e}")))?;
    Ok(CoreBytes {
        inner: Inner::Plain(out),
        len,
        packing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seekable::{SeekableWriter, FRAME_BYTES};
    use std::io::Write;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    fn check(bytes: &CoreBytes, want: &[u8]) {
        assert_eq!(bytes.len(), want.len() as u64);
        for (at, n) in [
            (0, 10),
            (FRAME_BYTES - 3, 10),
            (want.len() - 5, 10),
            (12_345, 70_000),
        ] {
            let mut buf = vec![0u8; n];
            let got = bytes.read_at(at as u64, &mut buf).unwrap();
            let end = (at + n).min(want.len());
            assert_eq!(got, end - at);
            assert_eq!(&buf[..got], &want[at..end]);
        }
        let mut buf = [0u8; 4];
        assert_eq!(bytes.read_at(want.len() as u64 + 10, &mut buf).unwrap(), 0);
    }

    #[test]
    fn every_packing_reads_the_same_bytes() {
        let want = data(FRAME_BYTES + 100_000);
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("core");
        std::fs::write(&raw, &want).unwrap();
        let b = CoreBytes::open(&raw).unwrap();
        assert_eq!(b.packing(), Packing::Raw);
        check(&b, &want);

        let seek = dir.path().join("core.zst");
        let mut w = SeekableWriter::new(Vec::new(), 1).unwrap();
        w.write_all(&want).unwrap();
        std::fs::write(&seek, w.finish().unwrap()).unwrap();
        let b = CoreBytes::open(&seek).unwrap();
        assert_eq!(b.packing(), Packing::SeekableZstd);
        check(&b, &want);

        let plain = dir.path().join("plain.zst");
        std::fs::write(&plain, zstd::stream::encode_all(&want[..], 1).unwrap()).unwrap();
        let b = CoreBytes::open(&plain).unwrap();
        assert_eq!(b.packing(), Packing::ZstdUnpacked);
        check(&b, &want);

        let gz = dir.path().join("core.gz");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&want).unwrap();
        std::fs::write(&gz, e.finish().unwrap()).unwrap();
        let b = CoreBytes::open(&gz).unwrap();
        assert_eq!(b.packing(), Packing::GzipUnpacked);
        check(&b, &want);
    }

    #[test]
    fn a_truncated_stream_is_an_error() {
        let want = data(300_000);
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("cut.zst");
        let z = zstd::stream::encode_all(&want[..], 1).unwrap();
        std::fs::write(&plain, &z[..z.len() / 2]).unwrap();
        assert!(CoreBytes::open(&plain).is_err());
    }
}
