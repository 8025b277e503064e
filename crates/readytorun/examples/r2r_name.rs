//! Names file offsets of a ReadyToRun image: `r2r_name IMAGE OFFSET...` (hex offsets, as in
//! clrspy's `module!+0xOFFSET` frames).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: r2r_name IMAGE OFFSET...")?;
    let bytes = std::fs::read(&path)?;
    let image = readytorun::Image::parse(&bytes)?;
    for a in args {
        let off = u64::from_str_radix(a.trim_start_matches("0x"), 16)?;
        match image
            .rva_of_file_offset(off)
            .and_then(|rva| Some((rva, image.function_at(rva)?)))
        {
            Some((rva, f)) => println!(
                "{a}: rva {rva:#x} in {} [{:#x}, {:#x})",
                image.name(f),
                f.start,
                f.end
            ),
            None => println!("{a}: no function"),
        }
    }
    Ok(())
}
