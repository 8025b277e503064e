//! Frames named after the app's methods the JIT inlined into them: a controller action
//! inlined into MVC's compiled invoker reads `dynamicClass.lambda_method3 [inlines
//! App.HomeController.Index]`, so the action's cost is found under its own name in every
//! report and view, and the just-my-code grouping keeps such a frame as the app's.
//!
//! The recorder follows the JIT's inlining (clrspy's `Inlined` events, the app's inlinees
//! only). The events name methods, not code versions: a method compiled twice (Tier0, then
//! optimized) is labelled with what its optimized code inlines, which is the code that runs
//! once it is hot.

use rustc_hash::FxHashMap;

/// How a label starts, after the method's own name.
const MARK: &str = " [inlines ";
/// The namespace the runtime gives generated methods (compiled expressions, dynamic methods).
pub(crate) const LAMBDAS: &str = "dynamicClass";
/// The most inlinees a label names (the rest are counted).
const SHOWN: usize = 2;

/// The inlinings of a trace.
#[derive(Clone, Debug, Default)]
pub(crate) struct Inlinings {
    /// The recorder followed the JIT's inlining (its mark is in the trace).
    pub(crate) followed: bool,
    /// Inlinees by compiled method, in the order first seen.
    by_method: FxHashMap<String, Vec<String>>,
    /// The generated methods (`dynamicClass.…`) the runtime compiled while recording, by
    /// the hash of their frame name (an app compiling expressions per request makes
    /// hundreds of thousands: their names would be most of a report's memory).
    live_lambdas: rustc_hash::FxHashSet<u64>,
    /// A buffer for the names of generated methods as they come.
    scratch: String,
}

fn name_hash(frame: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    frame.hash(&mut h);
    h.finish()
}

impl Inlinings {
    /// Records one `Inlined` event (an empty `method`: the mark).
    pub(crate) fn add(&mut self, method: String, inlinee: String) {
        if method.is_empty() {
            self.followed = true;
            return;
        }
        let list = self.by_method.entry(method).or_default();
        if !list.contains(&inlinee) {
            list.push(inlinee);
        }
    }

    /// The frame name of method `name` (as [`clr_events::method_names::join`] names it):
    /// labelled with the app's methods inlined into it, or as it is.
    pub(crate) fn label(&self, name: String) -> String {
        let Some(list) = self.by_method.get(&name) else {
            return name;
        };
        let shown = list[..list.len().min(SHOWN)].join(", ");
        match list.len().saturating_sub(SHOWN) {
            0 => format!("{name}{MARK}{shown}]"),
            more => format!("{name}{MARK}{shown} and {more} more]"),
        }
    }

    /// Notes a generated method (namespace `dynamicClass`) compiled while recording (a
    /// `Method/LoadVerbose`): what it inlines is in the trace when the inlining was followed.
    pub(crate) fn lambda_compiled_live(&mut self, name: clr_events::Utf16Str<'_>) {
        // The frame name (`dynamicClass.lambda_method12`) built in a buffer kept for the
        // next: hundreds of thousands of these come in a trace.
        let frame = &mut self.scratch;
        frame.clear();
        frame.push_str(LAMBDAS);
        frame.push('.');
        frame.extend(name.chars());
        self.live_lambdas.insert(name_hash(frame));
    }

    /// True when the generated method named `frame` was compiled while recording.
    pub(crate) fn was_compiled_live(&self, frame: &str) -> bool {
        self.live_lambdas.contains(&name_hash(frame))
    }

    /// The labels alone (what [`Inlinings::label`] reads), for a copy to be filtered.
    pub(crate) fn labels(&self) -> Inlinings {
        Inlinings {
            followed: self.followed,
            by_method: self.by_method.clone(),
            live_lambdas: Default::default(),
            scratch: String::new(),
        }
    }

    /// Keeps only the inlinees of the app's own types (`app_types`: the outermost declaring
    /// types of the methods loaded from the app's assemblies): the recorder tells the
    /// framework by namespace, and some framework types have none
    /// (`InteropErrorExtensions`, inlined into `SocketException`). A nested type counts by
    /// its outermost type (`Program+<>c`), and a type of an app namespace by it
    /// (`App.Controllers.HomeController` when `App.Startup` is the app's). Nothing is
    /// dropped when the app's types are not known.
    pub(crate) fn keep_app_types(&mut self, app_types: &rustc_hash::FxHashSet<&str>) {
        if app_types.is_empty() {
            return;
        }
        let roots: rustc_hash::FxHashSet<&str> = app_types
            .iter()
            .filter_map(|t| t.split_once('.').map(|(root, _)| root))
            .collect();
        let is_app = |inlinee: &str| {
            let ty = inlinee.rsplit_once('.').map_or("", |(ty, _)| ty);
            let outer = ty.split('+').next().unwrap_or(ty);
            app_types.contains(outer)
                || outer
                    .split_once('.')
                    .is_some_and(|(root, _)| roots.contains(root))
        };
        for list in self.by_method.values_mut() {
            list.retain(|i| is_app(i));
        }
        self.by_method.retain(|_, list| !list.is_empty());
    }

    /// True when no inlining was recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_method.is_empty()
    }
}

/// The inlinees a frame's label names (empty for a frame without one).
pub(crate) fn inlinees(frame: &str) -> Vec<&str> {
    let Some(list) = frame
        .find(MARK)
        .and_then(|i| frame[i + MARK.len()..].strip_suffix(']'))
    else {
        return Vec::new();
    };
    let list = match list.rfind(" and ") {
        Some(i) if list.ends_with(" more") => &list[..i],
        _ => list,
    };
    list.split(", ").filter(|n| !n.is_empty()).collect()
}

/// True when `frame` names a method the JIT compiled before the recording followed its
/// inlining and which often inlines the app's code: a method MVC or a compiled expression
/// generated (`dynamicClass.lambda_method…`) without a label.
pub(crate) fn is_unlabelled_lambda(frame: &str) -> bool {
    frame.starts_with("dynamicClass.lambda_method") && !frame.contains(MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apps_types_are_kept_when_they_are_known() {
        let mut i = Inlinings::default();
        let lambda = "dynamicClass.lambda_method1";
        i.add(lambda.into(), "Program+<>c.<<Main>$>b__0_0".into());
        i.add(lambda.into(), "InteropErrorExtensions.Info".into());
        i.add(lambda.into(), "App.Controllers.HomeController.Index".into());
        i.add(
            "System.Net.Sockets.SocketException..ctor".into(),
            "InteropErrorExtensions.Info".into(),
        );
        let mut known = i.clone();
        known.keep_app_types(&["Program", "App.Startup"].into_iter().collect());
        assert_eq!(
            known.label(lambda.into()),
            "dynamicClass.lambda_method1 [inlines Program+<>c.<<Main>$>b__0_0, App.Controllers.HomeController.Index]"
        );
        let ctor = "System.Net.Sockets.SocketException..ctor";
        assert_eq!(known.label(ctor.into()), ctor);
        // Unknown app types: nothing dropped.
        let before = i.label(ctor.into());
        i.keep_app_types(&Default::default());
        assert_eq!(i.label(ctor.into()), before);
    }

    #[test]
    fn a_label_names_two_inlinees_and_counts_the_rest() {
        let mut i = Inlinings::default();
        assert!(!i.followed && i.is_empty());
        i.add(String::new(), String::new());
        assert!(i.followed && i.is_empty());
        let lambda = "dynamicClass.lambda_method3";
        i.add(lambda.into(), "App.DiagController.HighCpu".into());
        i.add(lambda.into(), "App.DiagController.HighCpu".into());
        let one = i.label(lambda.into());
        assert_eq!(
            one,
            "dynamicClass.lambda_method3 [inlines App.DiagController.HighCpu]"
        );
        assert_eq!(inlinees(&one), ["App.DiagController.HighCpu"]);
        i.add(lambda.into(), "App.Work.Step".into());
        i.add(lambda.into(), "App.Work.Other".into());
        i.add(lambda.into(), "App.Work.Last".into());
        let many = i.label(lambda.into());
        assert!(many.ends_with("[inlines App.DiagController.HighCpu, App.Work.Step and 2 more]"));
        assert_eq!(
            inlinees(&many),
            ["App.DiagController.HighCpu", "App.Work.Step"]
        );
        assert_eq!(i.label("App.Other".into()), "App.Other");
        assert!(inlinees("App.Other").is_empty());
        assert!(!is_unlabelled_lambda(&many));
        assert!(is_unlabelled_lambda("dynamicClass.lambda_method9"));
    }
}
