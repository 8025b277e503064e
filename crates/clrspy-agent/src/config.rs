//! The agent's configuration: the TOML file's shape (with its JSON Schema), the command line's
//! additions to it, and the checks that decide whether the agent may start at all (a
//! non-loopback address needs TLS and credentials; no credentials at all needs `--insecure`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

/// The address the agent listens on when neither the config nor `--urls` names one.
pub(crate) const DEFAULT_URL: &str = "http://127.0.0.1:52323";

/// The agent's configuration file (TOML). A key the file leaves out takes its value from
/// [`Config::default`], which is also what the agent runs with when started from flags alone
/// and what the schema states: each default is written once, in a `Default` impl.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Config {
    /// The addresses to listen on, e.g. `http://127.0.0.1:52323` or `https://0.0.0.0:52323`
    /// (`+` and `*` mean every address; `localhost` means 127.0.0.1).
    pub(crate) urls: Vec<String>,
    /// TLS: needed by every `https://` address.
    pub(crate) tls: Option<TlsConfig>,
    /// Who may call the API.
    pub(crate) auth: AuthConfig,
    /// Bounds on requests.
    pub(crate) limits: LimitsConfig,
    /// The agent's own folder for what it writes (dumps, heap snapshots, streams' spools,
    /// temporary traces): made 0700; an existing one that others may read or write is
    /// refused. Default: `clrspy-agent-UID` in the temporary directory.
    pub(crate) folder: Option<PathBuf>,
    /// The most the agent's folder may hold, MB (dumps, heap snapshots and streams' spools
    /// together: 507 beyond).
    pub(crate) disk_mb: u64,
    /// The audit log (JSON lines, 0600): who took a dump, heap snapshot, trace, stream,
    /// profile or report, or reloaded the rules. Default: `audit.jsonl` in the agent's folder.
    pub(crate) audit_log: Option<PathBuf>,
    /// What `/metrics` collects.
    pub(crate) metrics: crate::metrics::MetricsConfig,
    /// The watcher inside the agent: a rules file (as `clrspy watch` takes) and where its
    /// files go.
    pub(crate) rules: Option<RulesConfig>,
}

/// The watcher inside the agent.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RulesConfig {
    /// The rules file (TOML or JSON; `clrspy rules check FILE` checks it). A bad file: the
    /// agent does not start.
    pub(crate) file: PathBuf,
    /// The output folder (the decisions log, a folder per rule), made private (0700);
    /// default: `rules` in the agent's folder.
    pub(crate) output: Option<PathBuf>,
    /// A socket to listen on as a reverse diagnostic port, as `clrspy watch --listen`: a
    /// runtime started with `DOTNET_DiagnosticPorts=SOCKET,connect,suspend` connects to it held
    /// at its first instruction, so startup rules see it from its start (one that no rule
    /// matches is let run at once).
    pub(crate) listen: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            urls: Vec::new(),
            tls: None,
            auth: AuthConfig::default(),
            limits: LimitsConfig::default(),
            folder: None,
            disk_mb: 1024,
            audit_log: None,
            metrics: crate::metrics::MetricsConfig::default(),
            rules: None,
        }
    }
}

/// The server's certificate and key.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlsConfig {
    /// The certificate chain, PEM.
    pub(crate) cert: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub(crate) key: PathBuf,
}

/// Credentials the agent accepts.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct AuthConfig {
    /// Hex SHA-256 hashes of the API keys (`clrspy agent new-key` prints a key and its hash).
    pub(crate) api_key_hashes: Vec<String>,
    /// Bearer JWTs signed by this key (dotnet-monitor's `MonitorApiKey` format).
    pub(crate) jwt: Option<JwtConfig>,
}

/// How bearer JWTs are verified (dotnet-monitor's `Authentication:MonitorApiKey` settings).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JwtConfig {
    /// The public key: a JWK (EC P-256 / P-384 or RSA) as JSON, base64url-encoded, as
    /// dotnet-monitor's `generatekey` prints it.
    pub(crate) public_key: String,
    /// The `iss` a token must carry (default: dotnet-monitor's generatekey issuer).
    pub(crate) issuer: Option<String>,
    /// The `aud` a token must carry (default: `https://github.com/dotnet/dotnet-monitor`).
    pub(crate) audience: Option<String>,
    /// The `sub` a token must carry (dotnet-monitor's `Subject`); required.
    pub(crate) subject: String,
}

impl JwtConfig {
    /// The verifier these settings describe.
    pub(crate) fn verifier(&self) -> Result<crate::jwk::JwtVerifier, AgentError> {
        crate::jwk::JwtVerifier::new(
            &self.public_key,
            self.issuer.as_deref(),
            self.audience.as_deref(),
            &self.subject,
        )
    }
}

/// Bounds on requests.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LimitsConfig {
    /// The largest request body, bytes (larger: 413).
    pub(crate) max_body_bytes: usize,
    /// The longest a request may take, e.g. `30s` (longer: 408).
    pub(crate) request_timeout: String,
    /// The longest a client may take to send a request's headers, e.g. `10s` (then the
    /// connection is closed).
    pub(crate) header_timeout: String,
    /// The most connections open at once (more wait to be accepted).
    pub(crate) max_connections: usize,
    /// On SIGTERM or Ctrl+C, how long responses in flight (downloads, pulls) may take to
    /// finish, e.g. `25s`; the agent then says how many it cut.
    pub(crate) shutdown_grace: String,
    /// How many requests of each kind may run at once (more: 429).
    pub(crate) concurrent: ConcurrencyConfig,
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        LimitsConfig {
            max_body_bytes: 64 * 1024,
            request_timeout: "30s".into(),
            header_timeout: "10s".into(),
            max_connections: 512,
            // Inside Kubernetes' default 30 s between SIGTERM and SIGKILL.
            shutdown_grace: "25s".into(),
            concurrent: ConcurrencyConfig::default(),
        }
    }
}

/// How many requests of each kind may run at once.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ConcurrencyConfig {
    /// `/processes` and `/processes/{pid}` (each asks every runtime over its diagnostics port).
    pub(crate) processes: usize,
    /// `/stacks` (one sampling session each; never two at once on one process).
    pub(crate) stacks: usize,
    /// `/debug/pprof/profile` and `/debug/pprof/allocs` together (one recording session each,
    /// never two of a kind at once on one process).
    pub(crate) profiles: usize,
    /// `/dump` (each a `clrspy dump` child process; never two at once on one process).
    pub(crate) dumps: usize,
    /// `/gcdump` (each a `clrspy gcdump` child process; never two at once on one process).
    pub(crate) gcdumps: usize,
    /// `/trace` (one recording session each, spooled; never two at once on one process).
    pub(crate) traces: usize,
    /// `/counters` and `/logs` together (one small session each; never two of a kind at once
    /// on one process).
    pub(crate) streams: usize,
}

impl Default for ConcurrencyConfig {
    fn default() -> ConcurrencyConfig {
        ConcurrencyConfig {
            processes: 4,
            stacks: 2,
            profiles: 2,
            dumps: 1,
            gcdumps: 1,
            traces: 2,
            streams: 4,
        }
    }
}

/// The config's JSON Schema, pretty-printed (`clrspy agent schema`).
pub(crate) fn schema_json() -> String {
    let schema = schemars::schema_for!(Config);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

impl Config {
    /// Parses a config file's text; `path` names it in errors.
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Config, AgentError> {
        toml::from_str(text).map_err(|e| AgentError::Config(format!("{}: {e}", path.display())))
    }

    /// Reads and parses a config file.
    pub(crate) fn load(path: &Path) -> Result<Config, AgentError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| AgentError::Config(format!("reading {}: {e}", path.display())))?;
        Config::parse(&text, path)
    }
}

/// A URL the agent listens on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Listen {
    /// `https://` (else `http://`).
    pub(crate) tls: bool,
    /// The address to bind.
    pub(crate) addr: SocketAddr,
}

impl Listen {
    /// Parses `http[s]://HOST:PORT` (HOST an IP address, `[v6]`, `localhost`, `+` or `*`).
    pub(crate) fn parse(url: &str) -> Result<Listen, AgentError> {
        let bad = |why: &str| AgentError::Config(format!("URL {url:?}: {why}"));
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("must start with http:// or https://"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("needs a port (http://127.0.0.1:52323)"))?;
        let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
        let ip = match host {
            "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
            "+" | "*" | "0.0.0.0" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            "[::]" => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
            h => {
                let h = h
                    .strip_prefix('[')
                    .and_then(|h| h.strip_suffix(']'))
                    .unwrap_or(h);
                h.parse()
                    .map_err(|_| bad("the host must be an IP address or localhost"))?
            }
        };
        Ok(Listen {
            tls,
            addr: SocketAddr::new(ip, port),
        })
    }

    /// True when only this machine can reach it.
    pub(crate) fn loopback(&self) -> bool {
        self.addr.ip().is_loopback()
    }

    /// As a URL.
    pub(crate) fn url(&self) -> String {
        format!(
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.addr
        )
    }
}

/// What the agent runs with: the config file and the command line merged and checked.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Where it listens.
    pub(crate) listen: Vec<Listen>,
    /// TLS, when any address is `https://`.
    pub(crate) tls: Option<TlsConfig>,
    /// API key hashes, lowercase hex.
    pub(crate) key_hashes: Vec<[u8; 32]>,
    /// JWT verification.
    pub(crate) jwt: Option<JwtConfig>,
    /// The largest request body.
    pub(crate) max_body_bytes: usize,
    /// The longest a request may take.
    pub(crate) request_timeout: Duration,
    /// The longest a client may take to send a request's headers.
    pub(crate) header_timeout: Duration,
    /// The most connections open at once.
    pub(crate) max_connections: usize,
    /// Requests of each kind at once.
    pub(crate) concurrent: ConcurrencyConfig,
    /// The agent's folder: the config's `folder`, else [`crate::folder::default_folder`].
    pub(crate) folder: PathBuf,
    /// The most the folder may hold, MB.
    pub(crate) disk_mb: u64,
    /// The audit log: the config's `audit_log` (or `--audit-log`), else `audit.jsonl` in the
    /// folder.
    pub(crate) audit_log: PathBuf,
    /// How long responses in flight may take to finish once asked to stop.
    pub(crate) shutdown_grace: Duration,
    /// No credentials needed (`--insecure` with none configured).
    pub(crate) open: bool,
    /// Warnings to print at start.
    pub(crate) warnings: Vec<String>,
    /// What `/metrics` collects.
    pub(crate) metrics: crate::metrics::MetricsSettings,
    /// The watcher inside the agent, when a rules file is configured.
    pub(crate) rules: Option<crate::rules_host::RulesSettings>,
}

/// What the command line adds to the config.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overrides {
    /// `--urls` (replaces the config's).
    pub(crate) urls: Vec<String>,
    /// `--api-key-hash` (added to the config's).
    pub(crate) api_key_hashes: Vec<String>,
    /// `--insecure`.
    pub(crate) insecure: bool,
    /// `--rules` (takes the config's `[rules] file` place, keeping its other keys).
    pub(crate) rules: Option<PathBuf>,
    /// `--audit-log` (replaces the config's).
    pub(crate) audit_log: Option<PathBuf>,
}

/// Parses a hex SHA-256 hash.
pub(crate) fn parse_hash(h: &str) -> Result<[u8; 32], AgentError> {
    let h = h.trim();
    let bad = || {
        AgentError::Config(format!(
            "API key hash {h:?} is not 64 hex digits (`clrspy agent new-key` prints one)"
        ))
    };
    if h.len() != 64 {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(h.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

fn duration(what: &str, s: &str) -> Result<Duration, AgentError> {
    clrspy_values::parse_positive_duration(s)
        .map_err(|e| AgentError::Config(format!("limits.{what} {s:?}: {e}")))
}

/// Merges the config and the command line and decides whether the agent may start: errors
/// are refusals (exit code 2).
pub(crate) fn settle(config: Config, over: &Overrides) -> Result<Settings, AgentError> {
    let urls = if !over.urls.is_empty() {
        over.urls.clone()
    } else if !config.urls.is_empty() {
        config.urls.clone()
    } else {
        vec![DEFAULT_URL.to_string()]
    };
    let listen = urls
        .iter()
        .map(|u| Listen::parse(u.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut key_hashes = Vec::new();
    for h in config
        .auth
        .api_key_hashes
        .iter()
        .chain(&over.api_key_hashes)
    {
        key_hashes.push(parse_hash(h)?);
    }
    if let Some(j) = &config.auth.jwt {
        // Refuse a key that cannot verify anything now rather than at the first request.
        j.verifier()?;
        if j.subject.trim().is_empty() {
            return Err(AgentError::Config("auth.jwt.subject is empty".into()));
        }
    }
    let has_auth = !key_hashes.is_empty() || config.auth.jwt.is_some();
    let mut warnings = Vec::new();
    if listen.iter().any(|l| l.tls) && config.tls.is_none() {
        return Err(AgentError::Refused(
            "an https:// URL needs [tls] cert and key in the config".into(),
        ));
    }
    for l in listen.iter().filter(|l| !l.loopback()) {
        let mut missing = Vec::new();
        if !l.tls {
            missing.push("TLS (an https:// URL with [tls] cert and key)");
        }
        if !has_auth {
            missing.push("credentials (API key hashes or a JWT key)");
        }
        if missing.is_empty() {
            continue;
        }
        let what = format!(
            "{} is reachable from other machines without {}",
            l.url(),
            missing.join(" and ")
        );
        if !over.insecure {
            return Err(AgentError::Refused(format!(
                "{what}; refusing to start (pass --insecure to do it anyway)"
            )));
        }
        warnings.push(format!("--insecure: {what}"));
    }
    if !has_auth {
        if !over.insecure {
            return Err(AgentError::Refused(
                "no credentials configured: every route but /health needs credentials \
                 (`clrspy agent new-key`, then --api-key-hash HASH or auth.api_key_hashes), \
                 or pass --insecure to serve without them"
                    .into(),
            ));
        }
        warnings.push("--insecure: no credentials configured, every route is open".into());
    }
    let folder = config.folder.unwrap_or_else(crate::folder::default_folder);
    let rules = match (config.rules, &over.rules) {
        (Some(r), file) => Some(crate::rules_host::RulesSettings {
            output: r
                .output
                .unwrap_or_else(|| crate::rules_host::default_output(&folder)),
            file: file.clone().unwrap_or(r.file),
            listen: r.listen,
        }),
        (None, Some(file)) => Some(crate::rules_host::RulesSettings {
            output: crate::rules_host::default_output(&folder),
            file: file.clone(),
            listen: None,
        }),
        (None, None) => None,
    };
    Ok(Settings {
        listen,
        tls: config.tls,
        key_hashes,
        jwt: config.auth.jwt,
        max_body_bytes: config.limits.max_body_bytes,
        request_timeout: duration("request_timeout", &config.limits.request_timeout)?,
        header_timeout: duration("header_timeout", &config.limits.header_timeout)?,
        max_connections: config.limits.max_connections.max(1),
        shutdown_grace: duration("shutdown_grace", &config.limits.shutdown_grace)?,
        concurrent: config.limits.concurrent,
        rules,
        audit_log: over
            .audit_log
            .clone()
            .or(config.audit_log)
            .unwrap_or_else(|| folder.join(crate::audit::DEFAULT_NAME)),
        folder,
        disk_mb: config.disk_mb,
        open: !has_auth,
        warnings,
        metrics: config.metrics.settings()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn over(urls: &[&str], hashes: &[&str], insecure: bool) -> Overrides {
        Overrides {
            urls: urls.iter().map(|s| s.to_string()).collect(),
            api_key_hashes: hashes.iter().map(|s| s.to_string()).collect(),
            insecure,
            ..Overrides::default()
        }
    }

    /// Started from flags alone, from an empty file, or from a file with every section and no
    /// key: the same settings, whose disk budget is the schema's 1024 MB (it was 0 from flags
    /// alone: every dump and trace answered 507).
    #[test]
    fn flags_alone_and_an_empty_config_settle_alike() {
        let o = over(&[], &[HASH], false);
        let flags = format!("{:?}", settle(Config::default(), &o).unwrap());
        for text in ["", "[auth]\n[limits]\n[limits.concurrent]\n[metrics]\n"] {
            let c = Config::parse(text, Path::new("a.toml")).unwrap();
            assert_eq!(format!("{:?}", settle(c, &o).unwrap()), flags, "{text:?}");
        }
        let s = settle(Config::default(), &o).unwrap();
        assert_eq!(s.disk_mb, 1024);
        assert_eq!(s.shutdown_grace, Duration::from_secs(25));
        assert_eq!(s.audit_log, s.folder.join("audit.jsonl"));
    }

    /// What the schema says a key defaults to is what the agent runs with (both come from
    /// the `Default` impls).
    #[test]
    fn the_schema_states_the_defaults() {
        let schema: serde_json::Value = serde_json::from_str(&schema_json()).unwrap();
        let defaults = serde_json::to_value(Config::default()).unwrap();
        assert_eq!(schema["properties"]["disk_mb"]["default"], 1024);
        let mut checked = 0;
        for (key, value) in defaults.as_object().unwrap() {
            if let Some(d) = schema["properties"][key].get("default") {
                assert_eq!(d, value, "{key}");
                checked += 1;
            }
        }
        assert!(checked >= 4, "{schema}");
    }

    #[test]
    fn flags_take_the_config_s_place() {
        let c = Config::parse(
            "audit_log = \"/var/log/a.jsonl\"\n[rules]\nfile = \"/etc/r.toml\"\nlisten = \"/s\"\n",
            Path::new("a"),
        )
        .unwrap();
        let s = settle(c.clone(), &over(&[], &[HASH], false)).unwrap();
        assert_eq!(s.audit_log, PathBuf::from("/var/log/a.jsonl"));
        let o = Overrides {
            rules: Some("/other.toml".into()),
            audit_log: Some("/tmp/x.jsonl".into()),
            ..over(&[], &[HASH], false)
        };
        let s = settle(c, &o).unwrap();
        let r = s.rules.unwrap();
        assert_eq!(r.file, PathBuf::from("/other.toml"));
        assert_eq!(
            r.listen,
            Some(PathBuf::from("/s")),
            "the config's other keys stay"
        );
        assert_eq!(s.audit_log, PathBuf::from("/tmp/x.jsonl"));
        let s = settle(Config::default(), &o).unwrap();
        assert_eq!(s.rules.unwrap().output, s.folder.join("rules"));
    }

    #[test]
    fn parses_a_full_config() {
        let text = r#"
urls = ["https://0.0.0.0:52323"]
folder = "/var/tmp/clrspy-agent"
disk_mb = 512
[tls]
cert = "/etc/clrspy/cert.pem"
key = "/etc/clrspy/key.pem"
[auth]
api_key_hashes = ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]
[limits]
max_body_bytes = 1000
request_timeout = "5s"
[limits.concurrent]
stacks = 1
"#;
        let c = Config::parse(text, Path::new("a.toml")).unwrap();
        assert_eq!(c.disk_mb, 512);
        assert_eq!(c.limits.max_body_bytes, 1000);
        assert_eq!(c.limits.concurrent.stacks, 1);
        assert_eq!(c.limits.concurrent.processes, 4);
        let s = settle(c, &Overrides::default()).unwrap();
        assert_eq!(s.request_timeout, Duration::from_secs(5));
        assert_eq!(s.header_timeout, Duration::from_secs(10));
        assert!(s.listen[0].tls && !s.listen[0].loopback());
        assert!(s.warnings.is_empty() && !s.open);
    }

    #[test]
    fn unknown_fields_and_bad_values_are_errors() {
        assert!(Config::parse("url = []", Path::new("a")).is_err());
        assert!(Config::parse("[limits]\nmax_body = 1", Path::new("a")).is_err());
        let c = Config::parse("[limits]\nrequest_timeout = \"soon\"", Path::new("a")).unwrap();
        assert!(settle(c, &over(&[], &[HASH], false)).is_err());
        assert!(settle(Config::default(), &over(&[], &["abc"], false)).is_err());
        assert!(settle(
            Config::default(),
            &over(&["ftp://1.2.3.4:1"], &[HASH], false)
        )
        .is_err());
        assert!(settle(
            Config::default(),
            &over(&["http://1.2.3.4"], &[HASH], false)
        )
        .is_err());
    }

    #[test]
    fn defaults_to_loopback() {
        let s = settle(Config::default(), &over(&[], &[HASH], false)).unwrap();
        assert_eq!(s.listen, vec![Listen::parse(DEFAULT_URL).unwrap()]);
        assert!(s.listen[0].loopback());
        assert_eq!(s.max_body_bytes, 64 * 1024);
        assert_eq!(s.key_hashes.len(), 1);
    }

    #[test]
    fn refuses_no_credentials_unless_insecure() {
        let e = settle(Config::default(), &Overrides::default()).unwrap_err();
        assert!(matches!(e, AgentError::Refused(_)), "{e}");
        assert!(e.to_string().contains("/health"));
        let s = settle(Config::default(), &over(&[], &[], true)).unwrap();
        assert!(s.open);
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn refuses_non_loopback_without_tls_or_auth() {
        for url in [
            "http://0.0.0.0:52323",
            "http://+:52323",
            "http://10.1.2.3:80",
            "http://[::]:1",
        ] {
            let e = settle(Config::default(), &over(&[url], &[HASH], false)).unwrap_err();
            assert!(matches!(e, AgentError::Refused(_)), "{url}: {e}");
            assert!(e.to_string().contains("TLS"), "{e}");
            let s = settle(Config::default(), &over(&[url], &[HASH], true)).unwrap();
            assert!(!s.open && s.warnings[0].contains("--insecure"));
        }
        // https without a certificate can never start, --insecure or not.
        let e = settle(
            Config::default(),
            &over(&["https://127.0.0.1:1"], &[HASH], true),
        );
        assert!(e.is_err());
        // TLS but no credentials on a public address.
        let c = Config {
            tls: Some(TlsConfig {
                cert: "c".into(),
                key: "k".into(),
            }),
            ..Config::default()
        };
        let e = settle(c.clone(), &over(&["https://0.0.0.0:1"], &[], false)).unwrap_err();
        assert!(e.to_string().contains("credentials"), "{e}");
        assert!(settle(c, &over(&["https://0.0.0.0:1"], &[HASH], false)).is_ok());
    }

    #[test]
    fn listen_urls() {
        let l = Listen::parse("http://localhost:80/").unwrap();
        assert_eq!(l.addr, "127.0.0.1:80".parse().unwrap());
        let l = Listen::parse("https://[::1]:8443").unwrap();
        assert!(l.tls && l.loopback());
        assert!(Listen::parse("http://example.com:80").is_err());
        assert!(Listen::parse("http://127.0.0.1:99999").is_err());
    }

    #[test]
    fn rules_default_to_a_folder_in_the_agent_s() {
        let c = Config::parse(
            "folder = \"/srv/agent\"\n[rules]\nfile = \"/etc/r.toml\"\n",
            Path::new("a"),
        )
        .unwrap();
        let r = settle(c, &over(&[], &[HASH], false))
            .unwrap()
            .rules
            .unwrap();
        assert_eq!(r.file, PathBuf::from("/etc/r.toml"));
        assert_eq!(r.output, PathBuf::from("/srv/agent/rules"));
        let c = Config::parse("[rules]\nfile = \"r\"\noutput = \"/o\"\n", Path::new("a")).unwrap();
        let r = settle(c, &over(&[], &[HASH], false))
            .unwrap()
            .rules
            .unwrap();
        assert_eq!(r.output, PathBuf::from("/o"));
        assert!(Config::parse("[rules]\noutput = \"/o\"\n", Path::new("a")).is_err());
        assert!(Config::parse("[rules]\nfile = \"r\"\nx = 1\n", Path::new("a")).is_err());
        assert!(settle(Config::default(), &over(&[], &[HASH], false))
            .unwrap()
            .rules
            .is_none());
    }

    #[test]
    fn schema_names_the_fields() {
        let s = schema_json();
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let props = &v["properties"];
        for f in ["urls", "tls", "auth", "limits", "folder", "disk_mb"] {
            assert!(props.get(f).is_some(), "{f} missing from {s}");
        }
        assert!(s.contains("api_key_hashes") && s.contains("public_key"));
    }
}
