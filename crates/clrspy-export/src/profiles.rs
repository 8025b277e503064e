//! `clrspy record --list-profiles`: the recording profiles clr-events declares, in words — each
//! with its aliases, what it is for and the providers it turns on (keywords, level, arguments).

use std::io::{self, Write};

use clr_events::profiles::PROFILES;
use clr_events::provider_spec::parse_providers;

/// Writes every profile: its name and aliases, its description, then one line per provider.
pub fn write_profiles(out: &mut dyn Write) -> io::Result<()> {
    for p in PROFILES {
        let aliases = if p.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also: {})", p.aliases.join(", "))
        };
        writeln!(out, "{}{aliases}\n    {}", p.name, p.description)?;
        for q in parse_providers(p.providers).unwrap_or_default() {
            let args = q
                .arguments
                .as_deref()
                .map(|a| format!(" args: {} chars", a.len()))
                .unwrap_or_default();
            writeln!(
                out,
                "    {}  keywords 0x{:x}  level {}{args}",
                q.name, q.keywords, q.level
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_listed_with_its_providers() {
        let mut out = Vec::new();
        write_profiles(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for p in PROFILES {
            assert!(
                text.lines().any(|l| l.starts_with(p.name)),
                "{} missing",
                p.name
            );
        }
        assert!(text.contains("  keywords 0x"), "{text}");
    }
}
