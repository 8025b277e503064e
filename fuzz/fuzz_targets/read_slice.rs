//! Any bytes given to the slice reader: a value or an error, never a panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = nettrace::TraceReader::new(data) {
        let mut n = 0usize;
        while let Ok(Some(e)) = r.next_event() {
            let _ = e.decode_with_metadata();
            let _ = e.stack.ips().count();
            n += 1;
            assert!(n <= data.len());
        }
    }
});
