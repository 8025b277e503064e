//! Any bytes given to the incremental reader, fed in small pieces.
#![no_main]
use libfuzzer_sys::fuzz_target;

struct Pieces<'a>(&'a [u8]);

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(13).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = nettrace::StreamReader::from_read(Pieces(data)) {
        let mut n = 0usize;
        while let Ok(Some(_)) = r.next_event() {
            n += 1;
            assert!(n <= data.len());
        }
    }
});
