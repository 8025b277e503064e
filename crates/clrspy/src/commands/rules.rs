//! `clrspy rules check|schema|example`: the rules file's checks, schema and example, printed.

use std::io::Write;
use std::process::ExitCode;

use clrspy_rules::{LoadError, RuleSet};

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

/// Checks `file`: a summary of its rules, or every mistake as `FILE:LINE:COLUMN: message`.
fn check(file: &std::path::Path, json: bool, out: &mut dyn Write) -> CliResult<ExitCode> {
    match RuleSet::load(file) {
        Ok(set) => {
            if json {
                let rules: Vec<serde_json::Value> = set
                    .rules
                    .iter()
                    .map(|r| serde_json::json!({ "name": r.name, "actions": actions(r) }))
                    .collect();
                let v = serde_json::json!({
                    "file": file.display().to_string(),
                    "valid": true,
                    "rules": rules,
                });
                writeln!(out, "{v}")?;
            } else {
                writeln!(
                    out,
                    "{}: {} rule(s), no mistakes",
                    file.display(),
                    set.rules.len()
                )?;
                for r in &set.rules {
                    writeln!(out, "  {}: {}", r.name, actions(r).join(", "))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(LoadError::Invalid { path, errors }) => {
            if json {
                let list: Vec<serde_json::Value> = errors
                    .iter()
                    .map(|e| serde_json::json!({"line": e.line, "column": e.column, "message": e.message}))
                    .collect();
                let v = serde_json::json!({
                    "file": path.display().to_string(),
                    "valid": false,
                    "errors": list,
                });
                writeln!(out, "{v}")?;
                return Ok(ExitCode::from(1));
            }
            for e in &errors {
                eprintln!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message);
            }
            Err(CliError::new(format!(
                "{}: {} mistake(s); nothing was applied",
                path.display(),
                errors.len()
            ))
            .hint("`clrspy rules example` prints a valid file to start from"))
        }
        Err(e) => Err(CliError::new(e.to_string()).code(2)),
    }
}

/// The actions of a rule, in words.
fn actions(r: &clrspy_rules::Rule) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(t) = &r.trace {
        let what = t
            .profile
            .as_ref()
            .map(|p| p.0.name.to_string())
            .unwrap_or_else(|| {
                if t.providers.is_empty() {
                    "cpu".into()
                } else {
                    "providers".into()
                }
            });
        let mut s = format!("trace ({what}");
        if let Some(d) = t.duration {
            s.push_str(&format!(", {:?}", d.0));
        }
        if let Some(m) = t.ring_mb {
            s.push_str(&format!(", ring {m} MB"));
        }
        if !t.stop_on.is_empty() {
            s.push_str(&format!(", {} stop trigger(s)", t.stop_on.len()));
        }
        s.push(')');
        a.push(s);
    }
    if let Some(d) = &r.dump {
        let kind = match d.kind.map(|k| k.0) {
            Some(diagnostics_client::DumpType::WithHeap) => "heap",
            Some(diagnostics_client::DumpType::Triage) => "triage",
            Some(diagnostics_client::DumpType::Full) => "full",
            _ => "mini",
        };
        let when = if d.on_exception.is_empty() {
            "at once".to_string()
        } else {
            format!(
                "on {}",
                d.on_exception
                    .iter()
                    .map(|g| g.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        if d.on_crash {
            a.push("the runtime's crash dump, when the process crashes".into());
        }
        if !d.on_crash || !d.on_exception.is_empty() {
            let held = if d.hold_hook.is_some() {
                ", the throwing thread held for processes held at --listen"
            } else {
                ""
            };
            a.push(format!("dump ({kind}, {when}{held})"));
        }
    }
    if r.children {
        a.push("the same for every .NET process a matched process starts".into());
    }
    a
}
