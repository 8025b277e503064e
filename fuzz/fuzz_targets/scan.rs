//! Any bytes given to the framing scanner, in pieces of a size the input chooses: the same
//! blocks as when fed whole, in order, each ending within what was fed; an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrace::Scanner;

fn blocks(data: &[u8], piece: usize) -> (Vec<u64>, bool) {
    let mut scanner = Scanner::new();
    let mut ends = Vec::new();
    let mut fed = 0u64;
    for chunk in data.chunks(piece) {
        fed += chunk.len() as u64;
        let ok = scanner
            .feed_all(chunk, |item| {
                assert!(item.end() <= fed, "an item ends past the bytes fed");
                ends.push(item.end());
            })
            .is_ok();
        if !ok {
            return (ends, false);
        }
    }
    (ends, true)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let piece = usize::from(first % 64) + 1;
    let (whole, whole_ok) = blocks(rest, rest.len().max(1));
    let (pieces, pieces_ok) = blocks(rest, piece);
    assert!(whole.windows(2).all(|w| w[0] < w[1]), "items out of order");
    assert_eq!(whole_ok, pieces_ok, "feeding in pieces changed the verdict");
    assert_eq!(whole, pieces, "feeding in pieces changed the blocks");
});
