//! How a log message is written: as the console logger writes it (`info: Category[id]`, the
//! message indented under it, the scopes, the exception), led by its UTC time, or as one JSON
//! object a line (keys: `timestamp`, `level`, `category`, `event_id`, `event_name`,
//! `message`, `args`, `exception`, `scopes`, `thread_id`). `clrspy logs` writes them live; a
//! bundle's logs go through the same functions.

use std::io::{self, Write};

use clrspy_analysis::log_stream::LogRecord;
use serde_json::{json, Map, Value};

/// The indent of the lines under a message's heading (the console logger's).
const INDENT: &str = "      ";

/// Writes `r` as the console logger does, its heading led by its UTC time.
pub fn write_log_text(out: &mut dyn Write, r: &LogRecord) -> io::Result<()> {
    writeln!(
        out,
        "{} {}: {}[{}]",
        nettrace::format_unix_ns(r.unix_ns),
        r.level.short(),
        r.category,
        r.event_id
    )?;
    if !r.scopes.is_empty() {
        let scopes: Vec<&str> = r.scopes.iter().map(String::as_str).collect();
        writeln!(out, "{INDENT}=> {}", scopes.join(" => "))?;
    }
    for line in r.message.lines() {
        writeln!(out, "{INDENT}{line}")?;
    }
    if let Some(e) = &r.exception {
        let text = if e.details.is_empty() {
            format!("{}: {}", e.type_name, e.message)
        } else {
            e.details.clone()
        };
        for line in text.lines() {
            writeln!(out, "{INDENT}{line}")?;
        }
    }
    Ok(())
}

/// `r` as its JSON object.
pub(crate) fn log_json(r: &LogRecord) -> Value {
    let args: Map<String, Value> = r
        .args
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "timestamp": nettrace::format_unix_ns(r.unix_ns),
        "level": r.level.name(),
        "category": r.category,
        "event_id": r.event_id,
        "event_name": r.event_name,
        "message": r.message,
        "args": args,
        "exception": r.exception,
        "scopes": r.scopes,
        "thread_id": r.thread_id,
    })
}

/// Writes `r` as one JSON line.
pub fn write_log_json(out: &mut dyn Write, r: &LogRecord) -> io::Result<()> {
    serde_json::to_writer(&mut *out, &log_json(r)).map_err(io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clrspy_analysis::log_stream::{LogException, LogLevel};

    fn record() -> LogRecord {
        LogRecord {
            unix_ns: 1_795_000_000_123_456_000,
            level: LogLevel::Error,
            category: "Shop.Orders".into(),
            event_id: 7,
            event_name: "OrderFailed".into(),
            message: "Order 42 failed".into(),
            args: vec![
                ("OrderId".into(), "42".into()),
                ("{OriginalFormat}".into(), "Order {OrderId} failed".into()),
            ],
            exception: Some(LogException {
                type_name: "System.TimeoutException".into(),
                message: "late".into(),
                hresult: "-2146233083".into(),
                details: "System.TimeoutException: late\n   at Shop.Pay()".into(),
            }),
            scopes: vec!["RequestPath:/pay".into(), "Order 42".into()],
            thread_id: 12,
        }
    }

    #[test]
    fn text_is_the_console_loggers_with_a_time() {
        let mut out = Vec::new();
        write_log_text(&mut out, &record()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "2026-11-18T11:06:40.123456Z fail: Shop.Orders[7]\n      => RequestPath:/pay => Order 42\n      Order 42 failed\n      System.TimeoutException: late\n         at Shop.Pay()\n"
        );
    }

    #[test]
    fn json_has_every_key() {
        let v = log_json(&record());
        for k in [
            "timestamp",
            "level",
            "category",
            "event_id",
            "message",
            "args",
            "exception",
            "scopes",
        ] {
            assert!(v.get(k).is_some(), "{k}: {v}");
        }
        assert_eq!(v["args"]["OrderId"], "42");
        assert_eq!(v["exception"]["type"], "System.TimeoutException");
        assert_eq!(v["level"], "Error");
    }
}
