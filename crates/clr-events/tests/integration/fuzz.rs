//! Property tests: random bytes through every layout never panic, and the decoder's accounting
//! holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use clr_events::{all_layouts, Decoded, Value};
use proptest::prelude::*;

fn check(d: &Decoded, len: usize) {
    if d.error.is_some() {
        assert_eq!(d.extra_bytes, 0);
    } else {
        assert!(d.extra_bytes <= len);
    }
    // No array can hold more elements than there are payload bytes.
    fn walk(v: &Value, len: usize) {
        match v {
            Value::Array(items) => {
                assert!(items.len() <= len.max(1));
                items.iter().for_each(|i| walk(i, len));
            }
            Value::Object(fields) => fields.iter().for_each(|f| walk(&f.value, len)),
            Value::Bytes(b) => assert!(b.len() <= len),
            _ => {}
        }
    }
    d.fields.iter().for_each(|f| walk(&f.value, len));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        for l in all_layouts() {
            for ps in [4u8, 8] {
                let d = l.decode(&bytes, ps);
                check(&d, bytes.len());
            }
        }
    }

    /// Small counts followed by random bytes reach the array and struct paths more often than
    /// fully random input does.
    #[test]
    fn small_counts_never_panic(
        head in proptest::collection::vec(0u8..4, 0..64),
        tail in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = head;
        bytes.extend(tail);
        for l in all_layouts() {
            for ps in [4u8, 8] {
                let d = l.decode(&bytes, ps);
                check(&d, bytes.len());
            }
        }
    }
}

#[test]
fn every_prefix_of_zeroes_and_ones() {
    // All-zero payloads decode strings as empty and counts as zero; all-0xff payloads have huge
    // counts and no string terminators.
    for fill in [0u8, 1, 0xff] {
        let bytes = vec![fill; 300];
        for l in all_layouts() {
            for ps in [4u8, 8] {
                for cut in 0..bytes.len() {
                    let d = l.decode(&bytes[..cut], ps);
                    check(&d, cut);
                }
            }
        }
    }
}
