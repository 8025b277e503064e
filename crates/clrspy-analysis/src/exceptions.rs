//! Exceptions from `Exception/Start` (the throw, with its stack) and `ExceptionCatch/Start`
//! (the method whose handler caught it, on the same thread right after): counts by type and by
//! message, throw sites and catch sites. A throw site is the first frame of the throw stack
//! outside the runtime's exception dispatch ([`throw_site`]); catch sites are named as every
//! other method is (`Namespace.Type.Method`, [`from_il`](clr_events::method_names::from_il)), not
//! in the event's IL syntax.

use clr_events::runtime::{ids, ExceptionCatch, ExceptionThrown};
use clr_events::ViewError;
use rustc_hash::FxHashMap;

use crate::event::{Model, ModelEvent, Wanted};
use crate::stacks::StackId;

/// Distinct messages kept per type (the rest are counted under "[other messages]").
const MAX_MESSAGES: usize = 200;

/// One exception type.
#[derive(Clone, Debug, Default)]
pub struct ExceptionType {
    /// Times thrown.
    pub count: u64,
    /// Counts per message.
    pub messages: FxHashMap<String, u64>,
    /// Counts per throw stack.
    pub stacks: FxHashMap<Option<StackId>, u64>,
    /// Counts per catching method: the catch handlers that ran (`ExceptionCatch/Start`),
    /// one per handler, so one exception caught, rethrown and caught again counts twice.
    pub catches: FxHashMap<String, u64>,
    /// Of `count`, the rethrows the runtime flagged (`throw;`: the same exception thrown on
    /// from a handler). Rethrows through async frames are not flagged: their stacks say so
    /// ([`rethrow_helper`]).
    pub rethrown: u64,
    /// Of `stacks`, the throws the runtime flagged as rethrows, per throw stack.
    pub flagged: FxHashMap<Option<StackId>, u64>,
}

/// The exceptions model.
#[derive(Clone, Debug, Default)]
pub struct ExceptionModel {
    /// Per type name.
    pub types: FxHashMap<String, ExceptionType>,
    /// Exceptions seen.
    pub total: u64,
    /// The last exception type thrown on each thread (for its catch).
    last_on_thread: FxHashMap<u64, String>,
}

impl ExceptionModel {
    /// An empty model.
    pub fn new() -> ExceptionModel {
        ExceptionModel::default()
    }

    /// An `Exception/Start` on `thread`.
    pub(crate) fn on_throw(
        &mut self,
        thread: u64,
        stack: Option<StackId>,
        ex: &ExceptionThrown<'_>,
    ) {
        // Version 0 names no type.
        let ty = ex.exception_type.filter(|t| !t.is_empty()).map_or_else(
            || "[unknown exception]".to_string(),
            |t| t.to_string_lossy(),
        );
        let msg = ex.message.map(|m| m.to_string_lossy()).unwrap_or_default();
        let e = self.types.entry(ty.clone()).or_default();
        e.count += 1;
        if ex
            .flags
            .is_some_and(|f| f & clr_events::runtime::EXCEPTION_RETHROWN != 0)
        {
            e.rethrown += 1;
            *e.flagged.entry(stack).or_default() += 1;
        }
        if e.messages.len() < MAX_MESSAGES || e.messages.contains_key(&msg) {
            *e.messages.entry(msg).or_default() += 1;
        } else {
            *e.messages.entry("[other messages]".into()).or_default() += 1;
        }
        *e.stacks.entry(stack).or_default() += 1;
        self.total += 1;
        self.last_on_thread.insert(thread, ty);
    }

    /// An `ExceptionCatch/Start` on `thread`.
    pub(crate) fn on_catch(&mut self, thread: u64, catch: &ExceptionCatch<'_>) {
        let Some(ty) = self.last_on_thread.get(&thread) else {
            return;
        };
        let method = catch.method();
        if let Some(e) = self.types.get_mut(ty) {
            *e.catches.entry(method).or_default() += 1;
        }
    }
}

/// True for frames of the runtime's exception dispatch (and throw helpers): the throw site
/// is the first frame after them. Unnamed frames (`[native]`, `lib!+0x…`) count as dispatch.
pub fn is_dispatch_frame(name: &str) -> bool {
    const DISPATCH: &[&str] = &[
        "System.Runtime.EH.",
        "System.Runtime.ExceptionServices.InternalCalls.",
        "System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw",
        "System.ThrowHelper.",
        "System.Exception.",
        "Interop+",
    ];
    name.starts_with('[') || name.contains("!+0x") || DISPATCH.iter().any(|d| name.starts_with(d))
}

/// The throw site of a leaf-first stack: its first frame outside the exception dispatch
/// (the leaf when every frame is dispatch).
pub fn throw_site(frames: &[String]) -> Option<&str> {
    frames
        .iter()
        .find(|f| !is_dispatch_frame(f))
        .or(frames.first())
        .map(String::as_str)
}

/// The helper that threw an exception on from a leaf-first throw stack, when it is a rethrow
/// of one already in flight rather than a new exception: `ExceptionDispatchInfo.Throw` (an
/// `await` of a faulted task, MVC's invokers), the awaiters' `ThrowForNonSuccess` and the
/// `Rethrow` helpers of frameworks' pipelines. Returns the frame that rethrew (the first
/// outside the runtime's dispatch, as [`throw_site`] names it).
pub fn rethrow_helper(frames: &[String]) -> Option<&str> {
    let site = frames.iter().position(|f| !is_dispatch_frame(f))?;
    let dispatched = frames[..site]
        .iter()
        .any(|f| f.starts_with("System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw"));
    let name = frames[site].as_str();
    (dispatched || is_rethrow_method(name)).then_some(name)
}

/// Methods whose throw is a rethrow of the exception they were handed.
fn is_rethrow_method(name: &str) -> bool {
    const RETHROWERS: &[&str] = &[
        "System.Runtime.CompilerServices.TaskAwaiter.ThrowForNonSuccess",
        "System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification",
        "System.Runtime.ExceptionServices.ExceptionDispatchInfo.",
    ];
    let method = name.split(['(', '[']).next().unwrap_or(name);
    RETHROWERS.iter().any(|r| method.starts_with(r))
        || method.ends_with(".Rethrow")
        || method.ends_with(".ThrowIfFailed")
}

/// A method's short name for a sentence: its type's last segment and the method, with the
/// compiler's state machines read back to their method (`App.Web.Orders+<Get>d__5.MoveNext`
/// → `Orders.Get`; lambdas' closures to the method that holds them).
pub fn short_method(name: &str) -> String {
    let name = without_generics(name.split('(').next().unwrap_or(name));
    let (ty, method) = name.rsplit_once('.').unwrap_or(("", &name));
    // `Outer+<Method>d__5` or `Outer+<>c__DisplayClass3_0` / `Outer+<>c` (+ `<Method>b__0`).
    let (outer, inner) = match ty.split_once('+') {
        Some((outer, rest)) => (outer, rest.rsplit('+').next()),
        None => (ty, None),
    };
    let outer = outer.rsplit('.').next().unwrap_or(outer);
    let from_angle = |s: &str| {
        s.strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .map(|(m, _)| m.to_string())
            .filter(|m| !m.is_empty())
    };
    let method = match inner.and_then(from_angle) {
        Some(m) => m,
        None => from_angle(method).unwrap_or_else(|| method.to_string()),
    };
    if outer.is_empty() {
        method
    } else {
        format!("{outer}.{method}")
    }
}

/// A name without its generic arity and arguments (`Gen`1[System.__Canon].Put` → `Gen.Put`).
fn without_generics(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let (mut depth, mut arity) = (0usize, false);
    for c in name.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '`' if depth == 0 => arity = true,
            c if arity && c.is_ascii_digit() => {}
            c if depth == 0 => {
                arity = false;
                out.push(c);
            }
            _ => {}
        }
    }
    out
}

impl Model for ExceptionModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::runtime(ids::EXCEPTION_START).with_stack(),
        Wanted::runtime(ids::EXCEPTION_CATCH_START),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        if ev.id == ids::EXCEPTION_START {
            let t = ExceptionThrown::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_throw(ev.thread_id, ev.stack, &t);
        } else {
            let c = ExceptionCatch::parse(ev.payload, ev.version, ev.pointer_size)?;
            self.on_catch(ev.thread_id, &c);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Provider;

    fn utf16z(s: &str) -> Vec<u8> {
        let mut v: Vec<u8> = s.encode_utf16().flat_map(u16::to_le_bytes).collect();
        v.extend([0, 0]);
        v
    }

    fn ev(id: u32, payload: &[u8]) -> ModelEvent<'_> {
        ModelEvent {
            provider: Provider::Known(clr_events::KnownProvider::Runtime),
            id,
            version: if id == ids::EXCEPTION_START { 1 } else { 0 },
            ts_ns: 0,
            thread_id: 5,
            payload,
            pointer_size: 8,
            stack: None,
            context: crate::EventContext::default(),
        }
    }

    #[test]
    fn throws_and_catches() {
        let mut m = ExceptionModel::new();
        let mut t = utf16z("System.InvalidOperationException");
        t.extend(utf16z("boom"));
        t.extend(0x10u64.to_le_bytes());
        t.extend(0x8013_1509u32.to_le_bytes());
        t.extend(0u16.to_le_bytes());
        t.extend(0u16.to_le_bytes());
        let mut c = Vec::new();
        c.extend(0u64.to_le_bytes());
        c.extend(7u64.to_le_bytes());
        c.extend(utf16z("App.Main"));
        c.extend(0u16.to_le_bytes());
        m.on_event(&ev(ids::EXCEPTION_START, &t)).unwrap();
        m.on_event(&ev(ids::EXCEPTION_CATCH_START, &c)).unwrap();
        m.on_event(&ev(ids::EXCEPTION_START, &t)).unwrap();
        let e = &m.types["System.InvalidOperationException"];
        assert_eq!((m.total, e.count, e.messages["boom"]), (2, 2, 2));
        assert_eq!(e.catches["App.Main"], 1);
        // A cut catch is an error (no empty method name is counted).
        assert!(m
            .on_event(&ev(ids::EXCEPTION_CATCH_START, &c[..18]))
            .is_err());
        assert_eq!(m.types["System.InvalidOperationException"].catches.len(), 1);
    }

    #[test]
    fn rethrows_are_counted_apart() {
        // One throw, caught, rethrown (`throw;`: flags 0x04) and caught again: 2 throws of
        // which 1 rethrow, 2 catch handlers.
        let mut m = ExceptionModel::new();
        let throw = |flags: u16| {
            let mut t = utf16z("System.IO.IOException");
            t.extend(utf16z("gone"));
            t.extend(0x10u64.to_le_bytes());
            t.extend(0x8013_1620u32.to_le_bytes());
            t.extend(flags.to_le_bytes());
            t.extend(0u16.to_le_bytes());
            t
        };
        let mut c = Vec::new();
        c.extend(0u64.to_le_bytes());
        c.extend(7u64.to_le_bytes());
        c.extend(utf16z("App.Read"));
        c.extend(0u16.to_le_bytes());
        m.on_event(&ev(ids::EXCEPTION_START, &throw(0))).unwrap();
        m.on_event(&ev(ids::EXCEPTION_CATCH_START, &c)).unwrap();
        m.on_event(&ev(ids::EXCEPTION_START, &throw(0x04))).unwrap();
        m.on_event(&ev(ids::EXCEPTION_CATCH_START, &c)).unwrap();
        let e = &m.types["System.IO.IOException"];
        assert_eq!((e.count, e.rethrown, e.catches["App.Read"]), (2, 1, 2));
    }

    #[test]
    fn catch_sites_and_throw_sites_are_the_users_frames() {
        assert_eq!(
            clr_events::method_names::from_il("string [WebApp] WebApp.Work::ThrowAndCatch()"),
            "WebApp.Work.ThrowAndCatch"
        );
        assert_eq!(
            clr_events::method_names::from_il(
                "[System.IO.Pipes] System.IO.Pipes.NamedPipeClientStream::TryConnect(int32)"
            ),
            "System.IO.Pipes.NamedPipeClientStream.TryConnect"
        );
        assert_eq!(
            clr_events::method_names::from_il(
                "instance void [App]App.Outer/Inner::Run(class [System.Runtime]System.String)"
            ),
            "App.Outer+Inner.Run"
        );
        assert_eq!(
            clr_events::method_names::from_il(
                "instance void [Microsoft.AspNetCore.Server.Kestrel.Core] Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+<ProcessRequests>d__237`1[System.__Canon]::MoveNext()"
            ),
            "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+<ProcessRequests>d__237`1[System.__Canon].MoveNext"
        );
        assert_eq!(clr_events::method_names::from_il("App.Main"), "App.Main");
        assert_eq!(clr_events::method_names::from_il("::"), "::");
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let stack = f(&[
            "[native]",
            "System.Runtime.EH.DispatchEx",
            "System.Runtime.EH.RhThrowEx",
            "WebApp.Work.ThrowAndCatch",
            "WebApp.Program.Main",
        ]);
        assert_eq!(throw_site(&stack), Some("WebApp.Work.ThrowAndCatch"));
        let helper = f(&["System.ThrowHelper.ThrowArgumentNullException", "App.Run"]);
        assert_eq!(throw_site(&helper), Some("App.Run"));
        assert_eq!(throw_site(&f(&["[native]"])), Some("[native]"));
        assert_eq!(rethrow_helper(&stack), None);
        assert_eq!(throw_site(&[]), None);
    }

    #[test]
    fn rethrows_through_async_frames_are_told_by_their_helpers() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let awaited = f(&[
            "[native]",
            "System.Runtime.EH.RhRethrow",
            "System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw",
            "System.Runtime.CompilerServices.TaskAwaiter.ThrowForNonSuccess",
            "System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification",
            "App.Web.Orders+<Get>d__5.MoveNext",
        ]);
        assert_eq!(
            rethrow_helper(&awaited),
            Some("System.Runtime.CompilerServices.TaskAwaiter.ThrowForNonSuccess")
        );
        let mvc = f(&[
            "System.Runtime.EH.DispatchEx",
            "Microsoft.AspNetCore.Mvc.Infrastructure.ControllerActionInvoker.Rethrow",
            "Microsoft.AspNetCore.Mvc.Infrastructure.ControllerActionInvoker.Next",
        ]);
        assert!(rethrow_helper(&mvc).is_some_and(|m| m.ends_with("Invoker.Rethrow")));
        let original = f(&[
            "System.Runtime.EH.RhThrowEx",
            "App.Web.Orders+<Get>d__5.MoveNext",
            "System.Runtime.CompilerServices.AsyncMethodBuilderCore.Start",
        ]);
        assert_eq!(rethrow_helper(&original), None);
        // A method that only mentions a rethrower in its name is not one.
        assert_eq!(rethrow_helper(&f(&["App.RethrowCounter.Add"])), None);
    }

    #[test]
    fn short_method_names_read_back_the_compilers_classes() {
        assert_eq!(
            short_method("App.Web.Orders+<Get>d__5.MoveNext"),
            "Orders.Get"
        );
        assert_eq!(
            short_method("App.Web.Orders+<>c__DisplayClass3_0.<Run>b__0"),
            "Orders.Run"
        );
        assert_eq!(short_method("App.Web.Orders.List"), "Orders.List");
        assert_eq!(short_method("Main"), "Main");
        assert_eq!(short_method("App.Gen`1[System.__Canon].Put"), "Gen.Put");
    }
}
