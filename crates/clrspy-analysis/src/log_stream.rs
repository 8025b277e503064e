//! The app's log messages as they come, one [`LogRecord`] per message, from the
//! `Microsoft-Extensions-Logging` EventSource (its EventSource logger): level, category, event
//! id and name, the formatted message, the structured arguments, the exception and the active
//! scopes. A stream, not a model: [`LogStream::event`] turns one event into at most one record
//! and keeps only the scopes still open, so `clrspy logs` (live) and a bundle's logs (from its
//! trace) run in bounded memory at any message count.
//!
//! The logger writes each message once per keyword enabled, the formatted one first:
//! `FormattedMessage` (0x4), then `MessageJson` (0x8). The JSON event has everything
//! (arguments, exception, and the formatted text since .NET 5); a stream that sees JSON
//! messages leaves the formatted ones out, so no message is told twice (the first formatted
//! message waits for the next message to know which). Scopes (`BeginScope`) are `ActivityJsonStart`/`Stop` events; with
//! `System.Threading.Tasks.TplEventSource` keyword 0x80 each opens an activity whose related
//! activity is the scope around it, and the messages inside carry the innermost one's id.

use nettrace::{DecodedPayload, Value};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// The logging provider's name.
pub const PROVIDER: &str = "Microsoft-Extensions-Logging";
/// Its `MessageJson` keyword (messages, arguments, exceptions and scopes as JSON).
pub const JSON_KEYWORD: u64 = 0x8;
/// Open scopes kept at most (a scope whose stop never comes is dropped past this).
const MAX_SCOPES: usize = 100_000;

/// `Microsoft.Extensions.Logging.LogLevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum LogLevel {
    /// 0.
    Trace,
    /// 1.
    Debug,
    /// 2.
    Information,
    /// 3.
    Warning,
    /// 4.
    Error,
    /// 5.
    Critical,
    /// 6 (nothing is logged at it).
    None,
}

impl LogLevel {
    /// Every level, lowest first.
    pub const ALL: [LogLevel; 7] = [
        LogLevel::Trace,
        LogLevel::Debug,
        LogLevel::Information,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::None,
    ];

    /// The level of a number as the logger writes it.
    pub(crate) fn from_number(n: i64) -> Option<LogLevel> {
        usize::try_from(n)
            .ok()
            .and_then(|i| LogLevel::ALL.get(i).copied())
    }

    /// Its name (`Information`).
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Trace => "Trace",
            LogLevel::Debug => "Debug",
            LogLevel::Information => "Information",
            LogLevel::Warning => "Warning",
            LogLevel::Error => "Error",
            LogLevel::Critical => "Critical",
            LogLevel::None => "None",
        }
    }

    /// The console logger's four letters (`info`, `warn`, `fail`, `crit`...).
    pub fn short(self) -> &'static str {
        match self {
            LogLevel::Trace => "trce",
            LogLevel::Debug => "dbug",
            LogLevel::Information => "info",
            LogLevel::Warning => "warn",
            LogLevel::Error => "fail",
            LogLevel::Critical => "crit",
            LogLevel::None => "none",
        }
    }

    /// A level by name, number, or the console logger's short name (case-insensitive).
    pub fn parse(s: &str) -> Option<LogLevel> {
        let s = s.trim();
        if let Ok(n) = s.parse::<i64>() {
            return LogLevel::from_number(n);
        }
        LogLevel::ALL.into_iter().find(|l| {
            l.name().eq_ignore_ascii_case(s)
                || l.short().eq_ignore_ascii_case(s)
                || (s.eq_ignore_ascii_case("info") && *l == LogLevel::Information)
                || (s.eq_ignore_ascii_case("warn") && *l == LogLevel::Warning)
        })
    }
}

impl std::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The exception a message carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogException {
    /// Its type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its message.
    pub message: String,
    /// Its HResult, as the logger wrote it.
    pub hresult: String,
    /// `ToString()`: type, message, stack and inner exceptions.
    pub details: String,
}

/// One log message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogRecord {
    /// When, ns since the Unix epoch (UTC).
    pub unix_ns: i64,
    /// Its level.
    pub level: LogLevel,
    /// The logger's category.
    pub category: String,
    /// The event id.
    pub event_id: i64,
    /// The event name (empty when none).
    pub event_name: String,
    /// The message, formatted.
    pub message: String,
    /// The structured arguments, in order (`{OriginalFormat}` is the message template).
    pub args: Vec<(String, String)>,
    /// The exception, when one was logged.
    pub exception: Option<LogException>,
    /// The scopes around it, outermost first, each as its formatted text.
    pub scopes: Vec<String>,
    /// The OS thread that logged it.
    pub thread_id: u64,
}

/// One open scope.
#[derive(Clone, Debug)]
struct Scope {
    parent: [u8; 16],
    text: String,
}

/// Turns the logging provider's events into [`LogRecord`]s.
#[derive(Debug, Default)]
pub struct LogStream {
    scopes: FxHashMap<[u8; 16], Scope>,
    /// A JSON message was seen: the formatted ones are copies.
    json_seen: bool,
    /// Two formatted messages came with no JSON one between: there are none.
    formatted_only: bool,
    /// The first formatted message, until it is known whether its JSON copy follows.
    pending: Option<LogRecord>,
    /// Messages handed out.
    pub messages: u64,
}

/// The value of field `name` of a decoded payload, as text.
fn text(d: &DecodedPayload, name: &str) -> String {
    match d.fields.iter().find(|f| f.name == name).map(|f| &f.value) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.as_i64().map(|n| n.to_string()).unwrap_or_default(),
        None => String::new(),
    }
}

/// The value of field `name` as a number.
fn number(d: &DecodedPayload, name: &str) -> Option<i64> {
    d.fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.value.as_i64())
}

/// A JSON object's members as text pairs, in order (values that are not strings as JSON).
fn json_pairs(s: &str) -> Vec<(String, String)> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(s) else {
        return Vec::new();
    };
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => (k, s),
            v => (k, v.to_string()),
        })
        .collect()
}

/// A scope's text: its template with the arguments put in, as `ToString()` gives it (the
/// arguments themselves when there is no template).
fn scope_text(args: &[(String, String)]) -> String {
    let template = args.iter().find(|(k, _)| k == "{OriginalFormat}");
    match template {
        Some((_, t)) => fill_template(t, args),
        None => args
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `template` with each `{Name}` (or `{Name:format}`) replaced by its argument.
fn fill_template(template: &str, args: &[(String, String)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        if let Some(stripped) = after.strip_prefix('{') {
            out.push('{');
            rest = stripped;
            continue;
        }
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let hole = &after[..close];
        let name = hole.split([':', ',']).next().unwrap_or(hole);
        match args.iter().find(|(k, _)| k == name) {
            Some((_, v)) => out.push_str(v),
            None => {
                out.push('{');
                out.push_str(hole);
                out.push('}');
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out.replace("}}", "}")
}

/// The exception of a message's `ExceptionJson` (none when it is `{}`).
fn exception(json: &str) -> Option<LogException> {
    let pairs = json_pairs(json);
    let get = |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let e = LogException {
        type_name: get("TypeName"),
        message: get("Message"),
        hresult: get("HResult"),
        details: get("VerboseMessage"),
    };
    (!e.type_name.is_empty() || !e.details.is_empty()).then_some(e)
}

impl LogStream {
    /// A stream with no scope open.
    pub fn new() -> LogStream {
        LogStream::default()
    }

    /// Reads one event: a message of the logging provider goes to `out` as its record (the
    /// first formatted one may wait for the next message); scope starts and stops are kept;
    /// anything else is left alone.
    pub fn event(&mut self, ev: &nettrace::Event<'_>, out: &mut Vec<LogRecord>) {
        if ev.provider() != PROVIDER {
            return;
        }
        let name = ev.metadata_name();
        let id = ev.activity_id.0;
        match name {
            "MessageJson" => {
                self.json_seen = true;
                // The formatted copy of this message, if it waited, is dropped.
                self.pending = None;
                let d = ev.decode_with_metadata();
                let args = json_pairs(&text(&d, "ArgumentsJson"));
                let ex = exception(&text(&d, "ExceptionJson"));
                out.push(self.record(ev, &d, args, ex));
            }
            "FormattedMessage" if !self.json_seen => {
                let d = ev.decode_with_metadata();
                let r = self.record(ev, &d, Vec::new(), None);
                if self.formatted_only {
                    out.push(r);
                } else if let Some(first) = self.pending.take() {
                    // A second formatted message and no JSON copy of the first: none come.
                    self.formatted_only = true;
                    out.push(first);
                    out.push(r);
                } else {
                    self.pending = Some(r);
                }
            }
            "ActivityJsonStart" | "ActivityStart" if !ev.activity_id.is_zero() => {
                let d = ev.decode_with_metadata();
                let args = match name {
                    "ActivityJsonStart" => json_pairs(&text(&d, "ArgumentsJson")),
                    _ => Vec::new(),
                };
                if self.scopes.len() >= MAX_SCOPES {
                    self.scopes.clear();
                }
                self.scopes.insert(
                    id,
                    Scope {
                        parent: ev.related_activity_id.0,
                        text: scope_text(&args),
                    },
                );
            }
            "ActivityJsonStop" | "ActivityStop" => {
                self.scopes.remove(&id);
            }
            _ => {}
        }
    }

    /// The end of the events: a formatted message still waiting goes to `out`.
    pub fn finish(&mut self, out: &mut Vec<LogRecord>) {
        out.extend(self.pending.take());
    }

    /// The scopes around activity `id`, outermost first.
    fn scopes_of(&self, mut id: [u8; 16]) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(s) = self.scopes.get(&id) {
            out.push(s.text.clone());
            if out.len() > 64 || s.parent == id {
                break;
            }
            id = s.parent;
        }
        out.reverse();
        out
    }

    fn record(
        &mut self,
        ev: &nettrace::Event<'_>,
        d: &DecodedPayload,
        args: Vec<(String, String)>,
        exception: Option<LogException>,
    ) -> LogRecord {
        self.messages += 1;
        let level = number(d, "Level")
            .and_then(LogLevel::from_number)
            .unwrap_or(LogLevel::Information);
        let mut message = text(d, "FormattedMessage");
        if message.is_empty() {
            // Runtimes before .NET 5 wrote no formatted text in the JSON event.
            if let Some((_, t)) = args.iter().find(|(k, _)| k == "{OriginalFormat}") {
                message = fill_template(t, &args);
            }
        }
        LogRecord {
            unix_ns: ev.unix_ns(),
            level,
            category: text(d, "LoggerName"),
            event_id: number(d, "EventId").unwrap_or(0),
            event_name: text(d, "EventName"),
            message,
            args,
            exception,
            scopes: self.scopes_of(ev.activity_id.0),
            thread_id: ev.thread_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_filled_as_the_logger_formats_them() {
        let args = vec![
            ("OrderId".to_string(), "42".to_string()),
            ("Total".to_string(), "9.5".to_string()),
        ];
        assert_eq!(
            fill_template(
                "Order {OrderId} costs {Total:F2} {{literal}} {Missing}",
                &args
            ),
            "Order 42 costs 9.5 {literal} {Missing}"
        );
        assert_eq!(fill_template("open {brace", &args), "open {brace");
        let with_template = [
            args.clone(),
            vec![("{OriginalFormat}".into(), "Order {OrderId}".into())],
        ]
        .concat();
        assert_eq!(scope_text(&with_template), "Order 42");
        assert_eq!(scope_text(&args), "OrderId:42, Total:9.5");
    }

    #[test]
    fn levels_by_name_number_and_short_name() {
        assert_eq!(LogLevel::parse("warning"), Some(LogLevel::Warning));
        assert_eq!(LogLevel::parse("WARN"), Some(LogLevel::Warning));
        assert_eq!(LogLevel::parse("fail"), Some(LogLevel::Error));
        assert_eq!(LogLevel::parse("1"), Some(LogLevel::Debug));
        assert_eq!(LogLevel::parse("7"), None);
        assert_eq!(LogLevel::parse("loud"), None);
    }

    #[test]
    fn exceptions_from_json_and_none_for_an_empty_object() {
        let e = exception(
            r#"{"TypeName":"System.InvalidOperationException","Message":"bad","HResult":"-2146233079","VerboseMessage":"System.InvalidOperationException: bad\n   at X"}"#,
        )
        .unwrap();
        assert_eq!(e.type_name, "System.InvalidOperationException");
        assert_eq!(e.message, "bad");
        assert!(e.details.contains("at X"));
        assert!(exception("{}").is_none());
        assert!(exception("not json").is_none());
    }
}

#[cfg(test)]
mod trace_tests {
    use super::*;

    /// Every record of a committed test trace (crates/clrspy/tests/data).
    fn records(name: &str) -> Vec<LogRecord> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clrspy/tests/data")
            .join(name);
        let trace = crate::trace_file::OpenTrace::open(&path).unwrap();
        let mut reader = trace.reader().unwrap();
        let mut stream = LogStream::new();
        let mut out = Vec::new();
        while let Some(ev) = reader.next_event().unwrap() {
            stream.event(&ev, &mut out);
        }
        stream.finish(&mut out);
        out
    }

    #[test]
    fn both_keywords_give_each_message_once_with_its_arguments() {
        // One /log request's messages, each written twice (its README).
        let r = records("webapp-logs-both.nettrace.zip");
        let cats: Vec<&str> = r.iter().map(|m| m.category.as_str()).collect();
        assert_eq!(r.len(), 5, "{cats:?}");
        let warning = r.iter().find(|m| m.category == "WebApp.Requests").unwrap();
        assert_eq!(warning.level, LogLevel::Warning);
        assert!(!warning.args.is_empty(), "{warning:?}");
        assert!(warning.unix_ns > 1_700_000_000_000_000_000);
    }

    #[test]
    fn formatted_messages_alone_are_every_message() {
        // 93 messages, FormattedMessage only; WebApp.Requests: 5 warnings (its README).
        let r = records("webapp-eventsources.nettrace.zip");
        assert_eq!(r.len(), 93);
        let warnings = r
            .iter()
            .filter(|m| m.category == "WebApp.Requests" && m.level == LogLevel::Warning)
            .count();
        assert_eq!(warnings, 5);
        assert!(r.iter().all(|m| m.args.is_empty() && !m.message.is_empty()));
    }
}
