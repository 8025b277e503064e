//! `clrspy record --children -o DIR -- COMMAND`: the program and every .NET process of its
//! tree, one whole trace each in DIR; what happens is said on the terminal as it happens.

use std::ffi::OsString;
use std::path::Path;

use clrspy_collect::TreeOptions;
use clrspy_live::recording::notices::{tree_line, tree_notice};

use crate::output::{CliError, CliResult};

/// Records the tree; returns clrspy's exit code (the program's own).
/// `dir` is the directory as given (`opts.dir` is it made absolute).
pub(crate) fn run(command: &[OsString], dir: &Path, opts: &TreeOptions) -> CliResult<u8> {
    let Some((program, args)) = command.split_first() else {
        return Err(CliError::new("--children needs a command after --").code(2));
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::new(format!("cannot create {}: {e}", dir.display()))
            .hint("--children writes one trace per process into the directory -o names")
    })?;
    let outcome = clrspy_collect::record_tree(program, args, opts, &mut |n| {
        eprintln!("{}", tree_notice(n))
    })
    .map_err(crate::output::collect_error)?;
    eprintln!("{}", tree_line(&outcome, &opts.dir));
    Ok(crate::output::program_exit_code(
        outcome.status,
        outcome.terminated_by_clrspy,
    ))
}
