//! `clrspy info`: what a trace holds, and whether it is whole (clrspy-analysis' inventory,
//! printed through clrspy-export's info view).

use std::io::Write;

use clrspy_analysis::inventory::Inventory;
use clrspy_export::info::InfoView;

use crate::cli::InfoArgs;
use crate::input;
use crate::output::CliResult;
use crate::progress::Progress;

/// Runs `clrspy info`.
pub fn run(args: &InfoArgs) -> CliResult<std::process::ExitCode> {
    let trace = input::open(&args.input.trace)?;
    let mut reader = trace.reader()?;
    let mut progress = Progress::new(trace.len());
    let inventory = Inventory::run(&mut reader, |offset| progress.update(offset));
    progress.finish();
    let view = InfoView {
        inventory: &inventory,
        file: trace.display(),
        bytes_total: trace.len(),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        clrspy_export::report::write_json(&mut out, &view.json())?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    view.write_text(&mut out)?;
    out.flush()?;
    if let Some(e) = &inventory.error {
        eprintln!(
            "clrspy: warning: {}: {e}; every complete event before it was counted",
            trace.display()
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}
