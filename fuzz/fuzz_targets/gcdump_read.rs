//! Any bytes given to the .gcdump reader: a graph whose every index is in range, or an error
//! naming an offset inside the input — never a panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match gcdump::read(data) {
        Ok(d) => {
            let g = &d.graph;
            let n = g.node_count();
            for i in 0..n as u32 {
                assert!((g.node_type(i) as usize) < g.types().len());
                assert!(g.children(i).iter().all(|&c| (c as usize) < n));
            }
            // What was read writes back and reads again to the same shape.
            if let Ok(bytes) = gcdump::write_to_vec(&d) {
                let again = gcdump::read(&bytes).expect("a written graph reads back");
                assert_eq!(again.graph.node_count(), n);
                assert_eq!(again.graph.edge_count(), g.edge_count());
            }
        }
        Err(e) => assert!(e.offset <= data.len() as u64),
    }
});
