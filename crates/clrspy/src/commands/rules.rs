//! `clrspy rules check|schema|example`: the rules file's checks, schema and example, printed.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clrspy_rules::{Diagnostic, LoadError, RuleSet};

use crate::cli::{RulesAction, RulesArgs};
use crate::output::{CliError, CliResult};

/// Runs `clrspy rules`.
pub fn run(args: &RulesArgs) -> CliResult<ExitCode> {
    let mut out = std::io::stdout().lock();
    match &args.action {
        RulesAction::Schema => {
            let text = serde_json::to_string_pretty(&clrspy_rules::json_schema())
                .map_err(|e| CliError::new(format!("writing the schema: {e}")))?;
            writeln!(out, "{text}")?;
        }
        RulesAction::Example { json } => {
            let text = if *json {
                clrspy_rules::EXAMPLE_JSON
            } else {
                clrspy_rules::EXAMPLE_TOML
            };
            write!(out, "{text}")?;
        }
        RulesAction::Check { file, json } => return check(file, *json, &mut out),
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints each mistake of a rules file as `FILE:LINE:COLUMN: message` on stderr.
pub(super) fn say_mistakes(path: &Path, errors: &[Diagnostic]) {
    for e in errors {
        eprintln!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message);
    }
}

/// Checks `file`: a summary of its rules, or every mistake as `FILE:LINE:COLUMN: message`.
fn check(file: &Path, json: bool, out: &mut dyn Write) -> CliResult<ExitCode> {
    match RuleSet::load(file) {
        Ok(set) if json => writeln!(out, "{}", set.check_json(file))?,
        Ok(set) => {
            let n = set.rules.len();
            writeln!(out, "{}: {n} rule(s), no mistakes", file.display())?;
            for r in &set.rules {
                writeln!(out, "  {}: {}", r.name, r.actions_in_words().join(", "))?;
            }
        }
        Err(LoadError::Invalid { path, errors }) if json => {
            writeln!(out, "{}", clrspy_rules::mistakes_json(&path, &errors))?;
            return Ok(ExitCode::from(1));
        }
        Err(LoadError::Invalid { path, errors }) => {
            say_mistakes(&path, &errors);
            return Err(CliError::new(format!(
                "{}: {} mistake(s); nothing was applied",
                path.display(),
                errors.len()
            ))
            .hint("`clrspy rules example` prints a valid file to start from"));
        }
        Err(e) => return Err(CliError::new(e.to_string()).code(2)),
    }
    Ok(ExitCode::SUCCESS)
}
