//! A thread blocked on a task (sync-over-async): `.Result`, `Task.Wait()`,
//! `GetAwaiter().GetResult()`, `Task.WaitAll`/`WaitAny`, and the method that made the call.
//! The JIT often inlines the call (`get_Result` into the caller) and leaves only the task's
//! inner wait (`Task.InternalWait`, `SpinThenBlockingWait`) on the stack: the call is then
//! named `Task.Wait/.Result`, the two it can be.
//!
//! ```
//! use clrspy_analysis::task_waits::task_wait;
//! let frames: Vec<String> = [
//!     "System.Threading.Monitor.Wait(Object,int32)",
//!     "System.Threading.Tasks.Task.InternalWait",
//!     "App.Controllers.Orders.Get",
//! ].iter().map(|f| f.to_string()).collect();
//! let w = task_wait(&frames).unwrap();
//! assert_eq!((w.call, w.method.as_str()), ("Task.Wait/.Result", "App.Controllers.Orders.Get"));
//! ```

/// A blocking wait on a task in a stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskWait {
    /// The call as the code wrote it, when the frames tell: `Task.Result`, `Task.Wait`,
    /// `GetAwaiter().GetResult()`, `Task.WaitAll`, `Task.WaitAny`, else `Task.Wait/.Result`.
    pub call: &'static str,
    /// The outermost frame of the task's waiting code.
    pub frame: String,
    /// The method that blocked: the first frame outside the runtime's waiting and task code
    /// (or the frame, when there is none).
    pub method: String,
}

/// The call a frame of the task's waiting code stands for, when it is one.
fn call_of(frame: &str) -> Option<&'static str> {
    let in_task = frame.starts_with("System.Threading.Tasks.Task");
    let method = frame
        .split('(')
        .next()
        .unwrap_or(frame)
        .rsplit('.')
        .next()
        .unwrap_or("");
    if frame.contains("Awaiter")
        && (method == "GetResult" || method.starts_with("HandleNonSuccess"))
    {
        return Some("GetAwaiter().GetResult()");
    }
    if !in_task {
        return None;
    }
    match method {
        "get_Result" | "GetResultCore" => Some("Task.Result"),
        "WaitAll" | "WaitAllCore" | "WaitAllBlockingCore" => Some("Task.WaitAll"),
        "WaitAny" | "WaitAnyCore" => Some("Task.WaitAny"),
        "Wait" | "WaitCore" => Some("Task.Wait"),
        "InternalWait" | "InternalWaitCore" | "SpinThenBlockingWait" | "SpinWait" => {
            Some("Task.Wait/.Result")
        }
        _ => None,
    }
}

/// True for a frame of the task's waiting code (`Task.Wait`, `get_Result`, `InternalWait`,
/// an awaiter's `GetResult`, ...).
fn is_task_wait(frame: &str) -> bool {
    call_of(frame).is_some()
}

/// A frame of the runtime's locking, waiting or task code, or native code: not the code that
/// waited.
pub fn is_wait_internal(frame: &str) -> bool {
    frame.starts_with('[')
        || frame.contains('!')
        || frame.starts_with("System.Threading.")
        || frame.starts_with("System.Runtime.CompilerServices.")
        || frame.starts_with("System.Diagnostics.Tracing.")
}

/// True for an async method's state machine (`App.Orders+<GetAsync>d__4.MoveNext`; a local
/// function's is `<<Outer>g__Inner|5_0>d`, generic ones add `` `1[…] ``).
fn is_state_machine(frame: &str) -> bool {
    (frame.contains(">d__") || frame.contains(">d`") || frame.contains(">d."))
        && frame
            .split('(')
            .next()
            .unwrap_or(frame)
            .ends_with(".MoveNext")
}

/// The task wait in a stack (frames leaf first): its outermost frame of task waiting code,
/// the call it stands for (the most telling of the run of such frames), and the method that
/// made it.
pub fn task_wait(frames: &[String]) -> Option<TaskWait> {
    let outer = frames.iter().rposition(|f| is_task_wait(f))?;
    // In the run of task frames up to the outermost, the most telling name: the call itself
    // when the JIT kept it.
    let first = frames[..=outer]
        .iter()
        .rposition(|f| !is_wait_internal(f))
        .map_or(0, |i| i + 1);
    let calls: Vec<&'static str> = frames[first..=outer]
        .iter()
        .filter_map(|f| call_of(f))
        .collect();
    let call = calls
        .iter()
        .copied()
        .find(|c| *c != "Task.Wait/.Result")
        .unwrap_or("Task.Wait/.Result");
    let method = frames[outer..]
        .iter()
        .find(|f| !is_wait_internal(f))
        .unwrap_or(&frames[outer])
        .clone();
    // An `await` ends in its awaiter's `GetResult`, called by the async method's state
    // machine once the task completed: it never blocks. Only an inner wait of the task
    // (`InternalWait`, ...) below it says it did.
    if calls.iter().all(|c| *c == "GetAwaiter().GetResult()") && is_state_machine(&method) {
        return None;
    }
    Some(TaskWait {
        call,
        frame: frames[outer].clone(),
        method,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_await_of_a_local_functions_state_machine_never_blocks() {
        let frames: Vec<String> = [
            "System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification",
            "Microsoft.AspNetCore.Http.HttpResponseJsonExtensions+<<WriteAsJsonAsync>g__WriteAsJsonAsyncSlow|5_0>d`1[System.__Canon].MoveNext",
            "System.Threading.ExecutionContext.RunInternal",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert!(task_wait(&frames).is_none());
    }

    fn frames(f: &[&str]) -> Vec<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_await_completing_is_no_wait() {
        let awaited = frames(&[
            "System.Runtime.CompilerServices.ValueTaskAwaiter`1[System.IO.Pipelines.ReadResult].GetResult",
            "Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets.Internal.SocketConnection+<DoSend>d__28.MoveNext",
        ]);
        assert_eq!(task_wait(&awaited), None);
        // The same call blocking on an unfinished task waits inside it.
        let blocked = frames(&[
            "System.Threading.Tasks.Task.InternalWait",
            "System.Runtime.CompilerServices.TaskAwaiter.GetResult",
            "App.Orders+<GetAsync>d__4.MoveNext",
        ]);
        assert_eq!(
            task_wait(&blocked).unwrap().call,
            "GetAwaiter().GetResult()"
        );
        // Outside an async method, GetResult is the app's own call.
        let sync = frames(&[
            "System.Runtime.CompilerServices.TaskAwaiter.GetResult",
            "App.Orders.Get",
        ]);
        assert_eq!(task_wait(&sync).unwrap().method, "App.Orders.Get");
    }

    #[test]
    fn the_call_and_who_made_it() {
        // .NET 10 inlines get_Result and a small action into the MVC invoker.
        let inlined = frames(&[
            "libc.so.6!__futex_abstimed_wait_common",
            "System.Threading.Tasks.Task.InternalWaitCore",
            "System.Threading.Tasks.Task.InternalWait",
            "dynamicClass.lambda_method2",
            "Microsoft.AspNetCore.Mvc.Infrastructure.ActionMethodExecutor+SyncObjectResultExecutor.Execute",
        ]);
        let w = task_wait(&inlined).unwrap();
        assert_eq!(w.call, "Task.Wait/.Result");
        assert_eq!(w.frame, "System.Threading.Tasks.Task.InternalWait");
        assert_eq!(w.method, "dynamicClass.lambda_method2");
        let kept = frames(&[
            "System.Threading.Monitor.Wait(Object,int32)",
            "System.Threading.ManualResetEventSlim.Wait(int32,CancellationToken)",
            "System.Threading.Tasks.Task.SpinThenBlockingWait",
            "System.Threading.Tasks.Task.InternalWaitCore",
            "System.Threading.Tasks.Task`1[System.Int32].GetResultCore",
            "System.Threading.Tasks.Task`1[System.Int32].get_Result",
            "App.Slow.Answer",
        ]);
        let w = task_wait(&kept).unwrap();
        assert_eq!(
            (w.call, w.method.as_str()),
            ("Task.Result", "App.Slow.Answer")
        );
        let awaiter = frames(&[
            "System.Threading.Tasks.Task.InternalWait",
            "System.Runtime.CompilerServices.TaskAwaiter.HandleNonSuccessAndDebuggerNotification",
            "Program.<Main>",
        ]);
        assert_eq!(
            task_wait(&awaiter).unwrap().call,
            "GetAwaiter().GetResult()"
        );
        assert_eq!(
            task_wait(&frames(&[
                "System.Threading.Tasks.Task.WaitAll(Task[])",
                "App.Run"
            ]))
            .unwrap()
            .call,
            "Task.WaitAll"
        );
        // A wait of a task's own (a lock) is no task wait; nor is a method named like one.
        assert_eq!(
            task_wait(&frames(&["System.Threading.Monitor.Enter", "App.Run"])),
            None
        );
        assert!(!is_task_wait("App.TaskRunner.Wait"));
    }
}
