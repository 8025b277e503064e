//! Any bytes as a runtime's reply: the IPC header, ProcessInfo 1–3 bodies, environment blocks
//! and reverse-port advertisements parse to a value or are refused, never a panic.
#![no_main]
use diagnostics_client::{
    parse_advertisement, parse_environment, parse_process_info, Header, HEADER_SIZE,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(head) = data.get(..HEADER_SIZE) {
        if let Ok(head) = <&[u8; HEADER_SIZE]>::try_from(head) {
            if let Some(h) = Header::decode(head) {
                // The two reserved bytes are not kept.
                assert_eq!(h.encode()[..18], head[..18], "a decoded header does not encode back");
            }
        }
    }
    for version in 1..=3 {
        if let Some(info) = parse_process_info(data, version) {
            assert_eq!(info.runtime_cookie.len(), 32);
        }
    }
    if let Ok(env) = parse_environment(data) {
        assert!(env.len() <= data.len() / 4);
    }
    let _ = parse_advertisement(data);
});
