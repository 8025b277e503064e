//! `clrspy completions` and `clrspy man`, read by their real consumers: bash loads the
//! completion script and completes a command and a flag; `man` renders every page; and every
//! long flag of every command is on its page (the pages come from the same definition as
//! `--help`, so a flag added to one is in the other).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use crate::common;

fn clrspy_out(args: &[&str]) -> String {
    let out = common::clrspy().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The commands `clrspy --help` lists (clap's `help` left out).
fn commands() -> Vec<String> {
    let help = clrspy_out(&["--help"]);
    help.split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        // A command's line is indented two spaces; its description's continuations more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_commands_and_flags_from_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("clrspy.bash");
    std::fs::write(&script, clrspy_out(&["completions", "bash"])).unwrap();
    // What bash offers after `clrspy rec` and after `clrspy record --dur`.
    let complete = |line: &str| {
        let words: Vec<&str> = line.split(' ').collect();
        let probe = format!(
            "source {}; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; COMP_POINT={}; _clrspy clrspy '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            words.join(" "),
            words.len() - 1,
            line.len(),
            words[words.len() - 1],
            words[words.len() - 2],
        );
        let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let commands = complete("clrspy rec");
    assert!(commands.lines().any(|l| l == "record"), "{commands}");
    let flags = complete("clrspy record --dur");
    assert!(flags.lines().any(|l| l == "--duration"), "{flags}");
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        assert!(
            clrspy_out(&["completions", shell]).contains("clrspy"),
            "{shell}"
        );
    }
    let bad = common::clrspy()
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn every_command_has_a_page_that_man_renders_with_every_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = common::clrspy()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // The commands as `clrspy --help` lists them, each with a page (and its subcommands).
    let commands = commands();
    assert!(commands.len() > 20, "{commands:?}");
    for c in &commands {
        let page = format!("clrspy-{c}.1");
        assert!(pages.contains(&page), "{page} missing: {pages:?}");
        // Every long flag `clrspy C --help` shows is on the page.
        let help = clrspy_out(&[c, "--help"]);
        let text = std::fs::read_to_string(dir.path().join(&page)).unwrap();
        for flag in help
            .split_whitespace()
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches([',', '.', ')', ':', '`', ';']))
            .map(|w| w.split(['=', '[', '<']).next().unwrap())
            .filter(|w| {
                w.len() > 2
                    && w[2..]
                        .chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch == '-')
            })
        {
            let roff = flag.replace('-', "\\-");
            assert!(
                text.contains(&roff),
                "{page}: {flag} is in --help, not on the page"
            );
        }
    }
    assert!(pages.contains(&"clrspy.1".to_string()));
    assert!(pages.contains(&"clrspy-heap-diff.1".to_string()));
    // man renders each page without a warning.
    for p in &pages {
        let out = Command::new("man")
            .args(["--warnings", "-l", "-E", "UTF-8"])
            .arg(dir.path().join(p))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        assert!(out.status.success(), "{p}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.trim().is_empty(), "{p}: {err}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("NAME"), "{p}");
    }
    // One page to standard output, a subcommand's by its words, an unknown one refused.
    assert!(clrspy_out(&["man", "heap", "diff"]).contains(".TH clrspy-heap-diff 1"));
    let bad = common::clrspy().args(["man", "nosuch"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no command `nosuch`"));
}

#[test]
fn version_names_the_build() {
    let long = clrspy_out(&["--version"]);
    for key in ["commit:", "built:", "target:", "features:", "glibc"] {
        assert!(long.contains(key), "{long}");
    }
    let short = clrspy_out(&["-V"]);
    assert!(
        short.starts_with("clrspy ") && short.lines().count() == 1,
        "{short}"
    );
}

/// The repository's root.
fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_flag_of_every_command_is_in_the_reference() {
    let reference = std::fs::read_to_string(repo().join("docs/commands.md")).unwrap();
    let commands = commands();
    let mut missing = Vec::new();
    for c in &commands {
        assert!(
            reference.contains(&format!("clrspy {c}")),
            "docs/commands.md never names `clrspy {c}`"
        );
        // Each option line of --help: its long flag, or its short one, is in the reference.
        // An option's line is indented 2 or 6 spaces (descriptions' continuations and the
        // possible values more), starts with `-X, --long` or `--long`.
        let help = clrspy_out(&[c, "--help"]);
        let options = help.lines().filter(|l| {
            let indent = l.len() - l.trim_start().len();
            indent <= 6 && l.trim_start().starts_with('-') && !l.trim_start().starts_with("- ")
        });
        for line in options.map(str::trim_start) {
            let Some(rest) = line.strip_prefix('-') else {
                continue;
            };
            let words: Vec<&str> = line
                .split([' ', ','])
                .filter(|w| w.starts_with('-'))
                .take_while(|w| w.len() > 1)
                .collect();
            if rest.starts_with('h') || words.contains(&"--help") {
                continue;
            }
            let long = words.iter().find(|w| w.starts_with("--"));
            let short = words.iter().find(|w| !w.starts_with("--"));
            let named = |w: &&&str| {
                let w = w.split(['=', '[', '<']).next().unwrap();
                [' ', '`', ',', '=', ']', '|', ')', '.', ':', '\n']
                    .iter()
                    .any(|end| reference.contains(&format!("{w}{end}")))
            };
            if !(long.is_some_and(|w| named(&w)) || short.is_some_and(|w| named(&w))) {
                missing.push(format!("{c} {line}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in docs/commands.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_readmes_two_commands_are_the_ones_that_work() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let install = "cargo install --locked --path crates/clrspy && clrspy info crates/nettrace/tests/data/perf.nettrace";
    let test = ".ci/setup && cargo test --workspace --locked";
    assert!(
        readme.contains(&format!("```sh\n{install}\n```")),
        "the install command"
    );
    assert!(
        readme.contains(&format!("```sh\n{test}\n```")),
        "the test command"
    );
    // CI runs exactly the README's test command.
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.starts_with(test)),
        ".ci/run does not run `{test}`"
    );
    // The install command's second half, with the binary cargo installs (this build).
    let out = common::clrspy()
        .current_dir(repo())
        .args(["info", "crates/nettrace/tests/data/perf.nettrace"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("NetTrace"));
    assert!(repo().join("crates/clrspy/Cargo.toml").exists());
}
