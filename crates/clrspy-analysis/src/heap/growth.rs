//! Growth across a series of heap snapshots (`clrspy heap watch`, the leak workflow): which
//! types grew in an interval, the types that grew in every interval ([`grew_in_every`]), and
//! what holds a type in the last snapshot ([`holder`]).

use std::path::PathBuf;
use std::time::Duration;

use super::diff::TypeDelta;
use super::HeapModel;

/// One snapshot of a series.
#[derive(Clone, Debug)]
pub struct WatchShot {
    /// The `.gcdump` written.
    pub file: PathBuf,
    /// Its objects.
    pub objects: u64,
    /// Its bytes.
    pub bytes: u64,
    /// When it was taken, from the series' start.
    pub at: Duration,
}

/// A type that grew in every interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Growth {
    /// The type.
    pub name: String,
    /// Its object count delta in each interval.
    pub count_deltas: Vec<i64>,
    /// Its byte delta in each interval.
    pub bytes_deltas: Vec<i64>,
}

impl Growth {
    /// Objects grown over all intervals.
    pub fn count_total(&self) -> i64 {
        self.count_deltas.iter().sum()
    }

    /// Bytes grown over all intervals.
    pub fn bytes_total(&self) -> i64 {
        self.bytes_deltas.iter().sum()
    }
}

/// Whether a type grew in one interval: more objects or more bytes.
pub fn grew(d: &TypeDelta) -> bool {
    d.count_delta > 0 || d.bytes_delta > 0
}

/// The types that grew in each of `intervals` (each the diff of two consecutive snapshots), by
/// total bytes grown, then objects grown, then name. No intervals: none.
pub fn grew_in_every(intervals: &[Vec<TypeDelta>]) -> Vec<Growth> {
    let Some((first, rest)) = intervals.split_first() else {
        return Vec::new();
    };
    let mut out: Vec<Growth> = first
        .iter()
        .filter(|d| grew(d))
        .filter_map(|d| {
            let mut g = Growth {
                name: d.name.clone(),
                count_deltas: vec![d.count_delta],
                bytes_deltas: vec![d.bytes_delta],
            };
            for iv in rest {
                let e = iv.iter().find(|e| e.name == d.name && grew(e))?;
                g.count_deltas.push(e.count_delta);
                g.bytes_deltas.push(e.bytes_delta);
            }
            Some(g)
        })
        .collect();
    out.sort_by(|a, b| {
        b.bytes_total()
            .cmp(&a.bytes_total())
            .then(b.count_total().cmp(&a.count_total()))
            .then(a.name.cmp(&b.name))
    });
    out
}

/// The first path from a root to `name` in `model`, as its steps (none without a model or a
/// path).
pub fn holder(model: Option<&HeapModel>, name: &str) -> Vec<String> {
    model
        .and_then(|m| m.paths_to_type(name, 1).into_iter().next())
        .map(|p| p.steps)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &str, count_delta: i64, bytes_delta: i64) -> TypeDelta {
        TypeDelta {
            name: name.into(),
            count_old: 100,
            count_new: (100 + count_delta) as u64,
            count_delta,
            bytes_old: 1000,
            bytes_new: (1000 + bytes_delta) as u64,
            bytes_delta,
        }
    }

    #[test]
    fn only_types_that_grew_in_every_interval_are_kept_by_total_bytes() {
        let intervals = vec![
            vec![
                d("A", 10, 240),
                d("B", 5, 500),
                d("C", 1, 8),
                d("D", -3, -30),
            ],
            vec![d("A", 20, 480), d("B", 0, 0), d("C", 2, 16), d("D", 4, 40)],
            vec![d("A", 1, 24), d("C", 0, 8), d("B", 1, 10)],
        ];
        let g = grew_in_every(&intervals);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["A", "C"]);
        assert_eq!(g[0].count_deltas, [10, 20, 1]);
        assert_eq!(g[0].bytes_deltas, [240, 480, 24]);
        assert_eq!(g[0].count_total(), 31);
        assert_eq!(g[1].bytes_total(), 32);
    }

    #[test]
    fn no_interval_no_growth() {
        assert!(grew_in_every(&[]).is_empty());
        assert!(grew_in_every(&[vec![d("A", 0, 0)]]).is_empty());
    }

    #[test]
    fn ties_sort_by_objects_then_name() {
        let g = grew_in_every(&[vec![d("B", 1, 8), d("A", 1, 8), d("C", 2, 8)]]);
        let names: Vec<&str> = g.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["C", "A", "B"]);
    }

    #[test]
    fn no_model_holds_nothing() {
        assert!(holder(None, "A").is_empty());
    }
}
