//! A progress bar on stderr for long reads: shown only on a terminal, and only once a read has
//! taken more than a second.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Progress over a byte range.
pub struct Progress {
    total: u64,
    started: Instant,
    bar: Option<ProgressBar>,
    enabled: bool,
    calls: u32,
}

impl Progress {
    /// Progress over `total` bytes.
    pub fn new(total: u64) -> Progress {
        Progress {
            total,
            started: Instant::now(),
            bar: None,
            enabled: std::io::stderr().is_terminal(),
            calls: 0,
        }
    }

    /// Reports the position. Cheap: checks the clock every 4096 calls.
    #[inline]
    pub fn update(&mut self, pos: u64) {
        if !self.enabled {
            return;
        }
        self.calls = self.calls.wrapping_add(1);
        if !self.calls.is_multiple_of(4096) {
            return;
        }
        if self.bar.is_none() {
            if self.started.elapsed() < Duration::from_secs(1) {
                return;
            }
            let bar = ProgressBar::new(self.total).with_position(pos);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec} {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
