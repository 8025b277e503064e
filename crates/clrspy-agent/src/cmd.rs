//! The commands: `clrspy agent` (serve), `clrspy agent new-key [--json]` and `clrspy agent
//! schema` — their options and their runs, on a tokio runtime of two worker threads.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clrspy_cli::Failure;

use crate::audit::AuditLog;
use crate::auth::Authenticator;
use crate::config::{settle, Config, Overrides, Settings};
use crate::drain::Drain;
use crate::error::AgentError;
use crate::limits::Limits;
use crate::server::{bind, serve, tls_acceptor, ServeOptions};
use crate::state::AppState;

/// `clrspy agent`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AgentArgs {
    /// `new-key` or `schema`.
    #[command(subcommand)]
    pub(crate) action: Option<AgentAction>,
    /// How to serve.
    #[command(flatten)]
    pub(crate) serve: ServeArgs,
}

/// `clrspy agent`'s subcommands.
#[derive(clap::Subcommand, Debug)]
pub(crate) enum AgentAction {
    /// Make an API key and its hash: clients send the key, the agent's config holds the hash.
    #[command(after_help = "Examples:\n  clrspy agent new-key\n  clrspy agent new-key --json")]
    NewKey {
        /// Print `{"key": ..., "hash": ...}`.
        #[arg(long)]
        json: bool,
    },
    /// Print the config file's JSON Schema.
    #[command(after_help = "Examples:\n  clrspy agent schema > agent.schema.json")]
    Schema,
}

/// How `clrspy agent` serves.
#[derive(clap::Args, Debug)]
pub(crate) struct ServeArgs {
    /// The config file (TOML; `clrspy agent schema` prints its schema, docs/agent.md explains it).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Where to listen, comma-separated, instead of the config's (default http://127.0.0.1:52323;
    /// port 0 picks a free one).
    #[arg(long, value_name = "URL,...", value_delimiter = ',')]
    pub(crate) urls: Vec<String>,
    /// The hex SHA-256 of an API key to accept (as `clrspy agent new-key` prints it); repeatable.
    #[arg(long = "api-key-hash", value_name = "HASH")]
    pub(crate) api_key_hashes: Vec<String>,
    /// Start even without credentials, or on a non-loopback address without TLS (warns).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Run the watcher on this rules file (instead of the config's `[rules] file`); `/rules`
    /// shows it.
    #[arg(long, value_name = "FILE")]
    pub(crate) rules: Option<PathBuf>,
    /// Write the audit log here instead of the config's `audit_log` (default: audit.jsonl in
    /// the agent's folder).
    #[arg(long, value_name = "FILE")]
    pub(crate) audit_log: Option<PathBuf>,
}

/// Runs `clrspy agent ...`.
pub fn run(args: &AgentArgs) -> Result<ExitCode, Failure> {
    let mut out = std::io::stdout().lock();
    let written = match &args.action {
        Some(AgentAction::NewKey { json }) => {
            let k = crate::keys::new_key().map_err(|e| Failure::new(e.to_string()))?;
            if *json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "key": k.key, "hash": k.hash })
                )
            } else {
                writeln!(
                    out,
                    "Key:  {}\nHash: {}\nKeep the key secret (clients send it as `Authorization: Bearer KEY`); \
                     put only the hash in the agent's config (auth.api_key_hashes) or pass it with --api-key-hash.",
                    k.key, k.hash
                )
            }
        }
        Some(AgentAction::Schema) => writeln!(out, "{}", crate::config::schema_json()),
        None => {
            drop(out);
            return serve_command(&args.serve);
        }
    };
    written.map_err(|e| Failure::new(format!("writing: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn refusal(e: AgentError) -> Failure {
    match e {
        AgentError::Config(_) | AgentError::Refused(_) => Failure::usage(e.to_string()),
        e => Failure::new(e.to_string()),
    }
}

fn serve_command(args: &ServeArgs) -> Result<ExitCode, Failure> {
    let config = match &args.config {
        Some(p) => Config::load(p).map_err(refusal)?,
        None => Config::default(),
    };
    let over = Overrides {
        urls: args.urls.clone(),
        api_key_hashes: args.api_key_hashes.clone(),
        insecure: args.insecure,
        rules: args.rules.clone(),
        audit_log: args.audit_log.clone(),
    };
    let settings = settle(config, &over).map_err(refusal)?;
    for w in &settings.warnings {
        eprintln!("clrspy agent: warning: {w}");
    }
    limit_malloc_arenas();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(32)
        .thread_name("clrspy-agent")
        .enable_all()
        .build()
        .map_err(|e| Failure::new(format!("starting the runtime: {e}")))?;
    let result = rt.block_on(run_server(settings));
    rt.shutdown_timeout(Duration::from_secs(1));
    result.map_err(refusal)?;
    Ok(ExitCode::SUCCESS)
}

/// glibc gives each thread that allocates an arena of its own: with two workers and up to 32
/// blocking threads (and the listing's thread per runtime) that is memory held for nothing.
/// Two arenas keep the agent small and steady (measured: 1.7 MB less RSS after 50 listings).
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any thread is started.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Serves until SIGINT or SIGTERM, then stops as [`crate::drain`] says.
pub(crate) async fn run_server(settings: Settings) -> Result<(), AgentError> {
    let auth = if settings.open {
        Authenticator::open()
    } else {
        let jwt = settings.jwt.as_ref().map(|j| j.verifier()).transpose()?;
        Authenticator::new(settings.key_hashes.clone(), jwt)
    };
    let tls = match &settings.tls {
        Some(t) if settings.listen.iter().any(|l| l.tls) => Some(tls_acceptor(t)?),
        _ => None,
    };
    crate::folder::prepare(&settings.folder)?;
    let audit = Arc::new(AuditLog::open(&settings.audit_log)?);
    let watcher = settings
        .rules
        .as_ref()
        .map(crate::rules_host::RulesHost::start)
        .transpose()?;
    let folder = settings.folder.clone();
    // Removing a dead agent's leftovers walks folders: off the async workers.
    let _ = tokio::task::spawn_blocking(move || crate::operations::sweep(&folder)).await;
    let metrics = crate::metrics::Collector::start(settings.metrics.clone())
        .map(Arc::new)
        .map_err(|e| AgentError::Io(format!("starting the metrics collector: {e}")))?;
    let budget = crate::artifact::Budget::from_mb(settings.disk_mb);
    let drain = Drain::new();
    let state = AppState {
        auth: Arc::new(auth),
        limits: Arc::new(Limits::new(&settings.concurrent)),
        request_timeout: settings.request_timeout,
        folder: settings.folder.clone(),
        audit,
        drain: drain.clone(),
        metrics: metrics.clone(),
        rules: watcher.as_ref().map(crate::rules_host::RulesHost::handle),
        operations: Arc::new(crate::operations::Operations::new(
            &settings.folder,
            budget,
            crate::operations::KEEP_FINISHED,
        )),
    };
    let app = crate::routes::app(state, settings.max_body_bytes);
    let opts = ServeOptions {
        header_timeout: settings.header_timeout,
        max_connections: settings.max_connections,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for (l, sock) in bind(&settings.listen).await? {
        eprintln!("clrspy agent: listening on {}", l.url());
        let acceptor = if l.tls { tls.clone() } else { None };
        tasks.spawn(serve(sock, app.clone(), acceptor, opts.clone()));
    }
    wait_for_signal().await?;
    // No new connection; the open ones are answered 503 from now on.
    tasks.abort_all();
    let grace = settings.shutdown_grace;
    let n = drain.in_flight();
    if n > 0 {
        eprintln!(
            "clrspy agent: stopping: {n} response(s) in flight (streams asked to end); \
             waiting up to {} s",
            grace.as_secs()
        );
    } else {
        eprintln!("clrspy agent: stopping");
    }
    let cut = drain.finish(grace).await;
    if cut > 0 {
        eprintln!(
            "clrspy agent: {cut} response(s) still in flight after {} s were cut \
             (limits.shutdown_grace)",
            grace.as_secs()
        );
    } else if n > 0 {
        eprintln!("clrspy agent: every response in flight finished");
    }
    // The targets' sessions are ended, not left to notice the agent is gone.
    let _ = tokio::task::spawn_blocking(move || metrics.shutdown()).await;
    // The watcher finishes its open traces whole.
    if let Some(w) = watcher {
        if let Ok(Err(e)) = tokio::task::spawn_blocking(move || w.stop()).await {
            eprintln!("clrspy agent: the watcher: {e}");
        }
    }
    Ok(())
}

async fn wait_for_signal() -> Result<(), AgentError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| AgentError::Io(format!("watching for SIGTERM: {e}")))?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    Ok(())
}
