//! What `clrspy rules schema` and `clrspy rules example` print: the JSON Schema of the rules
//! file (from the same types that read it) and a commented starting point.

use crate::model::RulesFile;

/// The JSON Schema of the rules file (draft 2020-12), for editors.
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<RulesFile>();
    schema.to_value()
}

/// A commented starting point in TOML (JSON has no comments; [`EXAMPLE_JSON`] is the same
/// rules in JSON).
pub const EXAMPLE_TOML: &str = r#"# clrspy rules: which .NET processes get which treatment.
# Check with `clrspy rules check FILE`; run with `clrspy watch --rules FILE --out DIR`.
# Every file a rule writes goes to DIR/<rule name>/<process>_<pid>_<UTC yyyyMMdd_HHmmss>.<ext>.
# Values read as every clrspy flag reads them (docs/commands.md, "Values"): durations are a number and
# ms, s, m or h ("250ms", "10m"; a bare number is seconds; at most 30 days); name patterns
# (name, entry_assembly, cgroup, on_exception, stop_on) ignore case and take * (any run) and
# ? (one character) anywhere.

[[rules]]
name = "compiler-dumps"
# Every condition given must hold. name: a name pattern over the entry assembly ("csc" for
# `dotnet csc.dll`), the executable's name or /proc/PID/comm.
match = { name = "csc*", command_line = "--shared" }   # command_line: a regular expression
# A mini dump on the first InvalidCastException (first chance), gzip-compressed.
dump = { type = "mini", on_exception = ["*.InvalidCastException"], compress = "gzip" }
# At most two dumps while watch runs; the folder keeps at most 2 GB (oldest removed first).
limits = { max_actions = 2, disk_mb = 2048 }

[[rules]]
name = "worker-crashes"
# The dump the runtime writes when a worker crashes, gzip-compressed into this rule's folder
# with its crash report, the fatal exception logged. The runtime writes one only when the
# worker was started with DOTNET_DbgEnableMiniDump=1 (DOTNET_EnableCrashReport=1 for the
# report, DOTNET_DbgMiniDumpName for the place); otherwise watch logs that it cannot.
match = { name = "Worker*" }
dump = { on_crash = true, compress = "gzip" }

[[rules]]
name = "test-run"
# A script and every .NET program it starts (at any depth): one trace per process.
match = { command_line = "run-tests\\.sh" }
children = true
trace = { profile = "cpu", duration = "10m" }
limits = { max_actions = 50 }

[[rules]]
name = "slow-web"
match = { name = "web*" }
# also: user = "www-data" (or a uid), entry_assembly = "Web*",
#       container = { inside = true, cgroup = "*docker-*", pid_namespace = 4026532210 }
[rules.trace]
profile = "cpu"          # `clrspy record --list-profiles`; or providers = ["Name:Keywords:Level"]
ring_mb = 64             # keep only the last 64 MB until the trace ends
stop_on = [{ exception = "System.Net.*" }, { gc_pause_ms = 200 }]
after_trigger = "5s"     # record 5 s more after a trigger fires
# duration = "30s"       # or stop after a fixed time
[rules.limits]
cooldown = "10m"         # at most one trace every 10 minutes
max_actions = 20

[[rules]]
name = "api-handoff"
# A support bundle of the slow moment, as `clrspy bundle` leaves it: the trace and its
# reports, the app's logs, system metrics and the runtime's counters, zipped (redacted) as
# DIR/api-handoff/<process>_<pid>_<stamp>.bundle.zip. With stop_on it waits, keeping the
# newest ring_mb of trace, and keeps the bundle only when a trigger fired.
match = { name = "api*" }
[rules.bundle]
ring_mb = 128            # what led to the slow moment is kept
stop_on = [{ counter = "cpu-usage>80" }, { exception = "System.TimeoutException" }]
duration = "12h"         # wait at most 12 h (otherwise until the process ends)
after_trigger = "10s"
# profile = "cpu", providers = [...], with = ["heap"] or ["dump"], log_level = "warning",
# redact = false (secrets are redacted by default)
[rules.limits]
max_actions = 3          # each bundle counts one
cooldown = "1h"
disk_mb = 4096           # the zips count against it
"#;

/// [`EXAMPLE_TOML`]'s rules in JSON.
pub const EXAMPLE_JSON: &str = r#"{
  "rules": [
    {
      "name": "compiler-dumps",
      "description": "a mini dump of the shared compiler on its first InvalidCastException",
      "match": { "name": "csc*", "command_line": "--shared" },
      "dump": { "type": "mini", "on_exception": ["*.InvalidCastException"], "compress": "gzip" },
      "limits": { "max_actions": 2, "disk_mb": 2048 }
    },
    {
      "name": "worker-crashes",
      "description": "the runtime's own dump when a worker crashes (started with DOTNET_DbgEnableMiniDump=1), compressed",
      "match": { "name": "Worker*" },
      "dump": { "on_crash": true, "compress": "gzip" }
    },
    {
      "name": "test-run",
      "description": "a script and every .NET program it starts (at any depth): one trace per process",
      "match": { "command_line": "run-tests\\.sh" },
      "children": true,
      "trace": { "profile": "cpu", "duration": "10m" },
      "limits": { "max_actions": 50 }
    },
    {
      "name": "slow-web",
      "description": "the last 64 MB of CPU samples before a network exception or a long GC pause",
      "match": { "name": "web*" },
      "trace": {
        "profile": "cpu",
        "ring_mb": 64,
        "stop_on": [{ "exception": "System.Net.*" }, { "gc_pause_ms": 200 }],
        "after_trigger": "5s"
      },
      "limits": { "cooldown": "10m", "max_actions": 20 }
    },
    {
      "name": "api-handoff",
      "description": "a support bundle (trace, reports, logs, metrics, counters) of the moment the CPU goes over 80% or a timeout is thrown, with the 128 MB of trace that led to it",
      "match": { "name": "api*" },
      "bundle": {
        "ring_mb": 128,
        "stop_on": [{ "counter": "cpu-usage>80" }, { "exception": "System.TimeoutException" }],
        "duration": "12h",
        "after_trigger": "10s"
      },
      "limits": { "max_actions": 3, "cooldown": "1h", "disk_mb": 4096 }
    }
  ]
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{RuleSet, Syntax};

    #[test]
    fn the_examples_are_valid_and_agree() {
        let t = RuleSet::parse(EXAMPLE_TOML, Syntax::Toml).unwrap();
        let j = RuleSet::parse(EXAMPLE_JSON, Syntax::Json).unwrap();
        assert_eq!(t.rules.len(), j.rules.len());
        for (a, b) in t.rules.iter().zip(&j.rules) {
            assert_eq!(a.name, b.name);
            assert_eq!(a.limits, b.limits);
            assert_eq!(a.children, b.children);
        }
        assert!(t.rules.iter().any(|r| r.children));
        assert!(j
            .rules
            .iter()
            .any(|r| r.dump.as_ref().is_some_and(|d| d.on_crash)));
        for set in [&t, &j] {
            let b = set
                .rules
                .iter()
                .find_map(|r| r.bundle.as_ref())
                .expect("a bundle rule");
            assert_eq!(b.ring_mb, Some(128));
            assert_eq!(b.stop_on.len(), 2);
            assert_eq!(b.window(), std::time::Duration::from_secs(12 * 3600));
            assert!(b.redact);
        }
    }

    #[test]
    fn the_schema_describes_the_fields() {
        let s = json_schema();
        let text = s.to_string();
        for field in [
            "rules",
            "match",
            "command_line",
            "on_exception",
            "ring_mb",
            "max_actions",
            "gc_pause_ms",
            "children",
            "on_crash",
            "analyze",
            "bundle",
            "after_trigger",
            "log_level",
            "redact",
        ] {
            assert!(text.contains(&format!("\"{field}\"")), "{field} missing");
        }
        assert_eq!(s["type"], "object");
        let b = &s["$defs"]["BundleAction"]["properties"];
        assert_eq!(b["redact"]["default"], true, "{b}");
        assert!(b["with"].is_object() && b["stop_on"].is_object(), "{b}");
    }
}
