//! "Just my code": the runtime's and frameworks' frames folded into the boundary frame where
//! the app's own code (or the thread's start) calls them. A run of consecutive framework
//! frames in a stack becomes its root-most frame, the entry point into the framework; the
//! app's frames, and clrspy's own marker frames (`[idle: ...]`, `[runtime: ...]`), stay.
//!
//! Which frames are the framework's is decided first by assembly: the methods of the app's
//! own assemblies ([`AppCode`]: the entry assembly and those loaded from its folder, from the
//! trace's module events) are the app's whatever their namespace (Microsoft's sample apps
//! live under `Microsoft.*`). The rest goes by name prefixes (`FRAMEWORK_PREFIXES`, plus
//! native and unknown frames), which the user extends ([`JustMyCode::framework`]) or replaces
//! by naming their own code (`JustMyCode::my_code`, which overrides the assemblies too).

pub use crate::app_code::AppCode;
use crate::symbols::{FrameId, FrameKind, Symbols};

/// The name prefixes of the runtime's and frameworks' frames: the base class library and
/// every `Microsoft.*` library (ASP.NET Core, Microsoft.Extensions, Entity Framework Core...),
/// the runtime's interop stubs and the methods it generates (compiled expressions, IL stubs).
pub(crate) const FRAMEWORK_PREFIXES: &[&str] = &[
    "System.",
    "Microsoft.",
    "Interop+",
    "Interop.",
    "Internal.",
    "dynamicClass.",
    "ILStubClass.",
];

/// The bracketed names of code clrspy could not name (native, unknown, unnamed jitted code):
/// the runtime's, for the grouping. Other bracketed names are clrspy's markers.
const UNNAMED_CODE: &[&str] = &["[native]", "[unknown", "[jitted code"];

/// The grouping rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JustMyCode {
    /// When not empty, the app's code is exactly the frames whose names start with one of
    /// these prefixes, and every other method is the framework's (`MyCompany.*` is read as
    /// `MyCompany.`).
    pub(crate) my_code: Vec<String>,
    /// More framework prefixes, on top of `FRAMEWORK_PREFIXES` (third-party libraries).
    pub framework: Vec<String>,
    /// The app's own code by assembly ([`JustMyCode::with_app_code`]): its frames are the
    /// app's unless `my_code` or `framework` says otherwise.
    pub app: AppCode,
}

/// A prefix as the user wrote it, with a glob's trailing `*` dropped.
fn prefix(p: &str) -> &str {
    p.strip_suffix('*').unwrap_or(p)
}

impl JustMyCode {
    /// The built-in rule plus `framework`, or only `my_code` as the app when given.
    pub fn new(my_code: Vec<String>, framework: Vec<String>) -> JustMyCode {
        JustMyCode {
            my_code: my_code.into_iter().filter(|p| !p.is_empty()).collect(),
            framework: framework.into_iter().filter(|p| !p.is_empty()).collect(),
            app: AppCode::default(),
        }
    }

    /// The rule of `--just-my-code[=PREFIX,...]` (`my_code`; `Some("")` for the bare flag) and
    /// `--framework PREFIX` (repeatable, implies the rule); None when neither is given.
    pub fn from_flags(my_code: Option<&str>, framework: &[String]) -> Option<JustMyCode> {
        if my_code.is_none() && framework.is_empty() {
            return None;
        }
        let mine = my_code
            .unwrap_or_default()
            .split(',')
            .map(|p| p.trim().to_string())
            .collect();
        Some(JustMyCode::new(mine, framework.to_vec()))
    }

    /// The same rule knowing the trace's app code (from [`Symbols::app_code`]).
    pub fn with_app_code(&self, app: &AppCode) -> JustMyCode {
        JustMyCode {
            app: app.clone(),
            ..self.clone()
        }
    }

    /// True when a frame is the runtime's or a framework's: native and unknown frames, and
    /// managed methods by the prefix rule. clrspy's marker frames (names in brackets, such as
    /// `[idle: thread pool waiting for work]`) never are.
    pub fn is_framework(&self, name: &str, kind: FrameKind) -> bool {
        self.decide(name, kind, &self.app)
    }

    fn decide(&self, name: &str, kind: FrameKind, app: &AppCode) -> bool {
        if name.starts_with('[') {
            return UNNAMED_CODE.iter().any(|p| name.starts_with(p));
        }
        if kind != FrameKind::Managed {
            return true;
        }
        // A frame with the app's code inlined into it (MVC's invoker holding an action) is the
        // app's when one of those methods is.
        let inlined = crate::inlined::inlinees(name);
        if !inlined.is_empty() && inlined.iter().any(|n| self.is_app_inlinee(n, app)) {
            return false;
        }
        if !self.my_code.is_empty() {
            return !self.my_code.iter().any(|p| name.starts_with(prefix(p)));
        }
        if self.framework.iter().any(|p| name.starts_with(prefix(p))) {
            return true;
        }
        if app.contains(name) {
            return false;
        }
        FRAMEWORK_PREFIXES.iter().any(|p| name.starts_with(p))
    }

    /// True when an inlined method (named in a frame's label) is the app's: by the user's
    /// prefixes when given, else by its assembly, else unless its namespace is a framework's
    /// (the recorder keeps only such inlinees; Microsoft's sample apps live under
    /// `Microsoft.*`, so not every `Microsoft.` is the framework here).
    fn is_app_inlinee(&self, name: &str, app: &AppCode) -> bool {
        if !self.my_code.is_empty() {
            return self.my_code.iter().any(|p| name.starts_with(prefix(p)));
        }
        if self.framework.iter().any(|p| name.starts_with(prefix(p))) {
            return false;
        }
        app.contains(name) || !clr_events::method_names::is_framework_method(name)
    }

    /// The rule with the app code of `symbols` when it was not given one.
    pub fn for_symbols(&self, symbols: &Symbols) -> JustMyCode {
        if self.app.is_empty() {
            self.with_app_code(symbols.app_code())
        } else {
            self.clone()
        }
    }

    /// [`JustMyCode::is_framework`] for a frame of `symbols`, knowing their app code when the
    /// rule was not given one.
    pub fn is_framework_frame(&self, f: FrameId, symbols: &Symbols) -> bool {
        let fr = symbols.frame(f);
        let app = if self.app.is_empty() {
            symbols.app_code()
        } else {
            &self.app
        };
        self.decide(&fr.name, fr.kind, app)
    }

    /// The same for a frame known only by its name: native frames are told by their
    /// `module!+0x...` form.
    pub fn is_framework_name(&self, name: &str) -> bool {
        let kind = if name.contains("!+0x") {
            FrameKind::Native
        } else {
            FrameKind::Managed
        };
        self.is_framework(name, kind)
    }

    /// Folds a leaf-first stack of frame ids.
    pub(crate) fn fold_ids(&self, frames: Vec<FrameId>, symbols: &Symbols) -> Vec<FrameId> {
        fold_leaf_first(frames, |&f| self.is_framework_frame(f, symbols))
    }

    /// Folds a root-first stack of frame names.
    pub fn fold_names(&self, frames: Vec<String>) -> Vec<String> {
        fold_root_first(frames, |n| self.is_framework_name(n))
    }
}

/// Keeps the first frame of every run of framework frames, root first.
pub fn fold_root_first<T>(frames: Vec<T>, is_framework: impl Fn(&T) -> bool) -> Vec<T> {
    let mut out = Vec::with_capacity(frames.len());
    let mut in_run = false;
    for f in frames {
        let fw = is_framework(&f);
        if !(fw && in_run) {
            out.push(f);
        }
        in_run = fw;
    }
    out
}

/// [`fold_root_first`] for a leaf-first stack.
pub(crate) fn fold_leaf_first<T>(mut frames: Vec<T>, is_framework: impl Fn(&T) -> bool) -> Vec<T> {
    frames.reverse();
    let mut out = fold_root_first(frames, is_framework);
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app_code::{app_modules, own_modules};
    use std::collections::BTreeSet;

    #[test]
    fn the_flags_make_the_rule() {
        assert_eq!(JustMyCode::from_flags(None, &[]), None);
        assert_eq!(
            JustMyCode::from_flags(Some(""), &[]),
            Some(JustMyCode::new(Vec::new(), Vec::new()))
        );
        let r = JustMyCode::from_flags(Some("Contoso.*, Fabrikam.*"), &[]).unwrap();
        assert_eq!(r.my_code, ["Contoso.*", "Fabrikam.*"]);
        let r = JustMyCode::from_flags(None, &["Newtonsoft.*".to_string()]).unwrap();
        assert!(r.my_code.is_empty());
        assert_eq!(r.framework, ["Newtonsoft.*"]);
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn runs_fold_into_their_entry() {
        let jmc = JustMyCode::default();
        let stack = names(&[
            "System.Threading.Thread.StartCallback",
            "System.Threading.ThreadPoolWorkQueue.Dispatch",
            "Microsoft.AspNetCore.Mvc.Razor.RazorView.RenderAsync",
            "App.Pages.Index.ExecuteAsync",
            "Microsoft.AspNetCore.Razor.Runtime.TagHelpers.TagHelperRunner.RunAsync",
            "Microsoft.AspNetCore.Mvc.TagHelpers.InputTagHelper.Process",
            "System.Linq.Expressions.Compiler.LambdaCompiler.CreateDelegate",
            "libcoreclr.so!+0x1234",
        ]);
        assert_eq!(
            jmc.fold_names(stack),
            names(&[
                "System.Threading.Thread.StartCallback",
                "App.Pages.Index.ExecuteAsync",
                "Microsoft.AspNetCore.Razor.Runtime.TagHelpers.TagHelperRunner.RunAsync",
            ])
        );
        // Markers stay, and end a run.
        let idle = names(&[
            "System.Threading.Thread.StartCallback",
            "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart",
            "[idle: thread pool waiting for work]",
        ]);
        assert_eq!(
            jmc.fold_names(idle),
            names(&[
                "System.Threading.Thread.StartCallback",
                "[idle: thread pool waiting for work]",
            ])
        );
    }

    #[test]
    fn a_frame_holding_the_apps_inlined_code_is_the_apps() {
        let jmc = JustMyCode::default();
        let stack = names(&[
            "System.Threading.Thread.StartCallback",
            "Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor.Execute",
            "dynamicClass.lambda_method3 [inlines App.DiagController.HighCpu]",
            "System.Diagnostics.Stopwatch.get_ElapsedMilliseconds",
        ]);
        assert_eq!(
            jmc.fold_names(stack.clone()),
            names(&[
                "System.Threading.Thread.StartCallback",
                "dynamicClass.lambda_method3 [inlines App.DiagController.HighCpu]",
                "System.Diagnostics.Stopwatch.get_ElapsedMilliseconds",
            ])
        );
        // The user's own prefixes decide: another team's code inlined is not theirs.
        let mine = JustMyCode::new(vec!["Contoso.*".into()], Vec::new());
        assert!(mine.is_framework_name(&stack[2]));
        assert!(!mine.is_framework_name(
            "dynamicClass.lambda_method3 [inlines Contoso.Orders.List and 2 more]"
        ));
        // An unlabelled lambda stays the framework's.
        assert!(jmc.is_framework_name("dynamicClass.lambda_method3"));
    }

    #[test]
    fn the_apps_own_assemblies_are_not_the_libraries_it_ships() {
        let modules = [
            (1, "/app/Scenarios.dll"),
            (2, "/app/Newtonsoft.Json.dll"),
            (3, "/app/Scenarios.Data.dll"),
            (4, "/app/Microsoft.EntityFrameworkCore.dll"),
            (5, "/app/Dapper.dll"),
        ];
        let mut own: Vec<u64> = own_modules("Scenarios", &modules).into_iter().collect();
        own.sort_unstable();
        assert_eq!(own, vec![1, 3]);
        let shop = [
            (1, "/srv/Microsoft.eShopWeb.Web.dll"),
            (2, "/srv/Microsoft.eShopWeb.Infrastructure.dll"),
            (3, "/srv/Ardalis.Specification.dll"),
        ];
        let mut own: Vec<u64> = own_modules("Microsoft.eShopWeb.Web", &shop)
            .into_iter()
            .collect();
        own.sort_unstable();
        assert_eq!(own, vec![1, 2]);
    }

    #[test]
    fn app_code_is_decided_by_assembly() {
        let modules = [
            (1, "/usr/share/dotnet/shared/Microsoft.NETCore.App/10.0.0/System.Private.CoreLib.dll"),
            (2, "/srv/shop/Microsoft.eShopWeb.Web.dll"),
            (3, "/srv/shop/Microsoft.eShopWeb.Infrastructure.dll"),
            (4, "/srv/shop/Microsoft.EntityFrameworkCore.dll"),
            (5, "/srv/shop/Ardalis.Specification.dll"),
            (6, "/usr/share/dotnet/shared/Microsoft.AspNetCore.App/10.0.0/Microsoft.AspNetCore.Mvc.Core.dll"),
            (7, "/srv/shop/System.Text.Json.dll"),
        ];
        let app = app_modules("Microsoft.eShopWeb.Web", &modules);
        let mut ids: Vec<u64> = app.into_iter().collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![2, 3, 5]);
        // No entry assembly among the modules: nothing is decided by assembly.
        assert!(app_modules("Other", &modules).is_empty());
        // An app under Microsoft.* is the app's once its frames are known...
        let frames: BTreeSet<String> = ["Microsoft.eShopWeb.Web.Pages.Index.OnGet".to_string()]
            .into_iter()
            .collect();
        let code = AppCode::new(vec!["Microsoft.eShopWeb.Web.dll".into()], frames);
        let rule = JustMyCode::default().with_app_code(&code);
        assert!(!rule.is_framework_name("Microsoft.eShopWeb.Web.Pages.Index.OnGet"));
        assert!(JustMyCode::default().is_framework_name("Microsoft.eShopWeb.Web.Pages.Index.OnGet"));
        assert!(
            rule.is_framework_name("Microsoft.AspNetCore.Mvc.Infrastructure.ResourceInvoker.Next")
        );
        // ...and --just-my-code=PATTERN and --framework still decide over it.
        let pattern = JustMyCode::new(vec!["Contoso.*".into()], vec![]).with_app_code(&code);
        assert!(pattern.is_framework_name("Microsoft.eShopWeb.Web.Pages.Index.OnGet"));
        let extra =
            JustMyCode::new(vec![], vec!["Microsoft.eShopWeb.*".into()]).with_app_code(&code);
        assert!(extra.is_framework_name("Microsoft.eShopWeb.Web.Pages.Index.OnGet"));
    }

    #[test]
    fn the_rule_is_overridable() {
        let extra = JustMyCode::new(vec![], vec!["Newtonsoft.*".into()]);
        assert!(extra.is_framework_name("Newtonsoft.Json.JsonConvert.SerializeObject"));
        assert!(!JustMyCode::default().is_framework_name("Newtonsoft.Json.JsonConvert.Parse"));
        let mine = JustMyCode::new(vec!["Contoso.*".into()], vec![]);
        assert!(mine.is_framework_name("Newtonsoft.Json.JsonConvert.Parse"));
        assert!(!mine.is_framework_name("Contoso.Shop.Cart.Total"));
        assert!(!mine.is_framework_name("[runtime: GC]"));
        assert!(mine.is_framework_name("[unknown 0x1234]"));
        assert!(mine.is_framework_name("[native]"));
        assert!(!mine.is_framework_name("[idle: thread pool waiting for work]"));
        let v = fold_leaf_first(vec![1, 2, 3, 10, 4, 5], |&x| x < 10);
        assert_eq!(v, vec![3, 10, 5]);
    }
}
