//! speedscope's file format (https://www.speedscope.app/file-format-schema.json): one shared
//! frame table, one "sampled" profile per thread plus an "all threads" profile, each sample a
//! stack of frame indexes (root first) with its weight in the metric's unit. Sampled profiles
//! carry no open/close events, so they can never be unbalanced ("Tried to leave frame ...").

use std::io::{self, Write};

use rustc_hash::FxHashMap;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;

use crate::stack_unit::StackUnit;
use crate::WeightedStack;

#[derive(Serialize)]
struct Doc<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared<'a>,
    profiles: Vec<Profile<'a>>,
    name: &'a str,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: u32,
    exporter: String,
}

#[derive(Serialize)]
struct Shared<'a> {
    frames: Vec<Frame<'a>>,
}

#[derive(Serialize)]
struct Frame<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct Profile<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u32,
    #[serde(rename = "endValue")]
    end_value: f64,
    samples: Samples<'a>,
    weights: Weights<'a>,
}

/// A profile's samples: the frame indexes of the stacks it lists (each stack's indexes are
/// computed once and shared by the all-threads profile and its thread's).
struct Samples<'a> {
    indexes: &'a [Vec<u32>],
    members: &'a [usize],
}

impl Serialize for Samples<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.members.len()))?;
        for &i in self.members {
            seq.serialize_element(&self.indexes[i])?;
        }
        seq.end()
    }
}

struct Weights<'a> {
    stacks: &'a [WeightedStack],
    members: &'a [usize],
}

impl Serialize for Weights<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.members.len()))?;
        for &i in self.members {
            seq.serialize_element(&self.stacks[i].weight)?;
        }
        seq.end()
    }
}

/// Writes a speedscope JSON document of stacks weighing a metric or another [`StackUnit`],
/// serialized as it is written (no document tree: a kernel-sampled trace's deep, distinct
/// stacks made that tree most of the conversion's memory).
pub(crate) fn write(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    unit: impl Into<StackUnit>,
    name: &str,
    thread_label: &dyn Fn(u64) -> String,
) -> io::Result<()> {
    let unit = unit.into();
    let mut frame_index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let indexes: Vec<Vec<u32>> = stacks
        .iter()
        .map(|s| {
            s.frames
                .iter()
                .map(|f| {
                    *frame_index.entry(f).or_insert_with(|| {
                        frames.push(Frame { name: f });
                        (frames.len() - 1) as u32
                    })
                })
                .collect()
        })
        .collect();
    // Per thread, in order of first appearance (the stacks come heaviest first).
    let mut by_thread: Vec<(u64, Vec<usize>)> = Vec::new();
    let mut thread_at: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, s) in stacks.iter().enumerate() {
        let at = *thread_at.entry(s.thread).or_insert_with(|| {
            by_thread.push((s.thread, Vec::new()));
            by_thread.len() - 1
        });
        by_thread[at].1.push(i);
    }
    let all_label = unit.all_label();
    let unit = if unit.is_bytes() {
        "bytes"
    } else {
        "milliseconds"
    };
    let all: Vec<usize> = (0..stacks.len()).collect();
    let mut profiles = vec![profile(all_label, unit, stacks, &indexes, &all)];
    if !(by_thread.len() == 1 && by_thread[0].0 == 0) {
        for (t, list) in &by_thread {
            profiles.push(profile(thread_label(*t), unit, stacks, &indexes, list));
        }
    }
    finish(out, frames, profiles, name)
}

/// One sampled profile of the stacks `members` of `stacks`.
fn profile<'a>(
    label: String,
    unit: &'static str,
    stacks: &'a [WeightedStack],
    indexes: &'a [Vec<u32>],
    members: &'a [usize],
) -> Profile<'a> {
    Profile {
        kind: "sampled",
        name: label,
        unit,
        start_value: 0,
        end_value: members.iter().map(|&i| stacks[i].weight).sum(),
        samples: Samples { indexes, members },
        weights: Weights { stacks, members },
    }
}

/// Writes the document of `frames` and `profiles`.
fn finish(
    out: &mut dyn Write,
    frames: Vec<Frame<'_>>,
    profiles: Vec<Profile<'_>>,
    name: &str,
) -> io::Result<()> {
    let doc = Doc {
        schema: "https://www.speedscope.app/file-format-schema.json",
        shared: Shared { frames },
        profiles,
        name,
        active_profile_index: 0,
        exporter: format!("clrspy {}", env!("CARGO_PKG_VERSION")),
    };
    let mut w = io::BufWriter::new(&mut *out);
    serde_json::to_writer(&mut w, &doc).map_err(io::Error::from)?;
    writeln!(w)?;
    w.flush()
}

/// Writes a speedscope document of several sets of stacks (the two traces of a diff), one
/// "all threads" profile per set named by its label, over one frame table; the weights are in
/// milliseconds (or bytes) as they are.
pub(crate) fn write_sets(
    out: &mut dyn Write,
    sets: &[(String, Vec<WeightedStack>)],
    unit: impl Into<StackUnit>,
    name: &str,
) -> io::Result<()> {
    let unit = if unit.into().is_bytes() {
        "bytes"
    } else {
        "milliseconds"
    };
    let mut frame_index: FxHashMap<&str, u32> = FxHashMap::default();
    let mut frames: Vec<Frame<'_>> = Vec::new();
    let indexes: Vec<Vec<Vec<u32>>> = sets
        .iter()
        .map(|(_, stacks)| {
            stacks
                .iter()
                .map(|s| {
                    s.frames
                        .iter()
                        .map(|f| {
                            *frame_index.entry(f).or_insert_with(|| {
                                frames.push(Frame { name: f });
                                (frames.len() - 1) as u32
                            })
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let members: Vec<Vec<usize>> = sets.iter().map(|(_, s)| (0..s.len()).collect()).collect();
    let profiles = sets
        .iter()
        .zip(&indexes)
        .zip(&members)
        .map(|(((label, stacks), ix), m)| profile(label.clone(), unit, stacks, ix, m))
        .collect();
    finish(out, frames, profiles, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;
    use serde_json::{json, Value};

    #[test]
    fn one_profile_per_thread_plus_all() {
        let stacks = vec![
            WeightedStack {
                thread: 1,
                frames: vec!["Main".into(), "Burn".into()],
                weight: 3.0,
            },
            WeightedStack {
                thread: 2,
                frames: vec!["Main".into()],
                weight: 1.0,
            },
        ];
        let mut out = Vec::new();
        write(&mut out, &stacks, Metric::Cpu, "t", &|t| {
            format!("thread {t}")
        })
        .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["shared"]["frames"].as_array().unwrap().len(), 2);
        let p = v["profiles"].as_array().unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0]["samples"], json!([[0, 1], [0]]));
        assert_eq!(p[0]["endValue"], 4.0);
        assert_eq!(p[1]["name"], "thread 1");
    }
}
