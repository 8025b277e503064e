//! Talking to the person at the terminal: the symptom menu (on stderr, the answer read from
//! stdin) and the plan as text — the environment, the numbered steps with why, command and
//! cost, then the trade-offs.

use std::io::{BufRead, Write};

use clrspy_values::human_bytes;

use super::environment::Environment;
use super::plans::Plan;
use crate::symptom::Symptom;

/// Offers the symptoms as a numbered menu on `out` and reads the choice (a number or a name)
/// from `input`, asking again on a wrong answer; None at end of input.
pub(super) fn ask_symptom(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<Option<Symptom>> {
    writeln!(out, "What is the problem?")?;
    for (i, s) in Symptom::ALL.iter().enumerate() {
        writeln!(out, "  {}. {:<14} {}", i + 1, s.name(), s.describe())?;
    }
    loop {
        write!(out, "Choose 1-{}: ", Symptom::ALL.len())?;
        out.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let answer = line.trim();
        let chosen = answer
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| Symptom::ALL.get(i).copied())
            .or_else(|| Symptom::parse(answer));
        match chosen {
            Some(s) => return Ok(Some(s)),
            None => writeln!(out, "'{answer}' is none of them.")?,
        }
    }
}

/// The environment as `label  value` lines.
pub(super) fn environment_lines(env: &Environment) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    let mut os = format!("{} {}", env.os, env.kernel);
    if let Some(d) = &env.distro {
        os.push_str(&format!(" ({d})"));
    }
    os.push_str(&format!(", {}", env.arch));
    lines.push(("System".into(), os));
    let container = match &env.container {
        Some(c) => {
            let mut s = c.runtime.clone();
            if let Some(id) = &c.id {
                s.push_str(&format!(" {}", id.get(..12).unwrap_or(id)));
            }
            if let Some(image) = &c.image {
                s.push_str(&format!(", image {image}"));
            }
            s
        }
        None => "none detected".into(),
    };
    lines.push(("Container".into(), container));
    let user = if env.is_root { "root" } else { "not root" };
    lines.push(("User".into(), user.into()));
    let ptrace = match env.ptrace_scope {
        Some(0) => "scope 0 (classic: same user)".to_string(),
        Some(1) => "scope 1 (restricted: the runtime's createdump may still dump it)".into(),
        Some(2) => "scope 2 (administrators only)".into(),
        Some(3) => "scope 3 (disabled: no dumps)".into(),
        Some(n) => format!("scope {n}"),
        None => "no Yama (classic rules: same user)".into(),
    };
    lines.push(("ptrace".into(), ptrace));
    let mut perf = match env.perf_event_paranoid {
        Some(p) => format!("paranoid {p}; "),
        None => String::new(),
    };
    perf.push_str(if env.kernel_sampler.allowed {
        "kernel sampler allowed"
    } else {
        "kernel sampler refused"
    });
    if let Some(n) = &env.kernel_sampler.note {
        perf.push_str(&format!(" ({n})"));
    }
    lines.push(("Perf events".into(), perf));
    let disk = match env.free_disk_bytes {
        Some(b) => format!("{} free in {}", human_bytes(b), env.output_dir),
        None => format!("unknown free space in {}", env.output_dir),
    };
    lines.push(("Disk".into(), disk));
    if let Some(t) = &env.target {
        let mut s = format!(
            "{} {}",
            t.pid,
            if t.name.is_empty() { "?" } else { &t.name }
        );
        if let Some(v) = &t.app_version {
            s.push_str(&format!(" {v}"));
        }
        if let Some(v) = &t.runtime_version {
            s.push_str(&format!(", .NET {v}"));
        }
        if let Some(r) = t.rss_bytes {
            s.push_str(&format!(", {} resident", human_bytes(r)));
        }
        s.push_str(if t.can_attach {
            "; clrspy can attach"
        } else if !t.diagnostics_socket {
            "; no diagnostics socket found"
        } else {
            "; another user's: clrspy cannot attach"
        });
        lines.push(("Process".into(), s));
    }
    lines
}

/// Writes the plan as text.
pub(super) fn write_plan(plan: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "Environment")?;
    for (label, value) in environment_lines(&plan.environment) {
        writeln!(out, "  {label:<12} {value}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Plan for {} ({})",
        plan.symptom.name(),
        plan.symptom.describe()
    )?;
    for (i, s) in plan.steps.iter().enumerate() {
        writeln!(out)?;
        writeln!(out, "  {}. {}", i + 1, s.what)?;
        writeln!(out, "     Why:  {}", s.why)?;
        writeln!(out, "     Run:  {}", s.command)?;
        writeln!(out, "     Cost: {}", s.cost)?;
    }
    if !plan.tradeoffs.is_empty() {
        writeln!(out)?;
        writeln!(out, "Trade-offs")?;
        for t in &plan.tradeoffs {
            writeln!(out, "  - {t}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_menu_takes_numbers_and_names_and_asks_again() {
        let mut out = Vec::new();
        let got = ask_symptom(&mut &b"11\nslowness\n4\n"[..], &mut out).unwrap();
        assert_eq!(got, Some(Symptom::Hang));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("  2. memory-leak"), "{text}");
        assert_eq!(text.matches("is none of them").count(), 2, "{text}");
        let got = ask_symptom(&mut &b"leak\n"[..], &mut Vec::new()).unwrap();
        assert_eq!(got, Some(Symptom::MemoryLeak));
        assert_eq!(ask_symptom(&mut &b""[..], &mut Vec::new()).unwrap(), None);
    }
}
