//! Naming a heap snapshot's static roots after the class that declares them. The runtime's
//! `GC/BulkRootStaticVar` gives a static's field name and the type of the object it holds
//! (`[static var List<Customer>.Cache]` for `Processor.Cache`), so the name reads as if the
//! list declared the field. The app's assemblies (the modules the trace loaded) say which class
//! declares a static of that name: where exactly one does (its declared type agreeing with the
//! object's when several share the name), the root is `[static var Processor.Cache]`; where
//! none can be told, `[static var Cache (of type List<Customer>)]` — never a guess.

use rustc_hash::FxHashMap;

/// The static fields of the assemblies read, by field name.
#[derive(Debug, Default)]
pub(crate) struct DeclaredStatics {
    /// Field name → (declaring type, the type its signature names).
    by_field: FxHashMap<String, Vec<(String, Option<String>)>>,
}

impl DeclaredStatics {
    /// The static fields of the assemblies at `paths` whose bytes `read_module` gives and that
    /// read as managed images (others are left out), keeping only the fields named in `wanted`.
    pub(crate) fn read(
        paths: &[String],
        wanted: &[&str],
        read_module: &mut dyn FnMut(&str) -> Option<Vec<u8>>,
    ) -> DeclaredStatics {
        let wanted: rustc_hash::FxHashSet<&str> = wanted.iter().copied().collect();
        let mut out = DeclaredStatics::default();
        if wanted.is_empty() {
            return out;
        }
        for p in paths {
            let Some(bytes) = read_module(p) else {
                continue;
            };
            let Ok(fields) = readytorun::static_fields(&bytes) else {
                continue;
            };
            for f in fields {
                if wanted.contains(f.name.as_str()) {
                    out.by_field
                        .entry(f.name)
                        .or_default()
                        .push((f.declaring_type, f.type_name));
                }
            }
        }
        out
    }

    /// The class that declares the static `field` holding an object of `held` (a display
    /// name: `System.Collections.Generic.List<App.Customer>`): the only one with that field
    /// name, else the only one whose declared type is the object's; None when none or
    /// several are.
    pub(crate) fn declaring(&self, field: &str, held: &str) -> Option<&str> {
        let c = self.by_field.get(field)?;
        if let [(only, _)] = c.as_slice() {
            return Some(only);
        }
        let held = base_name(held);
        let mut hits = c
            .iter()
            .filter(|(_, t)| t.as_deref().is_some_and(|t| base_name(t) == held));
        match (hits.next(), hits.next()) {
            (Some((d, _)), None) => Some(d),
            _ => None,
        }
    }

    /// The root's name: `[KIND Declaring.Field]` where the class is known, else
    /// `[KIND Field (of type T)]`.
    pub(crate) fn root_name(&self, kind: &str, field: &str, held: &str) -> String {
        match self.declaring(field, held) {
            Some(d) => format!("[{kind} {}.{field}]", d.replace('/', "+")),
            None => format!("[{kind} {field} (of type {held})]"),
        }
    }
}

/// A type's name without generic arguments, arity or array ranks: what a field's declared
/// type and the object's type share (`List<Order>`, ``List`1`` → `List`; `Order[]` →
/// `Order`).
fn base_name(name: &str) -> &str {
    let end = name.find(['<', '`', '[']).unwrap_or(name.len());
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statics(fields: &[(&str, &str, Option<&str>)]) -> DeclaredStatics {
        let mut d = DeclaredStatics::default();
        for (decl, name, ty) in fields {
            d.by_field
                .entry(name.to_string())
                .or_default()
                .push((decl.to_string(), ty.map(str::to_string)));
        }
        d
    }

    #[test]
    fn the_declaring_class_is_named_when_it_is_the_only_one() {
        let d = statics(&[
            (
                "App.Processor",
                "Cache",
                Some("System.Collections.Generic.List`1"),
            ),
            ("App.Orders", "s_items", Some("App.Order")),
            (
                "App.Other",
                "s_items",
                Some("System.Collections.Generic.Dictionary`2"),
            ),
            ("App.A", "Shared", Some("App.Thing")),
            ("App.B", "Shared", Some("App.Thing")),
        ]);
        let list = "System.Collections.Generic.List<App.Customer>";
        assert_eq!(d.declaring("Cache", list), Some("App.Processor"));
        // Several with the name: the one whose declared type is the object's.
        assert_eq!(d.declaring("s_items", "App.Order[]"), Some("App.Orders"));
        assert_eq!(
            d.declaring("s_items", "System.Collections.Generic.Dictionary<K,V>"),
            Some("App.Other")
        );
        // Several alike: no guess.
        assert_eq!(d.declaring("Shared", "App.Thing"), None);
        assert_eq!(d.declaring("Missing", "App.Thing"), None);
        assert_eq!(
            d.root_name("static var", "Cache", list),
            "[static var App.Processor.Cache]"
        );
        assert_eq!(
            d.root_name("static var", "Shared", "App.Thing"),
            "[static var Shared (of type App.Thing)]"
        );
    }

    #[test]
    fn unreadable_modules_are_left_out() {
        // None: refused or missing; bytes that are no managed image: left out too.
        let mut read = |p: &str| (p == "/junk.dll").then(|| b"MZ, not a PE".to_vec());
        let d = DeclaredStatics::read(
            &["/nonexistent/App.dll".into(), "/junk.dll".into()],
            &["Cache"],
            &mut read,
        );
        assert!(d.by_field.is_empty());
        assert_eq!(d.declaring("Cache", "X"), None);
    }
}
