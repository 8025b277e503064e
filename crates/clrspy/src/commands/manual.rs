//! `clrspy completions SHELL` and `clrspy man [COMMAND] [--dir DIR]`: what a packaged install
//! ships (completions for each shell, a page per command), for users who installed otherwise.
//! Both come from the command line's own definition, so they cannot drift from it.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::output::{CliError, CliResult};

/// Prints the completion script of a shell.
pub fn completions(a: &CompletionsArgs) -> CliResult<ExitCode> {
    let mut cmd = Cli::command();
    // Into a buffer first: the generator panics on a write error (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "clrspy", &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a manual page, or writes every command's into a folder.
pub fn man(a: &ManArgs) -> CliResult<ExitCode> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
        let mut written = 0;
        write_pages(&cmd, dir, &mut written)
            .map_err(|e| CliError::new(format!("cannot write into {}: {e}", dir.display())))?;
        eprintln!("Wrote {written} manual pages into {}.", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut page = &cmd;
    for word in &a.command {
        page = page
            .get_subcommands()
            .find(|c| {
                !c.is_hide_set() && (c.get_name() == word || c.get_all_aliases().any(|n| n == word))
            })
            .ok_or_else(|| {
                let known: Vec<&str> = page
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                CliError::new(format!(
                    "no command `{}` (the commands of `{}`: {})",
                    a.command.join(" "),
                    page.get_display_name().unwrap_or(page.get_name()),
                    known.join(", ")
                ))
                .code(2)
            })?;
    }
    let mut out = io::stdout().lock();
    page_of(page).render(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A command's page, its footer naming clrspy's version and build date.
fn page_of(cmd: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone())
        .source(format!("clrspy {}", env!("CARGO_PKG_VERSION")))
        .date(env!("CLRSPY_BUILD_DATE"))
        .manual("clrspy manual")
}

/// One page per command and subcommand (hidden ones left out), as `clrspy-heap-diff.1`.
fn write_pages(cmd: &clap::Command, dir: &std::path::Path, written: &mut usize) -> io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    page_of(cmd).generate_to(dir)?;
    *written += 1;
    Ok(())
}
