//! `clrspy top` on a running workload: under tmux (a real terminal) the hot method is the
//! first row within 3 s, `q` and Ctrl+C leave the alternate screen and the terminal sane;
//! without a terminal it prints a snapshot every interval, and a launched program's output
//! stays out of clrspy's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{clrspy, live, machine, start, workloads};

/// The workload's hot method (Scenarios.cs: `Cpu.Burn`, alone on its thread).
const HOT: &str = "Workloads.Cpu.Burn";

/// A detached tmux session of a fixed size running a plain shell, killed when dropped.
struct Tmux(String);

impl Tmux {
    /// None when tmux is missing and CLRSPY_ALLOW_SKIP=1 (the test is skipped; it fails
    /// otherwise).
    fn start(name: &str) -> Option<Tmux> {
        if !common::needs(&[common::Need::Tmux]) {
            return None;
        }
        let ok = Command::new("tmux")
            .args(["new-session", "-d", "-s", name, "-x", "120", "-y", "30"])
            .args(["bash", "--norc", "--noprofile"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session failed");
        Some(Tmux(name.to_string()))
    }

    fn keys(&self, keys: &[&str]) {
        let ok = Command::new("tmux")
            .args(["send-keys", "-t", &self.0])
            .args(keys)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux send-keys failed");
    }

    fn pane(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.0])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// True while the pane shows the alternate screen (a full-screen program).
    fn alternate(&self) -> bool {
        let out = Command::new("tmux")
            .args(["display-message", "-p", "-t", &self.0, "#{alternate_on}"])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Waits up to `limit` for `f` to hold; how long it took.
    fn wait(&self, limit: Duration, f: impl Fn(&Tmux) -> bool) -> Option<Duration> {
        let t = Instant::now();
        while t.elapsed() < limit {
            if f(self) {
                return Some(t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.0])
            .status();
    }
}

/// The first table row of a screen or snapshot: the line after the column titles.
fn first_row(text: &str) -> Option<&str> {
    let mut lines = text.lines();
    lines.find(|l| l.trim_start().starts_with("EXCL%"))?;
    lines.next()
}

/// `icanon` and `echo` on (not `-icanon`, `-echo`) in `stty -a`'s words.
fn sane(stty: &str) -> bool {
    let words: Vec<&str> = stty.split_whitespace().collect();
    words.contains(&"icanon") && words.contains(&"echo")
}

fn full_screen_run(tmux: &Tmux, pid: u32, quit: &str) {
    let bin = env!("CARGO_BIN_EXE_clrspy");
    tmux.keys(&[&format!("'{bin}' top -p {pid}"), "Enter"]);
    let hot_first = |t: &Tmux| first_row(&t.pane()).is_some_and(|r| r.contains(HOT));
    let took = tmux.wait(Duration::from_secs(3), hot_first);
    assert!(
        took.is_some(),
        "{HOT} is not the first row within 3 s:\n{}",
        tmux.pane()
    );
    eprintln!("the hot method was the first row after {took:?}");
    assert!(tmux.alternate(), "top is not on the alternate screen");
    let pane = tmux.pane();
    for want in ["CPU ", "GC ", "alloc ", "threads ", "q quit"] {
        assert!(pane.contains(want), "no {want:?} on the screen:\n{pane}");
    }
    tmux.keys(&[quit]);
    let left = tmux.wait(Duration::from_secs(5), |t| !t.alternate());
    assert!(left.is_some(), "still on the alternate screen after {quit}");
    let pane = tmux.pane();
    assert!(!pane.contains("EXCL%"), "a TUI frame is left:\n{pane}");
    tmux.keys(&["clear; stty -a", "Enter"]);
    let ok = tmux.wait(Duration::from_secs(3), |t| sane(&t.pane()));
    assert!(ok.is_some(), "the terminal is not sane:\n{}", tmux.pane());
}

#[test]
fn top_shows_the_hot_method_first_under_tmux_and_restores_the_terminal() {
    if !live() {
        return;
    }
    let _m = machine();
    let Some(tmux) = Tmux::start(&format!("clrspy-top-{}", std::process::id())) else {
        return;
    };
    let w = start("cpu", &["--seconds", "60"]);
    full_screen_run(&tmux, w.1, "q");
    // Ctrl+C is a key in raw mode: it quits the same way.
    tmux.keys(&["clear", "Enter"]);
    full_screen_run(&tmux, w.1, "C-c");
    drop(w);
    // The target's exit ends the view the same way.
    tmux.keys(&["clear", "Enter"]);
    let short = start("cpu", &["--seconds", "4"]);
    let bin = env!("CARGO_BIN_EXE_clrspy");
    tmux.keys(&[&format!("'{bin}' top -p {}", short.1), "Enter"]);
    let on = tmux.wait(Duration::from_secs(3), Tmux::alternate);
    assert!(on.is_some(), "top did not start:\n{}", tmux.pane());
    let left = tmux.wait(Duration::from_secs(15), |t| !t.alternate());
    assert!(
        left.is_some(),
        "top did not end with its target:\n{}",
        tmux.pane()
    );
    let said = tmux.wait(Duration::from_secs(3), |t| t.pane().contains("exited"));
    assert!(said.is_some(), "no word of the exit:\n{}", tmux.pane());
    tmux.keys(&["stty -a", "Enter"]);
    let ok = tmux.wait(Duration::from_secs(3), |t| sane(&t.pane()));
    assert!(ok.is_some(), "the terminal is not sane:\n{}", tmux.pane());
}

/// The snapshots of a plain-text run: each starts with its header line.
fn snapshots(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|s| s.starts_with("clrspy top: "))
        .collect()
}

#[test]
fn without_a_terminal_top_prints_snapshots_with_the_hot_method_first() {
    if !live() {
        return;
    }
    let _m = machine();
    let w = start("cpu", &["--seconds", "60"]);
    let out = clrspy()
        .args([
            "top",
            "-p",
            &w.1.to_string(),
            "--duration",
            "6s",
            "--window",
            "2500ms",
            "--top",
            "5",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run clrspy top");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snaps = snapshots(&text);
    assert!(snaps.len() >= 3, "fewer than 3 snapshots in 4 s:\n{text}");
    for s in &snaps {
        // The header line, the titles, at most 5 rows.
        assert!(s.lines().count() <= 7, "more than --top rows:\n{s}");
    }
    let last = snaps.last().copied().unwrap_or_default();
    assert!(
        first_row(last).is_some_and(|r| r.contains(HOT)),
        "{HOT} is not first in the last snapshot:\n{last}"
    );
    // CPU-bound on one thread: the process uses a good part of a core.
    let header = last.lines().next().unwrap_or_default();
    let cpu: f64 = header
        .split("CPU ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    assert!(cpu > 20.0, "process CPU {cpu} % in {header}");
    // Once the session is longer than the window, each table spans the window asked for,
    // not the window and up to a refresh more.
    let spans: Vec<f64> = snaps
        .iter()
        .filter_map(|s| {
            s.split("window ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|v| v.parse().ok())
        })
        .collect();
    assert_eq!(spans.len(), snaps.len(), "{text}");
    assert!(spans.iter().all(|&s| s <= 2.55), "{spans:?}");
    assert!(spans.last().is_some_and(|&s| s >= 2.45), "{spans:?}");
}

#[test]
fn top_of_a_launched_program_ends_with_it_and_keeps_its_output_apart() {
    if !live() {
        return;
    }
    let _m = machine();
    let out = clrspy()
        .args(["top", "--refresh", "500ms", "--"])
        .arg("dotnet")
        .arg(workloads())
        .args(["cpu", "--seconds", "3"])
        .timeout(Duration::from_secs(60))
        .output()
        .expect("run clrspy top");
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}\n{err}");
    // The program's own lines went to /dev/null.
    assert!(!text.contains("ready pid="), "{text}");
    assert!(!text.contains("burned seconds"), "{text}");
    assert!(err.contains("exited"), "{err}");
    let snaps = snapshots(&text);
    let last = snaps.last().copied().unwrap_or_default();
    assert!(
        first_row(last).is_some_and(|r| r.contains(HOT)),
        "{HOT} is not first in the last snapshot:\n{text}"
    );
}
