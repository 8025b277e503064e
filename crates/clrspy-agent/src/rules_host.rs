//! The watcher inside the agent: the rules file checked at start as `clrspy rules check` checks it
//! (a bad file stops the agent from starting, naming each mistake), clrspy-watch's `watch` run on a
//! thread of its own (off the async runtime) writing to the rules' output folder (private, 0700),
//! its read-only view shared with `/rules`, and on shutdown a stop request and a wait (open traces
//! are finished whole).

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clrspy_rules::{LoadError, RuleSet};
use clrspy_watch::{WatchControl, WatchEnd, WatchError, WatchOptions, WatchView};

use crate::error::AgentError;

/// How often the watcher lists the runtimes' sockets (as `clrspy watch` by default).
const POLL: Duration = Duration::from_millis(250);
/// How long the start waits to see the watch running (or failing) before it goes on.
const START_WAIT: Duration = Duration::from_secs(3);

/// Where the rules come from and where their files go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RulesSettings {
    /// The rules file (TOML or JSON, as `clrspy watch` takes it).
    pub(crate) file: PathBuf,
    /// The output folder: the decisions log and a folder per rule.
    pub(crate) output: PathBuf,
    /// A socket to listen on as a reverse diagnostic port (`clrspy watch --listen`): runtimes
    /// started with `DOTNET_DiagnosticPorts=SOCKET,connect,suspend` connect to it held at
    /// their first instruction, for startup rules.
    pub(crate) listen: Option<PathBuf>,
}

/// The rules' output folder when the config names none: `rules` in the agent's folder.
pub(crate) fn default_output(folder: &std::path::Path) -> PathBuf {
    folder.join("rules")
}

/// The rules file's problems in words, one mistake per `FILE:LINE:COLUMN: message`.
fn load_error(e: LoadError) -> AgentError {
    match e {
        LoadError::Invalid { path, errors } => AgentError::Config(format!(
            "the rules file {} has {} mistake(s); the agent did not start:\n{}",
            path.display(),
            errors.len(),
            errors
                .iter()
                .map(|d| format!("{}:{}:{}: {}", path.display(), d.line, d.column, d.message))
                .collect::<Vec<_>>()
                .join("\n")
        )),
        e => AgentError::Config(e.to_string()),
    }
}

/// What the routes hold of the running watcher: its view, and its requests (reload).
#[derive(Clone, Debug)]
pub(crate) struct RulesHandle {
    /// The per-rule state and decisions.
    pub(crate) view: Arc<WatchView>,
    /// Stop and reload requests.
    pub(crate) control: Arc<WatchControl>,
}

/// The running watcher.
pub(crate) struct RulesHost {
    view: Arc<WatchView>,
    control: Arc<WatchControl>,
    thread: Option<JoinHandle<Result<WatchEnd, WatchError>>>,
}

impl RulesHost {
    /// Checks the rules file and prepares the output folder (errors: the agent does not start),
    /// then starts watching on a thread of its own.
    pub(crate) fn start(s: &RulesSettings) -> Result<RulesHost, AgentError> {
        let rules = RuleSet::load(&s.file).map_err(load_error)?;
        crate::folder::prepare(&s.output)
            .map_err(|e| AgentError::Config(format!("the rules' output folder: {e}")))?;
        let view = WatchView::new();
        let control = Arc::new(WatchControl::new());
        let opts = WatchOptions {
            rules_path: s.file.clone(),
            out: s.output.clone(),
            listen: s.listen.clone(),
            poll: POLL,
        };
        let (v, c) = (view.clone(), control.clone());
        let thread = std::thread::Builder::new()
            .name("clrspy-agent-watch".into())
            .spawn(move || clrspy_watch::watch_with_view(rules, &opts, &c, Box::new(|_| {}), v))
            .map_err(|e| AgentError::Io(format!("starting the watcher: {e}")))?;
        // A watch that cannot start (its listen socket, its output) stops the agent from
        // starting too, rather than leaving `/rules` to say so later.
        let until = Instant::now() + START_WAIT;
        while !view.summary().watching && !thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if thread.is_finished() {
            return Err(match thread.join() {
                Ok(Err(e)) => AgentError::Config(format!("the rules' watch: {e}")),
                Ok(Ok(_)) => AgentError::Config("the rules' watch ended at once".into()),
                Err(_) => AgentError::Io("the watcher's thread panicked".into()),
            });
        }
        Ok(RulesHost {
            view,
            control,
            thread: Some(thread),
        })
    }

    /// The watcher's view (for `/rules`).
    #[cfg(test)]
    pub(crate) fn view(&self) -> Arc<WatchView> {
        self.view.clone()
    }

    /// What the routes hold of it.
    pub(crate) fn handle(&self) -> RulesHandle {
        RulesHandle {
            view: self.view.clone(),
            control: self.control.clone(),
        }
    }

    /// Asks the watcher to stop and waits for it (blocking: open traces finish whole). Its
    /// error, when it could not watch at all, in words.
    pub(crate) fn stop(mut self) -> Result<WatchEnd, String> {
        self.control.request_stop();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(end))) => Ok(end),
            Some(Ok(Err(e))) => Err(e.to_string()),
            Some(Err(_)) => Err("the watcher's thread panicked".into()),
            None => Ok(WatchEnd::default()),
        }
    }
}

impl Drop for RulesHost {
    fn drop(&mut self) {
        self.control.request_stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_rules_file_names_its_mistakes_and_a_good_one_watches_until_stopped() {
        let base =
            std::env::temp_dir().join(format!("clrspy-agent-rules-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let file = base.join("rules.json");
        std::fs::write(
            &file,
            "{\"rules\":[{\"name\":\"a\",\n\"match\":{\"name\":\"\"},\"dump\":{}}]}",
        )
        .unwrap();
        let s = RulesSettings {
            file: file.clone(),
            output: base.join("out"),
            listen: None,
        };
        let e = RulesHost::start(&s).err().unwrap();
        assert!(matches!(e, AgentError::Config(_)));
        assert!(e.to_string().contains("rules.json:2:"), "{e}");
        let missing = RulesSettings {
            file: base.join("none.json"),
            ..s.clone()
        };
        assert!(RulesHost::start(&missing).is_err());
        std::fs::write(
            &file,
            r#"{"rules":[{"name":"a","match":{"name":"no-such-process-4711"},"dump":{}}]}"#,
        )
        .unwrap();
        let host = RulesHost::start(&s).unwrap();
        let view = host.view();
        for _ in 0..200 {
            if view.summary().watching {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(view.summary().watching);
        assert_eq!(view.rules()[0].name, "a");
        assert_eq!(host.stop().unwrap(), WatchEnd::default());
        assert!(!view.summary().watching);
        assert!(base.join("out/decisions.jsonl").is_file());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
