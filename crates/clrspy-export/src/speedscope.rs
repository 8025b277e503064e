//! speedscope's file format (https://www.speedscope.app/file-format-schema.json): one shared
//! frame table, one "sampled" profile per thread plus an "all threads" profile, each sample a
//! stack of frame indexes (root first) with its weight in the metric's unit. Sampled profiles
//! carry no open/close events, so they can never be unbalanced ("Tried to leave frame ...").

use std::io::{self, Write};

use rustc_hash::FxHashMap;
use serde_json::{json, Value};

use crate::stack_unit::StackUnit;
use crate::WeightedStack;

/// Writes a speedscope JSON document of stacks weighing a metric or another [`StackUnit`].
pub(crate) fn write(
    out: &mut dyn Write,
    stacks: &[WeightedStack],
    unit: impl Into<StackUnit>,
    name: &str,
    thread_label: &dyn Fn(u64) -> String,
) -> io::Result<()> {
    let unit = unit.into();
    let mut frame_index: FxHashMap<String, usize> = FxHashMap::default();
    let mut frames: Vec<Value> = Vec::new();
    let mut index_of = |f: &str| -> usize {
        if let Some(&i) = frame_index.get(f) {
            return i;
        }
        frames.push(json!({ "name": f }));
        frame_index.insert(f.to_string(), frames.len() - 1);
        frames.len() - 1
    };
    // Per thread, in order of total weight.
    let mut by_thread: Vec<(u64, Vec<&WeightedStack>)> = Vec::new();
    for s in stacks {
        match by_thread.iter_mut().find(|(t, _)| *t == s.thread) {
            Some((_, v)) => v.push(s),
            None => by_thread.push((s.thread, vec![s])),
        }
    }
    let all_label = unit.all_label();
    let unit = if unit.is_bytes() {
        "bytes"
    } else {
        "milliseconds"
    };
    let profile =
        |label: String, list: &[&WeightedStack], index_of: &mut dyn FnMut(&str) -> usize| {
            let samples: Vec<Vec<usize>> = list
                .iter()
                .map(|s| s.frames.iter().map(|f| index_of(f)).collect())
                .collect();
            let weights: Vec<f64> = list.iter().map(|s| s.weight).collect();
            let total: f64 = weights.iter().sum();
            json!({
                "type": "sampled",
                "name": label,
                "unit": unit,
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            })
        };
    let mut profiles = Vec::new();
    let all: Vec<&WeightedStack> = stacks.iter().collect();
    profiles.push(profile(all_label, &all, &mut index_of));
    if !(by_thread.len() == 1 && by_thread[0].0 == 0) {
        for (t, list) in &by_thread {
            profiles.push(profile(thread_label(*t), list, &mut index_of));
        }
    }
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": format!("clrspy {}", env!("CARGO_PKG_VERSION")),
    });
    serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Metric;

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
