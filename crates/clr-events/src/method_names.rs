//! Method names as clrspy prints them, whatever event they come from: `Namespace.Type.Method`,
//! nested types as `Outer+Inner`, a generic type's arity and instantiation as the runtime's
//! type names give them (``List`1[System.__Canon]``).
//!
//! Events name methods in two ways. The method load, rundown and ReadyToRun entry-point
//! events split the name in fields (`MethodNamespace`, which holds the namespace and the type,
//! and `MethodName`): [`join`]. The exception handling events (`ExceptionCatch/Start`,
//! `ExceptionFilter/Start`, `ExceptionFinally/Start`) give one string in IL syntax, with the
//! return type, calling keywords, the assembly and the parameters
//! (`instance void [App] App.Outer/Inner::Run(class [System.Runtime]System.String)`):
//! [`from_il`]. Every name shown to a user goes through one of the two.

/// `Namespace.Type` and `Method` joined as frames name methods (`Method` alone when the
/// namespace is empty).
pub fn join(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}.{name}")
    }
}

/// The namespaces of the base class library and of Microsoft's frameworks and libraries (not
/// every `Microsoft.*`: Microsoft's own sample apps live there too), as method names start.
const FRAMEWORK_NAMESPACES: &[&str] = &[
    "System.",
    "Internal.",
    "Interop.",
    "Interop+",
    "Microsoft.AspNetCore.",
    "Microsoft.Extensions.",
    "Microsoft.EntityFrameworkCore.",
    "Microsoft.Data.",
    "Microsoft.CodeAnalysis.",
    "Microsoft.CSharp.",
    "Microsoft.Win32.",
    "Microsoft.Net.",
    "Microsoft.JSInterop.",
    "Microsoft.Identity",
    "Microsoft.Internal.",
    "Microsoft.VisualBasic.",
    "Microsoft.Diagnostics.",
    "dynamicClass.",
    "ILStubClass.",
];

/// True when a method, named as [`join`] names it, belongs to the base class library or one
/// of Microsoft's frameworks by its namespace: what the JIT inlines of such code is not worth
/// naming a frame after (see `clrspy::INLINED`).
pub fn is_framework_method(name: &str) -> bool {
    FRAMEWORK_NAMESPACES.iter().any(|p| name.starts_with(p))
}

/// A method's IL-syntax name in the form frames use: the declaring type (without its assembly,
/// nested types with `+`) and the method (with its generic instantiation, without its
/// parameters), joined with a dot. Calling keywords (`instance`, `class`, `valuetype`, …) and
/// the return type are dropped. Strings not in that syntax (no `Type::Method`) are kept.
pub fn from_il(il: &str) -> String {
    let s = il.trim();
    let head = &s[..outside_brackets(s)
        .find(|&(_, c)| c == '(')
        .map_or(s.len(), |(i, _)| i)];
    let Some(sep) = outside_brackets(head)
        .filter(|&(i, c)| c == ':' && head[i + 1..].starts_with(':'))
        .map(|(i, _)| i)
        .last()
    else {
        return il.to_string();
    };
    let method = head[sep + 2..].trim();
    let before = head[..sep].trim_end();
    // The declaring type is the last word outside brackets; before it, the return type and
    // keywords.
    let start = outside_brackets(before)
        .filter(|&(_, c)| c == ' ')
        .last()
        .map_or(0, |(i, _)| i + 1);
    let mut ty = &before[start..];
    // An assembly written against it: `[App]App.Type`.
    if ty.starts_with('[') {
        if let Some(close) = ty.find(']') {
            ty = &ty[close + 1..];
        }
    }
    if ty.is_empty() || method.is_empty() {
        return il.to_string();
    }
    format!("{}.{method}", ty.replace('/', "+"))
}

/// The characters of `s` that are outside square and angle brackets (the closing bracket of a
/// group counts as inside it; the opening one as outside, so a group is found by its start).
fn outside_brackets(s: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut depth = 0u32;
    s.char_indices().filter(move |&(_, c)| {
        let at = depth;
        match c {
            '[' | '<' => depth += 1,
            ']' | '>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at == 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_methods_by_namespace_but_not_microsofts_sample_apps() {
        assert!(is_framework_method("System.Linq.Enumerable.Sum"));
        assert!(is_framework_method(
            "Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor.Execute"
        ));
        assert!(is_framework_method("dynamicClass.lambda_method3"));
        assert!(!is_framework_method(
            "Microsoft.eShopWeb.Web.Controllers.OrderController.MyOrders"
        ));
        assert!(!is_framework_method(
            "App.Controllers.DiagController.HighCpu"
        ));
    }

    #[test]
    fn il_names_become_frame_names() {
        let cases = [
            // ExceptionCatch/Start on an ASP.NET Core app whose handler throws (.NET 10).
            (
                "instance void [Microsoft.AspNetCore.Server.Kestrel.Core] Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+<ProcessRequests>d__237`1[System.__Canon]::MoveNext()",
                "Microsoft.AspNetCore.Server.Kestrel.Core.Internal.Http.HttpProtocol+<ProcessRequests>d__237`1[System.__Canon].MoveNext",
            ),
            (
                "string [WebApp] WebApp.Work::ThrowAndCatch()",
                "WebApp.Work.ThrowAndCatch",
            ),
            (
                "[System.IO.Pipes] System.IO.Pipes.NamedPipeClientStream::TryConnect(int32)",
                "System.IO.Pipes.NamedPipeClientStream.TryConnect",
            ),
            (
                "instance void [App]App.Outer/Inner::Run(class [System.Runtime]System.String)",
                "App.Outer+Inner.Run",
            ),
            // A generic return type with spaces inside its instantiation.
            (
                "instance class [System.Runtime]System.Threading.Tasks.Task`1<class [System.Runtime]System.String> [App] App.Svc/Worker::RunAsync(valuetype [System.Runtime]System.Threading.CancellationToken, class [System.Runtime]System.String)",
                "App.Svc+Worker.RunAsync",
            ),
            (
                "valuetype [System.Private.CoreLib]System.Threading.Tasks.ValueTask`1<int32> [System.Net.Sockets] System.Net.Sockets.Socket+AwaitableSocketAsyncEventArgs::ReceiveAsync(class [System.Net.Sockets]System.Net.Sockets.Socket, valuetype [System.Private.CoreLib]System.Threading.CancellationToken)",
                "System.Net.Sockets.Socket+AwaitableSocketAsyncEventArgs.ReceiveAsync",
            ),
            // Generic methods and types with several arguments.
            (
                "void [System.Private.CoreLib] System.Runtime.CompilerServices.AsyncMethodBuilderCore::Start[System.__Canon](!!0&)",
                "System.Runtime.CompilerServices.AsyncMethodBuilderCore.Start[System.__Canon]",
            ),
            (
                "instance bool [System.Collections.Concurrent] System.Collections.Concurrent.ConcurrentDictionary`2[System.__Canon,System.Int32]::TryGetValue(!0, !1&)",
                "System.Collections.Concurrent.ConcurrentDictionary`2[System.__Canon,System.Int32].TryGetValue",
            ),
            // Constructors, lambdas, no assembly.
            ("instance void [App] App.Type::.ctor()", "App.Type..ctor"),
            (
                "instance void [App] App.Program+<>c__DisplayClass1_0::<Main>b__0()",
                "App.Program+<>c__DisplayClass1_0.<Main>b__0",
            ),
            ("void App.Program::Main(string[])", "App.Program.Main"),
            ("App.Program::Main", "App.Program.Main"),
            // Not IL syntax: kept.
            ("App.Main", "App.Main"),
            ("::", "::"),
            ("", ""),
            ("[App]::Run()", "[App]::Run()"),
        ];
        for (il, want) in cases {
            assert_eq!(from_il(il), want, "{il}");
        }
    }

    #[test]
    fn split_names_join_with_a_dot() {
        assert_eq!(join("App.Type", "Run"), "App.Type.Run");
        assert_eq!(join("", "Run"), "Run");
    }
}
