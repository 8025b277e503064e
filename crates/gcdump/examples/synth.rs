//! Writes a synthetic heap snapshot: `synth NODES OUT.gcdump` — objects in groups of 1,000,
//! each referring to the next in its group and to the group's head, one holder per group,
//! all holders under one static — for scale tests of readers and analysis.

use gcdump::{DumpInfo, GraphBuilder, HeapDump};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().ok_or("usage: synth NODES OUT")?.parse()?;
    let out = args.next().ok_or("usage: synth NODES OUT")?;
    let mut b = GraphBuilder::new();
    let groups = n.div_ceil(1000);
    b.reserve(
        n as usize + groups as usize + 2,
        n as usize * 2 + groups as usize,
    );
    let item = b.add_type("Synth.Item", "Synth");
    let holder = b.add_type("Synth.Holder", "Synth");
    let st = b.add_type("[static var Synth.Cache.Items]", "");
    let roots = b.add_type("[.NET Roots]", "");
    for i in 0..n {
        let head = i - i % 1000;
        if (i + 1) % 1000 != 0 && i + 1 < n {
            b.push_child(i + 1);
        }
        if i != head {
            b.push_child(head);
        }
        b.end_node(item, 24 + (i % 4) * 8, 0x1000_0000 + u64::from(i) * 64);
    }
    let first_holder = n;
    for g in 0..groups {
        b.push_child(g * 1000);
        b.end_node(holder, 32, 0x9000_0000 + u64::from(g) * 64);
    }
    let kids: Vec<u32> = (first_holder..first_holder + groups).collect();
    let s = b.add_node(st, 0, 0, &kids);
    let r = b.add_node(roots, 0, 0, &[s]);
    b.set_root(r);
    let dump = HeapDump {
        graph: b.finish()?,
        info: DumpInfo {
            creation_tool: Some("clrspy synth".into()),
            ..DumpInfo::default()
        },
    };
    let f = std::fs::File::create(out)?;
    gcdump::write(std::io::BufWriter::new(f), &dump)?;
    Ok(())
}
