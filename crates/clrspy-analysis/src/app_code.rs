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
    /// Of `frames`, those of the app's own assemblies, not of the libraries it ships
    /// ([`own_modules`]).
    own: Arc<BTreeSet<String>>,
}

impl AppCode {
    /// The app's code: its assemblies and the names of their methods' frames.
    pub fn new(assemblies: Vec<String>, frames: BTreeSet<String>) -> AppCode {
        AppCode {
            assemblies,
            frames: Arc::new(frames),
            own: Arc::default(),
        }
    }

    /// With the frames of the app's own assemblies (of those it ships: see [`own_modules`]).
    pub(crate) fn with_own(mut self, own: BTreeSet<String>) -> AppCode {
        self.own = Arc::new(own);
        self
    }

    /// True when the frame is a method of the app's own assemblies, not of a library shipped
    /// beside them (`Newtonsoft.Json`, `Dapper`): the code its developers wrote. When that
    /// is not known (no module events), the same as [`AppCode::contains`].
    pub fn is_own(&self, name: &str) -> bool {
        if self.own.is_empty() {
            self.contains(name)
        } else {
            self.own.contains(name)
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
/// Of the app's modules ([`app_modules`]), its own: the entry assembly and those that share
/// its family (its name up to the last part, `Microsoft.eShopWeb.`) or, when that is no
/// framework's, its first part (`Contoso.` of `Contoso.Web`, `Scenarios` of `Scenarios`).
/// The rest (`Newtonsoft.Json`, `Dapper`) are libraries the app ships.
pub(crate) fn own_modules(entry: &str, modules: &[(u64, &str)]) -> HashSet<u64> {
    let app = app_modules(entry, modules);
    let lower = entry.to_ascii_lowercase();
    let family = lower
        .rfind('.')
        .map(|i| lower[..=i].to_string())
        .filter(|f| f.matches('.').count() >= 2);
    let first = entry.split('.').next().unwrap_or(entry);
    let first =
        (!is_framework_assembly(first) && !first.is_empty()).then(|| first.to_ascii_lowercase());
    modules
        .iter()
        .filter(|(id, _)| app.contains(id))
        .filter(|(_, p)| {
            let file = p
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(p)
                .to_ascii_lowercase();
            let s = file
                .strip_suffix(".dll")
                .or_else(|| file.strip_suffix(".exe"))
                .unwrap_or(&file);
            s == lower
                || family.as_deref().is_some_and(|f| s.starts_with(f))
                || first
                    .as_deref()
                    .is_some_and(|f| s == f || s.starts_with(&format!("{f}.")))
        })
        .map(|&(id, _)| id)
        .collect()
}

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
