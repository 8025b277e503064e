//! Which code is the app's own by assembly: the entry assembly and the assemblies loaded from
//! its folder (from the trace's module events), whatever their namespace — Microsoft's sample
//! and reference apps live under `Microsoft.*`. Used by the symbols (which frames are the
//! app's) and by the just-my-code grouping.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

/// The app's own code by assembly: the frames of methods whose module is one of the app's
/// assemblies (`app_modules`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppCode {
    /// The app's assemblies' file names, sorted.
    pub assemblies: Vec<String>,
    frames: Arc<BTreeSet<String>>,
}

impl AppCode {
    /// The app's code: its assemblies and the names of their methods' frames.
    pub fn new(assemblies: Vec<String>, frames: BTreeSet<String>) -> AppCode {
        AppCode {
            assemblies,
            frames: Arc::new(frames),
        }
    }

    /// True when the frame of this name is a method of the app's assemblies.
    pub fn contains(&self, name: &str) -> bool {
        self.frames.contains(name)
    }

    /// True when no frame is known to be the app's by assembly.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

/// True for an assembly (file stem) that ships with .NET or a framework package by its name.
fn is_framework_assembly(stem: &str) -> bool {
    [
        "System",
        "Microsoft",
        "netstandard",
        "mscorlib",
        "WindowsBase",
    ]
    .iter()
    .any(|p| stem == *p || stem.starts_with(&format!("{p}.")))
}

/// The app's modules among `modules` (module id, IL file path): the entry assembly (the file
/// whose stem is `entry`, e.g. `WebApp` for `WebApp.dll`), and the assemblies loaded from the
/// same folder, except those whose file name is a framework's (`System.*`, `Microsoft.*`: a
/// self-contained app's runtime, NuGet packages such as Entity Framework Core) unless it
/// shares the entry assembly's name up to its last part (`Microsoft.eShopWeb.Infrastructure`
/// beside `Microsoft.eShopWeb.Web`). Empty when no module is the entry assembly.
pub(crate) fn app_modules(entry: &str, modules: &[(u64, &str)]) -> HashSet<u64> {
    fn split(path: &str) -> (&str, &str) {
        match path.rfind(['/', '\\']) {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => ("", path),
        }
    }
    fn stem(file: &str) -> &str {
        let lower = file.to_ascii_lowercase();
        if lower.ends_with(".dll") || lower.ends_with(".exe") {
            &file[..file.len() - 4]
        } else {
            file
        }
    }
    let mut out = HashSet::new();
    let Some(dir) = modules.iter().find_map(|&(_, p)| {
        let (dir, file) = split(p);
        stem(file).eq_ignore_ascii_case(entry).then_some(dir)
    }) else {
        return out;
    };
    // The entry's family: its name up to the last dot, when that has two parts or more.
    let family = entry
        .rfind('.')
        .map(|i| &entry[..=i])
        .filter(|f| f.matches('.').count() >= 2);
    for &(id, p) in modules {
        let (d, file) = split(p);
        if d != dir {
            continue;
        }
        let s = stem(file);
        let mine = s.eq_ignore_ascii_case(entry)
            || !is_framework_assembly(s)
            || family.is_some_and(|f| s.starts_with(f));
        if mine {
            out.insert(id);
        }
    }
    out
}
