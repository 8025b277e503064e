//! Any text given to the rules file parser, as JSON and as TOML: rules or diagnostics that
//! point inside the text, never a panic.
#![no_main]
use clrspy_rules::{RuleSet, Syntax};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count().max(1);
    for syntax in [Syntax::Json, Syntax::Toml] {
        if let Err(diagnostics) = RuleSet::parse(text, syntax) {
            assert!(!diagnostics.is_empty(), "a refusal without a diagnostic");
            for d in diagnostics {
                assert!(d.line <= lines + 1, "a diagnostic past the last line");
            }
        }
    }
});
