//! The Process command set: ProcessInfo 1, 2 and 3 (process id, command line, OS, architecture,
//! entry assembly, runtime version, runtime identifier), ResumeRuntime, ProcessEnvironment,
//! SetEnvironmentVariable, EnablePerfMap/DisablePerfMap and ApplyStartupHook.

use std::time::Duration;

use crate::ipc::{
    put_string, request, request_hresult, Connector, Error, PayloadReader, Result, MAX_PAYLOAD,
};

const PROCESS_COMMAND_SET: u8 = 0x04;
const PROCESS_INFO: u8 = 0x00;
const RESUME_RUNTIME: u8 = 0x01;
const PROCESS_ENVIRONMENT: u8 = 0x02;
const SET_ENVIRONMENT_VARIABLE: u8 = 0x03;
const PROCESS_INFO2: u8 = 0x04;
const ENABLE_PERF_MAP: u8 = 0x05;
const DISABLE_PERF_MAP: u8 = 0x06;
const APPLY_STARTUP_HOOK: u8 = 0x07;
const PROCESS_INFO3: u8 = 0x08;

/// What a runtime says about its process.
///
/// ```no_run
/// use std::time::Duration;
///
/// let ep = diagnostics_client::find_endpoints().into_iter().next().expect("a .NET process");
/// let info = diagnostics_client::process_info(&ep, Duration::from_secs(2))?;
/// println!(
///     "{} runs {} on .NET {}",
///     ep.pid,
///     info.entrypoint_assembly.as_deref().unwrap_or("?"),
///     info.runtime_version.as_deref().unwrap_or("?")
/// );
/// # Ok::<(), diagnostics_client::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id inside the process's own PID namespace (the same as the host's unless the
    /// process runs in a container).
    pub pid: u32,
    /// The runtime instance cookie, as 32 hex digits.
    pub runtime_cookie: String,
    /// The command line.
    pub command_line: String,
    /// Operating system family ("Linux", "Windows", "macOS").
    pub os: String,
    /// Process architecture ("x64", "arm64", ...).
    pub arch: String,
    /// Managed entry assembly name (ProcessInfo2+; .NET 6+).
    pub entrypoint_assembly: Option<String>,
    /// Runtime product version, e.g. "10.0.12" (ProcessInfo2+).
    pub runtime_version: Option<String>,
    /// Portable runtime identifier, e.g. "linux-x64" (ProcessInfo3; .NET 8+).
    pub portable_rid: Option<String>,
    /// Which ProcessInfo command answered (1, 2 or 3).
    pub command_version: u8,
}

/// Parses the body of a ProcessInfo reply of command `version` (1, 2 or 3); `None` when it is
/// cut short or malformed. [`process_info`] sends the command and calls this.
///
/// ```
/// // A ProcessInfo1 body: pid, cookie, then three length-prefixed UTF-16 strings.
/// let mut body = 42u64.to_le_bytes().to_vec();
/// body.extend([0u8; 16]);
/// for s in ["app --flag", "Linux", "x64"] {
///     let units: Vec<u16> = s.encode_utf16().chain([0]).collect();
///     body.extend((units.len() as u32).to_le_bytes());
///     body.extend(units.iter().flat_map(|u| u.to_le_bytes()));
/// }
/// let info = diagnostics_client::parse_process_info(&body, 1).unwrap();
/// assert_eq!((info.pid, info.os.as_str()), (42, "Linux"));
/// assert!(diagnostics_client::parse_process_info(&body[..30], 1).is_none());
/// ```
pub fn parse_process_info(body: &[u8], version: u8) -> Option<ProcessInfo> {
    let mut r = PayloadReader::new(body);
    if version == 3 {
        r.u32()?; // payload format version
    }
    let pid = u32::try_from(r.u64()?).ok()?;
    let cookie: String = r.bytes(16)?.iter().map(|b| format!("{b:02x}")).collect();
    let mut p = ProcessInfo {
        pid,
        runtime_cookie: cookie,
        command_line: r.string()?,
        os: r.string()?,
        arch: r.string()?,
        command_version: version,
        ..ProcessInfo::default()
    };
    if version >= 2 {
        p.entrypoint_assembly = Some(r.string()?);
        p.runtime_version = Some(r.string()?);
    }
    if version >= 3 && !r.is_empty() {
        p.portable_rid = Some(r.string()?);
    }
    Some(p)
}

/// Asks a runtime about its process: ProcessInfo3, falling back to 2 and 1 on runtimes that do
/// not know the newer command.
pub fn process_info(to: &dyn Connector, timeout: Duration) -> Result<ProcessInfo> {
    let mut last = None;
    for (id, version) in [(PROCESS_INFO3, 3u8), (PROCESS_INFO2, 2), (PROCESS_INFO, 1)] {
        match request(to, PROCESS_COMMAND_SET, id, &[], timeout) {
            Ok(body) => {
                return parse_process_info(&body, version).ok_or_else(|| Error::Protocol {
                    path: to.path().to_path_buf(),
                    what: format!(
                        "ProcessInfo{version} reply of {} bytes is cut short or malformed",
                        body.len()
                    ),
                })
            }
            Err(e) if e.is_unknown_command() => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or(Error::Unsupported))
}

/// The environment variables of a runtime's process, in the order the runtime lists them.
pub fn process_environment(to: &dyn Connector, timeout: Duration) -> Result<Vec<(String, String)>> {
    let mut s = to.open(timeout)?;
    let proto = |what: String| Error::Protocol {
        path: to.path().to_path_buf(),
        what,
    };
    s.send(PROCESS_COMMAND_SET, PROCESS_ENVIRONMENT, &[])?;
    let head = s.read_reply()?;
    let size = PayloadReader::new(&head)
        .u32()
        .ok_or_else(|| proto("ProcessEnvironment reply without its size".into()))?
        as usize;
    if size > MAX_PAYLOAD {
        return Err(proto(format!(
            "environment block of {size} bytes is too large"
        )));
    }
    let mut block = vec![0u8; size];
    s.read_exact(&mut block)?;
    parse_environment(&block).map_err(|what| proto(what.into()))
}

/// Parses a ProcessEnvironment block (a count, then `NAME=value` strings), in the runtime's
/// order; a block cut inside a string is an error. [`process_environment`] reads the block
/// and calls this.
pub fn parse_environment(block: &[u8]) -> std::result::Result<Vec<(String, String)>, &'static str> {
    let mut r = PayloadReader::new(block);
    let count = r.u32().ok_or("environment block without its count")?;
    let mut out = Vec::new();
    for _ in 0..count {
        if r.is_empty() {
            break;
        }
        let pair = r.string().ok_or("environment block cut inside a string")?;
        match pair.split_once('=') {
            Some((k, v)) => out.push((k.to_string(), v.to_string())),
            None => out.push((pair, String::new())),
        }
    }
    Ok(out)
}

/// Lets a runtime that was started suspended (`DOTNET_DiagnosticPorts=...,suspend` or
/// `DOTNET_DefaultDiagnosticPortSuspend=1`) go on starting; a no-op otherwise.
pub fn resume_runtime(to: &dyn Connector, timeout: Duration) -> Result<()> {
    request(to, PROCESS_COMMAND_SET, RESUME_RUNTIME, &[], timeout).map(|_| ())
}

/// Sets an environment variable inside the process (.NET 6+).
pub fn set_environment_variable(
    to: &dyn Connector,
    name: &str,
    value: &str,
    timeout: Duration,
) -> Result<()> {
    let mut p = Vec::new();
    put_string(&mut p, Some(name));
    put_string(&mut p, Some(value));
    request_hresult(
        to,
        PROCESS_COMMAND_SET,
        SET_ENVIRONMENT_VARIABLE,
        &p,
        timeout,
    )
}

/// Which perf map files the runtime writes (EnablePerfMap, .NET 8+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfMapType {
    /// Both perf-PID.map and jitdump.
    All = 1,
    /// jitdump files only.
    JitDump = 2,
    /// perf-PID.map only.
    PerfMap = 3,
}

/// Starts writing perf map or jitdump files, so `perf` can name jitted code (.NET 8+).
pub fn enable_perf_map(to: &dyn Connector, kind: PerfMapType, timeout: Duration) -> Result<()> {
    request_hresult(
        to,
        PROCESS_COMMAND_SET,
        ENABLE_PERF_MAP,
        &(kind as u32).to_le_bytes(),
        timeout,
    )
}

/// Stops writing perf map and jitdump files (.NET 8+).
pub fn disable_perf_map(to: &dyn Connector, timeout: Duration) -> Result<()> {
    request_hresult(to, PROCESS_COMMAND_SET, DISABLE_PERF_MAP, &[], timeout)
}

/// Adds a startup hook assembly, run when a suspended runtime resumes (.NET 8+).
pub fn apply_startup_hook(
    to: &dyn Connector,
    assembly_path: &str,
    timeout: Duration,
) -> Result<()> {
    let mut p = Vec::new();
    put_string(&mut p, Some(assembly_path));
    request_hresult(to, PROCESS_COMMAND_SET, APPLY_STARTUP_HOOK, &p, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(out: &mut Vec<u8>, text: &str) {
        let units: Vec<u16> = text.encode_utf16().chain([0]).collect();
        out.extend_from_slice(&(units.len() as u32).to_le_bytes());
        for u in units {
            out.extend_from_slice(&u.to_le_bytes());
        }
    }

    #[test]
    fn parses_each_version_and_rejects_short_replies() {
        let mut b = Vec::new();
        b.extend_from_slice(&42u64.to_le_bytes());
        b.extend_from_slice(&[0xab; 16]);
        s(&mut b, "dotnet app.dll");
        s(&mut b, "Linux");
        s(&mut b, "x64");
        let p = parse_process_info(&b, 1).unwrap();
        assert_eq!(
            (p.pid, p.os.as_str(), p.arch.as_str()),
            (42, "Linux", "x64")
        );
        s(&mut b, "app");
        s(&mut b, "10.0.12");
        let p = parse_process_info(&b, 2).unwrap();
        assert_eq!(p.runtime_version.as_deref(), Some("10.0.12"));
        let mut v3 = 0u32.to_le_bytes().to_vec();
        v3.extend_from_slice(&b);
        s(&mut v3, "linux-x64");
        let p = parse_process_info(&v3, 3).unwrap();
        assert_eq!(p.portable_rid.as_deref(), Some("linux-x64"));
        for cut in 0..b.len() {
            assert!(parse_process_info(&b[..cut], 2).is_none());
        }
    }
}

#[cfg(test)]
mod environment_tests {
    use super::parse_environment;

    fn block(count: u32, pairs: &[&str]) -> Vec<u8> {
        let mut b = count.to_le_bytes().to_vec();
        for p in pairs {
            let units: Vec<u16> = p.encode_utf16().chain([0]).collect();
            b.extend_from_slice(&(units.len() as u32).to_le_bytes());
            b.extend(units.iter().flat_map(|u| u.to_le_bytes()));
        }
        b
    }

    #[test]
    fn pairs_in_order_and_cut_blocks_refused() {
        let b = block(3, &["A=1", "TMPDIR=/x=y", "BARE"]);
        let env = parse_environment(&b).unwrap();
        assert_eq!(
            env,
            vec![
                ("A".into(), "1".into()),
                ("TMPDIR".into(), "/x=y".into()),
                ("BARE".into(), String::new())
            ]
        );
        assert!(parse_environment(&b[..b.len() - 1]).is_err());
        assert!(parse_environment(&[1, 2]).is_err());
        // A count larger than the block: what is there, no error.
        assert_eq!(parse_environment(&block(9, &["A=1"])).unwrap().len(), 1);
    }
}
