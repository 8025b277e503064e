//! `clrspy repair`: a cut or damaged trace made whole (clrspy-analysis' `repair_file`), and
//! what was kept and lost (clrspy-export's repair view).

use clrspy_analysis::repair_file::{repair_file, RepairFileError};
use clrspy_export::repair::RepairView;

use crate::cli::RepairArgs;
use crate::input;
use crate::output::{CliError, CliResult};

/// Runs `clrspy repair`.
pub fn run(args: &RepairArgs) -> CliResult<std::process::ExitCode> {
    let trace = input::open(&args.input.trace)?;
    let repaired = repair_file(&trace, args.output.as_deref()).map_err(|e| match e {
        RepairFileError::Open(e) => input::user_error(e),
        e @ RepairFileError::SameFile { .. } => CliError::new(e.to_string()).code(2),
        e => CliError::new(e.to_string()),
    })?;
    let view = RepairView {
        repaired: &repaired,
    };
    let mut stdout = std::io::stdout().lock();
    if args.json {
        clrspy_export::report::write_json(&mut stdout, &view.json())?;
    } else {
        view.write_text(&mut stdout)?;
    }
    if !repaired.output_whole {
        return Err(CliError::new(format!(
            "{} still does not read to its end: please report this",
            repaired.output.display()
        )));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
