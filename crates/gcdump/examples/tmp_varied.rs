//! Temporary: a 10 M-node graph with many types and random references.
use gcdump::{DumpInfo, GraphBuilder, HeapDump};
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().ok_or("n")?.parse()?;
    let out = args.next().ok_or("out")?;
    let types: u32 = 50_000;
    let mut b = GraphBuilder::new();
    let ty: Vec<u32> = (0..types).map(|i| b.add_type(&format!("App.Ns{}.Type{}<System.Int32>", i % 97, i), "App")).collect();
    let mut x: u64 = 88172645463325252;
    let mut rnd = move |m: u32| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; (x % u64::from(m)) as u32 };
    for i in 0..n {
        // a tree-ish shape: children at 2i+1, 2i+2 plus a random back edge
        for c in [2 * u64::from(i) + 1, 2 * u64::from(i) + 2] {
            if c < u64::from(n) { b.push_child(c as u32); }
        }
        if rnd(4) == 0 { b.push_child(rnd(n)); }
        let t = ty[(rnd(types) as f64 * (rnd(1000) as f64 / 1000.0)) as usize];
        b.end_node(t, 24 + rnd(64) * 8, 0x1000_0000 + u64::from(i) * 64);
    }
    let st: Vec<u32> = (0..200).map(|i| b.add_type(&format!("[static var App.S{i}.F]"), "")).collect();
    let mut statics = Vec::new();
    for (k, &t) in st.iter().enumerate() {
        let kids = [rnd(n), rnd(n), if k == 0 { 0 } else { rnd(n) }];
        statics.push(b.add_node(t, 0, 0, &kids));
    }
    let sv = b.add_type("[static vars]", "");
    let s = b.add_node(sv, 0, 0, &statics);
    let roots = b.add_type("[.NET Roots]", "");
    let r = b.add_node(roots, 0, 0, &[s]);
    b.set_root(r);
    let dump = HeapDump { graph: b.finish()?, info: DumpInfo::default() };
    gcdump::write(std::io::BufWriter::new(std::fs::File::create(out)?), &dump)?;
    Ok(())
}
