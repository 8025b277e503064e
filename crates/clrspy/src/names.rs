//! Matching events by the names users know (`--provider`, `--event`): the names themselves
//! come from clrspy-analysis' inventory.

pub use clrspy_analysis::inventory::event_name;

/// Case-insensitive match of `pattern` against `text`; a trailing `*` matches a prefix.
pub fn matches(pattern: &str, text: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => text
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix)),
        None => pattern.eq_ignore_ascii_case(text),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn patterns() {
        assert!(super::matches("gc/start", "GC/Start"));
        assert!(super::matches("GC/*", "GC/Start"));
        assert!(!super::matches("GC/", "GC/Start"));
        assert!(super::matches("*", "anything"));
    }
}
