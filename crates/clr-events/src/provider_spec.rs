//! Provider specs the way dotnet-trace users write them: `--providers
//! Name[:Keywords[:Level[:Key=Value;...]]]` (keywords in hex or by name joined with `+`,
//! double-quoted argument values may hold commas), `--clrevents gc+exception` with
//! `--clrevents-level` (informational by default, as dotnet-trace), and `--profile NAME` (the
//! named [`profiles`](crate::profiles)). Later sources override earlier ones for the same
//! provider: profile, then `--providers`, then `--clrevents`. Errors are one line for a user.
//!
//! ```
//! use clr_events::provider_spec::parse_provider;
//! let p = parse_provider("Microsoft-Windows-DotNETRuntime:gc+exception:4").unwrap();
//! assert_eq!((p.keywords, p.level), (0x8001, 4));
//! ```

use crate::profiles::{find_profile, keyword_names, PROFILES};

/// One provider to enable: what a spec says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSpec {
    /// Provider name, e.g. `Microsoft-Windows-DotNETRuntime`.
    pub name: String,
    /// Keyword mask (all bits when the spec gives none).
    pub keywords: u64,
    /// Level: 0 log always .. 5 verbose (verbose when the spec gives none).
    pub level: u32,
    /// Filter arguments (`Key=Value;Key2=Value2`), as written.
    pub arguments: Option<String>,
}

type Provider = ProviderSpec;

/// Parses a level: 0-5 or a name.
fn parse_level(l: &str, spec: &str) -> Result<u32, String> {
    match l.trim().to_ascii_lowercase().as_str() {
        "logalways" => Ok(0),
        "critical" => Ok(1),
        "error" => Ok(2),
        "warning" => Ok(3),
        "informational" | "info" => Ok(4),
        "verbose" => Ok(5),
        n => n
            .parse()
            .ok()
            .filter(|v: &u32| *v <= 5)
            .ok_or_else(|| format!("level '{l}' in '{spec}' is not 0-5 or a level name")),
    }
}

/// Parses keywords: empty or `*` = all, hex (with or without 0x), or names joined by `+`/`|`.
fn parse_keywords(provider: &str, k: &str, spec: &str) -> Result<u64, String> {
    let k = k.trim();
    if k.is_empty() || k == "*" {
        return Ok(u64::MAX);
    }
    let hex = k
        .strip_prefix("0x")
        .or_else(|| k.strip_prefix("0X"))
        .unwrap_or(k);
    if let Ok(v) = u64::from_str_radix(hex, 16) {
        return Ok(v);
    }
    let Some(table) = keyword_names(provider) else {
        return Err(format!(
            "keywords '{k}' in '{spec}': clrspy knows no keyword names for {provider}; use a hex mask"
        ));
    };
    let mut mask = 0u64;
    for name in k.split(['+', '|']).map(str::trim) {
        match table.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)) {
            Some((_, v)) => mask |= v,
            None => {
                let close: Vec<&str> = table
                    .iter()
                    .map(|(n, _)| *n)
                    .filter(|n| {
                        !name.is_empty()
                            && (n.contains(&name.to_ascii_lowercase()[..name.len().min(3)]))
                    })
                    .take(5)
                    .collect();
                return Err(format!(
                    "unknown keyword '{name}' for {provider}{}",
                    if close.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean {}?)", close.join(", "))
                    }
                ));
            }
        }
    }
    Ok(mask)
}

/// Parses one `Name[:Keywords[:Level[:Args]]]` spec.
pub fn parse_provider(spec: &str) -> Result<Provider, String> {
    let mut parts = spec.splitn(4, ':');
    let name = parts.next().unwrap_or_default().trim();
    if name.is_empty() {
        return Err(format!("provider spec '{spec}' has no provider name"));
    }
    let keywords = match parts.next() {
        None => u64::MAX,
        Some(k) => parse_keywords(name, k, spec)?,
    };
    let level = match parts.next().map(str::trim) {
        None | Some("") => 5,
        Some(l) => parse_level(l, spec)?,
    };
    let arguments = parts.next().map(str::to_string).filter(|a| !a.is_empty());
    Ok(Provider {
        name: name.to_string(),
        keywords,
        level,
        arguments,
    })
}

/// Splits a comma-separated provider list, keeping commas inside double quotes.
fn split_list(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, c) in list.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out.into_iter().filter(|s| !s.trim().is_empty()).collect()
}

/// Adds `p`, replacing a provider of the same name.
fn merge(into: &mut Vec<Provider>, p: Provider) {
    into.retain(|q| !q.name.eq_ignore_ascii_case(&p.name));
    into.push(p);
}

/// Parses a comma-separated provider list (later entries replace earlier ones).
pub fn parse_providers(list: &str) -> Result<Vec<Provider>, String> {
    let mut out = Vec::new();
    for s in split_list(list) {
        merge(&mut out, parse_provider(s)?);
    }
    Ok(out)
}

/// The providers of `--profile`, `--providers` and `--clrevents` together; with none of them,
/// the cpu profile.
pub fn resolve(
    profile: Option<&str>,
    providers: Option<&str>,
    clrevents: Option<&str>,
    clrevents_level: Option<&str>,
) -> Result<Vec<Provider>, String> {
    let mut out = Vec::new();
    let profile = profile.or((providers.is_none() && clrevents.is_none()).then_some("cpu"));
    if let Some(name) = profile {
        let p = find_profile(name).ok_or_else(|| {
            format!(
                "unknown profile '{name}' (known: {})",
                PROFILES
                    .iter()
                    .map(|p| p.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        for q in parse_providers(p.providers)? {
            merge(&mut out, q);
        }
    }
    if let Some(list) = providers {
        for q in parse_providers(list)? {
            merge(&mut out, q);
        }
    }
    if let Some(k) = clrevents {
        let spec = format!(
            "{}:{k}:{}",
            crate::RUNTIME_PROVIDER,
            clrevents_level.unwrap_or("4")
        );
        merge(&mut out, parse_provider(&spec)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let p = parse_provider("Microsoft-Windows-DotNETRuntime:0x1:4").unwrap();
        assert_eq!((p.keywords, p.level), (1, 4));
        let p = parse_provider("My-Source").unwrap();
        assert_eq!((p.keywords, p.level), (u64::MAX, 5));
        let p = parse_provider("A:ff:Verbose:Key=V;K2=W").unwrap();
        assert_eq!(
            (p.keywords, p.level, p.arguments.as_deref()),
            (0xff, 5, Some("Key=V;K2=W"))
        );
        let p =
            parse_provider("Microsoft-Windows-DotNETRuntime:gc+Exception|contention:informational")
                .unwrap();
        assert_eq!((p.keywords, p.level), (0xC001, 4));
        assert!(parse_provider(":1:2").is_err());
        assert!(parse_provider("A:zz").unwrap_err().contains("hex mask"));
        assert!(parse_provider("Microsoft-Windows-DotNETRuntime:gcc")
            .unwrap_err()
            .contains("unknown keyword"));
        assert!(parse_provider("A:1:9").is_err());
        for odd in [
            "",
            ":",
            ":::",
            "A:0x:",
            "A:gc+",
            "é:ü:ß:ø",
            "A:1:2:3:4",
            ",,,",
        ] {
            let _ = parse_providers(odd);
        }
    }

    #[test]
    fn lists_profiles_and_clrevents() {
        let l = parse_providers("A:1:4,B:2:5:F=\"x,y\",A:3:5").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].name, "B");
        assert_eq!(l[0].arguments.as_deref(), Some("F=\"x,y\""));
        assert_eq!(l[1].keywords, 3);
        for p in PROFILES {
            assert!(parse_providers(p.providers).is_ok(), "{}", p.name);
        }
        let r = resolve(None, None, None, None).unwrap();
        assert_eq!(r.len(), 2); // cpu
        let r = resolve(
            Some("gc-collect"),
            Some("Microsoft-Windows-DotNETRuntime:0x8000:4"),
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            r.iter()
                .find(|p| p.name == "Microsoft-Windows-DotNETRuntime")
                .unwrap()
                .keywords,
            0x8000
        );
        let r = resolve(None, None, Some("gc+exception"), Some("informational")).unwrap();
        assert_eq!((r.len(), r[0].keywords, r[0].level), (1, 0x8001, 4));
        assert!(resolve(Some("bogus"), None, None, None)
            .unwrap_err()
            .contains("known: cpu"));
    }
}
