//! Code the runtime generated while recording: the methods of namespace `dynamicClass` it
//! compiled (`Method/LoadVerbose` events), which are compiled expression trees
//! (`lambda_method…`), compiled regular expressions (`Regex1_Scan`, …) and other dynamic
//! methods. An app that builds them once compiles a few at its start; one that builds them
//! per call compiles them all the time (the findings' `compiled-per-call` reads this).

/// Counts of the generated methods compiled while recording, by kind, with when the first
/// and last came.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GeneratedCode {
    /// Compiled expression trees (`dynamicClass.lambda_method…`).
    pub lambdas: u64,
    /// Compiled regular expressions (`dynamicClass.Regex…`).
    pub regexes: u64,
    /// Other dynamic methods (`DynamicMethod` of the app or a library).
    pub other: u64,
    /// When the first was compiled, ns (trace time).
    pub first_ns: Option<i64>,
    /// When the last was.
    pub last_ns: Option<i64>,
    /// How many were compiled in each second of the trace (second 0 is the first's):
    /// whether they came all along or in one burst at the start.
    pub per_second: Vec<u32>,
}

/// The most seconds [`GeneratedCode::per_second`] counts (an hour): a longer trace's later
/// ones are not told apart.
const MAX_SECONDS: usize = 3600;

impl GeneratedCode {
    /// Counts one generated method named `name` (without its namespace), compiled at `ts_ns`.
    pub(crate) fn add(&mut self, name: clr_events::Utf16Str<'_>, ts_ns: i64) {
        let starts = |prefix: &str| {
            let mut head = name.chars();
            prefix.chars().all(|c| head.next() == Some(c))
        };
        if starts("lambda_method") {
            self.lambdas += 1;
        } else if starts("Regex") {
            self.regexes += 1;
        } else {
            self.other += 1;
        }
        let first = *self.first_ns.get_or_insert(ts_ns);
        self.last_ns = Some(self.last_ns.map_or(ts_ns, |l| l.max(ts_ns)));
        let second = usize::try_from((ts_ns - first).max(0) / 1_000_000_000).unwrap_or(usize::MAX);
        let second = second.min(MAX_SECONDS - 1);
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] = self.per_second[second].saturating_add(1);
    }

    /// Every generated method counted.
    pub fn total(&self) -> u64 {
        self.lambdas + self.regexes + self.other
    }

    /// Of the `seconds` the trace lasted (or, when longer, from its start to the last
    /// compile), the share in which some were compiled (1.0: every second; a burst at the
    /// start, a framework warming up, gives a small share of a trace, whatever came after).
    pub fn seconds_with_some(&self, seconds: f64) -> f64 {
        let span = self.per_second.len().max(seconds.ceil().max(0.0) as usize);
        if span == 0 {
            return 0.0;
        }
        let some = self.per_second.iter().filter(|&&n| n > 0).count();
        some as f64 / span as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn kinds_and_seconds_are_told_apart() {
        let mut g = GeneratedCode::default();
        let lambda = utf16("lambda_method12");
        let regex = utf16("Regex3_Scan");
        let other = utf16("IL_STUB_X");
        g.add(clr_events::Utf16Str::new(&lambda), 1_000_000_000);
        g.add(clr_events::Utf16Str::new(&lambda), 1_500_000_000);
        g.add(clr_events::Utf16Str::new(&regex), 3_200_000_000);
        g.add(clr_events::Utf16Str::new(&other), 4_900_000_000);
        assert_eq!((g.lambdas, g.regexes, g.other, g.total()), (2, 1, 1, 4));
        assert_eq!(g.per_second, vec![2, 0, 1, 1]);
        assert_eq!(g.seconds_with_some(0.0), 0.75);
        assert_eq!(g.seconds_with_some(6.0), 0.5);
        assert_eq!(
            (g.first_ns, g.last_ns),
            (Some(1_000_000_000), Some(4_900_000_000))
        );
    }
}
