//! A logs session: a small session of its own (16 MB buffer in the target, no stacks, no
//! rundown, no file) enabling the app's EventSource logger (`Microsoft-Extensions-Logging`,
//! JSON messages: arguments, exceptions, scopes) and the activity ids that tie messages to
//! their scopes; its consumer turns events into [`LogRecord`]s on a channel. `clrspy logs`
//! reads it now, the agent later.

use std::ffi::OsString;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use clrspy_analysis::log_stream::{LogLevel, LogRecord, LogStream, JSON_KEYWORD, PROVIDER};
use clrspy_collect::{Action, End, EventConsumer, LaunchOptions, Lost};
use diagnostics_client::{Endpoint, Provider, SessionConfig};

use crate::{ChildEnd, LiveSession, SessionError, SessionSpec};

/// The runtime's buffer for a logs session, MB.
pub const BUFFER_MB: u32 = 16;
/// TplEventSource's keyword that flows activity ids (scopes need them).
const TASKS_FLOW_ACTIVITY_IDS: u64 = 0x80;

/// What a logs session asks for.
#[derive(Clone, Debug)]
pub struct LogsOptions {
    /// The lowest level of every category not in `filter`.
    pub level: LogLevel,
    /// `Category:Level;...` (a category is a prefix, `*` at its end allowed; the longest that
    /// matches decides), as the logger's `FilterSpecs` take it.
    pub filter: Option<String>,
    /// Stop after this long (None: until stopped or the target ends).
    pub duration: Option<Duration>,
}

impl Default for LogsOptions {
    fn default() -> LogsOptions {
        LogsOptions {
            level: LogLevel::Information,
            filter: None,
            duration: None,
        }
    }
}

/// Checks a `--filter` list: each entry `Category` or `Category:Level` with a known level.
pub fn check_filter(filter: &str) -> Result<(), String> {
    for spec in filter.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, level) = match spec.rsplit_once(':') {
            Some((n, l)) => (n.trim(), Some(l.trim())),
            None => (spec, None),
        };
        if name.is_empty() {
            return Err(format!(
                "'{spec}' names no category (use * for every category)"
            ));
        }
        if spec.contains(['"', '=']) {
            return Err(format!("'{spec}': a category has no '\"' or '='"));
        }
        if let Some(l) = level {
            if LogLevel::parse(l).is_none() {
                return Err(format!(
                    "'{spec}': unknown level '{l}' (Trace, Debug, Information, Warning, Error, Critical, None)"
                ));
            }
        }
    }
    Ok(())
}

/// The logger's `FilterSpecs`: the user's categories, and every other category (`*`) at
/// `level`; the longest category that matches a logger's name decides its level.
pub(crate) fn filter_specs(opts: &LogsOptions) -> String {
    let mut specs: Vec<String> = Vec::new();
    if let Some(f) = &opts.filter {
        for spec in f.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            match spec.rsplit_once(':') {
                Some((n, l)) => {
                    let l = LogLevel::parse(l).unwrap_or(opts.level);
                    specs.push(format!("{}:{}", n.trim(), l.name()));
                }
                None => specs.push(format!("{spec}:{}", opts.level.name())),
            }
        }
    }
    specs.push(format!("*:{}", opts.level.name()));
    specs.join(";")
}

/// The session's configuration.
pub fn session_config(opts: &LogsOptions) -> SessionConfig {
    SessionConfig {
        circular_buffer_mb: BUFFER_MB,
        rundown_keyword: 0,
        stackwalk: false,
        providers: vec![
            Provider {
                name: PROVIDER.into(),
                keywords: JSON_KEYWORD,
                // The logger's events are all LogAlways; the level decides its default
                // minimum, which FilterSpecs overrides.
                level: 5,
                // Quoted: EventPipe splits a provider's arguments at `;` otherwise, and every
                // spec after the first would be lost.
                arguments: Some(format!("FilterSpecs=\"{}\"", filter_specs(opts))),
            },
            Provider {
                name: "System.Threading.Tasks.TplEventSource".into(),
                keywords: TASKS_FLOW_ACTIVITY_IDS,
                level: 4,
                arguments: None,
            },
        ],
    }
}

/// What the session hands out.
#[derive(Debug)]
pub enum LogUpdate {
    /// The session started: messages logged from now on come.
    Started,
    /// A message.
    Record(Box<LogRecord>),
    /// Something to tell the user once (the view fell behind).
    Note(String),
}

/// Turns the session's events into records on a channel.
struct LogsFeed {
    stream: LogStream,
    out: Vec<LogRecord>,
    tx: Sender<LogUpdate>,
}

impl LogsFeed {
    fn send(&mut self) {
        for r in self.out.drain(..) {
            let _ = self.tx.send(LogUpdate::Record(Box::new(r)));
        }
    }
}

impl EventConsumer for LogsFeed {
    fn start(&mut self, _header: &nettrace::TraceHeader) {
        let _ = self.tx.send(LogUpdate::Started);
    }

    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        self.stream.event(ev, &mut self.out);
        self.send();
        Action::Continue
    }

    fn lost(&mut self, lost: &Lost) {
        let _ = self.tx.send(LogUpdate::Note(format!(
            "the live view fell behind and skipped {lost}"
        )));
    }

    fn end(&mut self, _end: &End) {
        self.stream.finish(&mut self.out);
        self.send();
    }
}

/// A running logs session.
#[derive(Debug)]
pub struct LogsSession {
    session: LiveSession,
    rx: Receiver<LogUpdate>,
}

impl LogsSession {
    fn parts(opts: &LogsOptions) -> (SessionSpec, LogsFeed, Receiver<LogUpdate>) {
        let spec = SessionSpec {
            config: session_config(opts),
            out: None,
            duration: opts.duration,
            thread_cpu: None,
            lossless: true,
        };
        let (tx, rx) = mpsc::channel();
        let feed = LogsFeed {
            stream: LogStream::new(),
            out: Vec::new(),
            tx,
        };
        (spec, feed, rx)
    }

    /// Starts reading the logs of the process behind `endpoint`.
    pub fn attach(endpoint: Endpoint, opts: &LogsOptions) -> std::io::Result<LogsSession> {
        let (spec, feed, rx) = LogsSession::parts(opts);
        let session = LiveSession::attach(endpoint, spec, vec![Box::new(feed)])?;
        Ok(LogsSession { session, rx })
    }

    /// Starts `command` and reads its logs from its first instruction; ends with the program.
    pub fn launch(
        command: Vec<OsString>,
        opts: &LogsOptions,
        launch: LaunchOptions,
    ) -> std::io::Result<LogsSession> {
        let (spec, feed, rx) = LogsSession::parts(opts);
        let session = LiveSession::launch(command, spec, vec![Box::new(feed)], launch)?;
        Ok(LogsSession { session, rx })
    }

    /// The next update, waiting up to `timeout`; `Disconnected` once the session ended and
    /// everything was handed out.
    pub fn next(&self, timeout: Duration) -> Result<LogUpdate, RecvTimeoutError> {
        self.rx.recv_timeout(timeout)
    }

    /// Asks the session to stop; [`LogsSession::join`] waits.
    pub fn stop(&self) {
        self.session.stop();
    }

    /// Waits for the session to end: how a launched program ended (None for an attach).
    pub fn join(self) -> Result<Option<ChildEnd>, SessionError> {
        self.session.join_child().map(|(_, c)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_specs_put_the_users_categories_before_the_default() {
        let o = LogsOptions {
            level: LogLevel::Warning,
            filter: Some("Microsoft.AspNetCore:Debug; MyApp.*:error;Noisy".into()),
            duration: None,
        };
        assert_eq!(
            filter_specs(&o),
            "Microsoft.AspNetCore:Debug;MyApp.*:Error;Noisy:Warning;*:Warning"
        );
        assert_eq!(filter_specs(&LogsOptions::default()), "*:Information");
        assert!(check_filter("A:Debug;B").is_ok());
        assert!(check_filter("A:Loud")
            .unwrap_err()
            .contains("unknown level 'Loud'"));
        assert!(check_filter(":Debug").is_err());
        assert!(check_filter("A\":Debug").is_err());
        let c = session_config(&o);
        assert_eq!(c.providers[0].keywords, JSON_KEYWORD);
        assert_eq!(
            c.providers[0].arguments.as_deref(),
            Some(
                "FilterSpecs=\"Microsoft.AspNetCore:Debug;MyApp.*:Error;Noisy:Warning;*:Warning\""
            )
        );
        assert!(!c.stackwalk);
    }
}
