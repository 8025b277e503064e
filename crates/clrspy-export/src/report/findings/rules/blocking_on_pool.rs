//! `blocking-on-pool`: thread-pool threads blocked in synchronous I/O or sleeps (a socket's
//! `Receive`, a file's `Read`, `Thread.Sleep`, a synchronous `HttpClient.Send`, a name
//! lookup): each holds a pool thread that the app's other work (and the completions of its
//! async I/O) needs; under load the pool starves and injects threads one by one.
//!
//! Evidence: the waiting time of pool workers (stacks through the pool's dispatch) in those
//! calls, by the call and the method that made it, and the pool's injections.
//!
//! Thresholds: a warning at 1 s of such waiting in the window (a pool thread blocked for a
//! second is a second the pool did without it); critical when the pool starved (3 or more
//! injections, the `hangs` report's rule) meanwhile; info from 100 ms.

use clrspy_analysis::profile::Metric;

use super::super::finding::{count, ms, rate, top_sites, Found, Input, Rule, Severity};

/// The rule.
pub(crate) const RULE: Rule = Rule {
    id: "blocking-on-pool",
    title: "Thread-pool threads blocked in synchronous I/O or sleeps",
    fix: "Use the async version of the call and await it (ReceiveAsync, ReadAsync, Task.Delay, SendAsync); where a blocking call cannot go, run it on a dedicated thread, not the pool.",
    link: "https://learn.microsoft.com/aspnet/core/fundamentals/best-practices#avoid-blocking-calls",
    check,
};

const WARN_MS: f64 = 1000.0;
const INFO_MS: f64 = 100.0;

/// Blocking calls by name prefix, and what to call them.
const CALLS: &[(&str, &str)] = &[
    ("System.Net.Sockets.Socket.Receive", "Socket.Receive"),
    ("System.Net.Sockets.Socket.Send", "Socket.Send"),
    ("System.Net.Sockets.Socket.Connect", "Socket.Connect"),
    ("System.Net.Sockets.Socket.Accept", "Socket.Accept"),
    ("System.Net.Sockets.Socket.Poll", "Socket.Poll"),
    ("System.Net.Sockets.NetworkStream.Read", "NetworkStream.Read"),
    ("System.Net.Sockets.NetworkStream.Write", "NetworkStream.Write"),
    ("System.Net.Sockets.TcpClient.Connect", "TcpClient.Connect"),
    ("System.IO.RandomAccess.ReadAtOffset", "FileStream.Read"),
    ("System.IO.RandomAccess.WriteAtOffset", "FileStream.Write"),
    ("System.IO.FileStream.Read", "FileStream.Read"),
    ("System.IO.File.ReadAll", "File.ReadAll…"),
    ("System.Threading.Thread.Sleep", "Thread.Sleep"),
    ("System.Net.Dns.GetHost", "Dns.GetHost…"),
    ("System.Net.Http.HttpClient.Send", "HttpClient.Send"),
    ("System.Net.Http.HttpMessageInvoker.Send", "HttpClient.Send"),
];

/// The blocking call a frame is, when it is one (its async twins are not).
fn call_of(frame: &str) -> Option<&'static str> {
    let method = frame.split('(').next().unwrap_or(frame);
    if method.ends_with("Async") || method.contains("Async+") || method.contains("<") {
        return None;
    }
    CALLS
        .iter()
        .find(|(prefix, _)| method.starts_with(prefix))
        .map(|(_, call)| *call)
}

fn is_pool_worker(frame: &str) -> bool {
    frame.starts_with("System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart")
        || frame.starts_with("System.Threading.ThreadPoolWorkQueue.Dispatch")
}

/// The severity of pool workers blocked `blocked_ms` in synchronous calls, the pool
/// `starved` or not.
fn grade(blocked_ms: f64, starved: bool) -> Option<Severity> {
    if blocked_ms >= WARN_MS && starved {
        Some(Severity::Critical)
    } else if blocked_ms >= WARN_MS {
        Some(Severity::Warning)
    } else if blocked_ms >= INFO_MS {
        Some(Severity::Info)
    } else {
        None
    }
}

fn check(input: &Input<'_>) -> Option<Found> {
    let symbols = &input.a.symbols;
    let app = symbols.app_code();
    let mut total = 0.0;
    let mut sites: rustc_hash::FxHashMap<String, f64> = Default::default();
    let mut heaviest: Option<(f64, usize)> = None;
    let rows = &input.profile().rows;
    for (n, r) in rows.iter().enumerate() {
        let w = r.weight(Metric::Wait) - r.runq;
        if w <= 0.0 {
            continue;
        }
        let name = |i: usize| symbols.frame(r.frames[i]).name.as_str();
        let Some((at, call)) = (0..r.frames.len()).find_map(|i| call_of(name(i)).map(|c| (i, c)))
        else {
            continue;
        };
        if !(at..r.frames.len()).any(|i| is_pool_worker(name(i))) {
            continue;
        }
        total += w;
        // The app's own method, else a library it ships (`Newtonsoft.Json` reading a
        // stream for the app's call), else the first frame outside System.
        let caller = (at + 1..r.frames.len())
            .map(name)
            .find(|f| app.is_own(f))
            .or_else(|| (at + 1..r.frames.len()).map(name).find(|f| app.contains(f)))
            .or_else(|| {
                (at + 1..r.frames.len())
                    .map(name)
                    .find(|f| !f.starts_with("System.") && !f.starts_with('['))
            })
            .unwrap_or("[framework code]");
        *sites.entry(format!("{call} in {caller}")).or_default() += w;
        if heaviest.is_none_or(|(hw, _)| w > hw) {
            heaviest = Some((w, n));
        }
    }
    let per = input.ms_per_unit();
    let blocked_ms = total * per;
    let starvation = &input.hangs().starvation;
    let severity = grade(blocked_ms, starvation.detected)?;
    let sites = top_sites(sites.into_iter().collect(), total, 5, |w| ms(w * per));
    let starved = if starvation.detected {
        format!(
            "; the pool was starved: it injected {} threads{}",
            starvation.injections,
            starvation
                .injections_per_s
                .map(|r| format!(" ({})", rate(r)))
                .unwrap_or_default()
        )
    } else {
        String::new()
    };
    let said = format!(
        "pool threads were blocked {} in synchronous calls{}{starved}",
        ms(blocked_ms),
        sites
            .first()
            .map(|s| format!(", {}% in {}", s.percent, s.name))
            .unwrap_or_default()
    );
    let stack = heaviest
        .map(|(_, n)| {
            rows[n]
                .frames
                .iter()
                .map(|&f| symbols.frame(f).name.clone())
                .collect()
        })
        .unwrap_or_default();
    Some(
        Found::new(severity, said)
            .fact("blocked in synchronous calls", ms(blocked_ms))
            .fact("threads injected", count(starvation.injections))
            .sites(sites)
            .stack(stack),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(grade(19_000.0, true), Some(Severity::Critical));
        assert_eq!(grade(19_000.0, false), Some(Severity::Warning));
        assert_eq!(grade(200.0, true), Some(Severity::Info));
        assert_eq!(grade(20.0, false), None);
    }

    #[test]
    fn blocking_calls_and_not_their_async_twins() {
        assert_eq!(
            call_of("System.Net.Sockets.Socket.Receive(unsigned int8[],int32,int32,SocketFlags,SocketError&)"),
            Some("Socket.Receive")
        );
        assert_eq!(call_of("System.Net.Sockets.Socket.ReceiveAsync(Memory`1,SocketFlags,CancellationToken)"), None);
        assert_eq!(call_of("System.Threading.Thread.Sleep(int32)"), Some("Thread.Sleep"));
        assert_eq!(call_of("System.Net.Http.HttpClient.SendAsync"), None);
        assert_eq!(call_of("System.Net.Http.HttpClient+<SendAsync>d__1.MoveNext"), None);
        assert!(is_pool_worker("System.Threading.ThreadPoolWorkQueue.Dispatch"));
    }
}
