//! Any bytes given to the core-file reader: an ELF core's headers, notes and memory read, or an
//! error — never a panic; and any bytes as a seekable zstd file's seek table (frames not
//! decompressed here: their sizes are checked against the file).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"\x7fELF") {
        if let Ok(core) = coredump::elf::Core::from_bytes(data.to_vec()) {
            let mut buf = [0u8; 256];
            for t in &core.threads {
                assert!(t.regs.len() <= 34);
                let _ = t.tid;
            }
            let _ = (core.pid, core.command.len(), core.machine, core.memory_bytes());
            for addr in [0u64, 0x1000, 0x10000, u64::MAX - 8] {
                let n = core.read_virtual(addr, &mut buf);
                assert!(n <= buf.len());
                assert!(core.read_held(addr, &mut buf) <= buf.len());
            }
            let _ = core.image_base("libcoreclr.so");
            let _ = core.image_path("libcoreclr.so");
            let _ = core.packing();
        }
    } else if let Ok(Some(t)) =
        coredump::seekable::SeekTable::read(&mut std::io::Cursor::new(data))
    {
        let end: u64 = t.frames.iter().map(|f| u64::from(f.file_bytes)).sum();
        assert!(end <= data.len() as u64);
        let _ = t.total_bytes();
    }
});
