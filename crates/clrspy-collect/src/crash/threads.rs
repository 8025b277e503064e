//! Every thread's stack from a crash report (createdump's `crashreport.json`, which the
//! runtime also writes beside a dump taken on request): managed frames by method name, native
//! frames named from the process's mappings and their files' ELF symbols
//! (`native::function_names`) — `clrspy stack --native`.

use crate::procstat::{parse_maps_line, Mapping};

/// One frame of a report's thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportFrame {
    /// True for a managed frame.
    pub managed: bool,
    /// The managed method with its signature (`Ns.Type.Method(Int32)`), when the report
    /// names it.
    pub method: Option<String>,
    /// The native module's file name (`libcoreclr.so`), for a native frame.
    pub module: Option<String>,
    /// The code address.
    pub address: u64,
}

/// One thread of a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportThread {
    /// The OS thread id.
    pub thread_id: u64,
    /// True when the runtime knows the thread.
    pub managed: bool,
    /// Its frames, innermost first.
    pub frames: Vec<ReportFrame>,
}

/// A string field that may be a number in the JSON too.
fn text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Parses `0x1a2b` or `123`.
fn number(v: Option<&serde_json::Value>) -> Option<u64> {
    let s = text(v?)?;
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn is_true(v: Option<&serde_json::Value>) -> bool {
    v.and_then(text).as_deref() == Some("true")
}

/// Every thread of a report's bytes.
pub fn report_threads(bytes: &[u8]) -> Result<Vec<ReportThread>, String> {
    let v: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("not a crash report: {e}"))?;
    let threads = v
        .get("payload")
        .and_then(|p| p.get("threads"))
        .and_then(|t| t.as_array())
        .ok_or("the crash report lists no threads")?;
    Ok(threads
        .iter()
        .filter_map(|t| {
            let frames = t
                .get("stack_frames")
                .and_then(|f| f.as_array())
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            Some(ReportThread {
                thread_id: number(t.get("native_thread_id"))?,
                managed: is_true(t.get("is_managed")),
                frames: frames
                    .iter()
                    .map(|f| ReportFrame {
                        managed: is_true(f.get("is_managed")),
                        method: f.get("method_name").and_then(text),
                        module: f.get("native_module").and_then(text),
                        address: number(f.get("native_address")).unwrap_or(0),
                    })
                    .collect(),
            })
        })
        .collect())
}

/// The frames of `thread` in words, innermost first: managed frames by method (a managed
/// frame the report does not name, a runtime stub, is left out), native frames as
/// `module!function` where the file's symbols name it, else `module+0xOFFSET`; `names` holds
/// the native frames' function names by address (from [`native_frame_names`]).
pub fn frame_names(
    thread: &ReportThread,
    names: &std::collections::HashMap<u64, String>,
) -> Vec<String> {
    thread
        .frames
        .iter()
        .filter_map(|f| {
            if f.managed {
                return f.method.clone();
            }
            let module = f.module.as_deref().unwrap_or("?");
            Some(match names.get(&f.address) {
                Some(n) => format!("{module}!{n}"),
                None => format!("{module}+0x{:x}", f.address),
            })
        })
        .collect()
}

/// Names the native frames of `threads` in process `pid` by address: the mapping holding
/// each (`/proc/PID/maps`), then the function of its file holding it.
pub fn native_frame_names(
    pid: u32,
    threads: &[ReportThread],
) -> std::collections::HashMap<u64, String> {
    let maps: Vec<Mapping> = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|m| m.lines().filter_map(parse_maps_line).collect())
        .unwrap_or_default();
    let mut addresses: Vec<u64> = threads
        .iter()
        .flat_map(|t| t.frames.iter())
        .filter(|f| !f.managed && f.address != 0)
        .map(|f| f.address)
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    let places: Vec<(u64, (String, u64))> = addresses
        .into_iter()
        .filter_map(|a| {
            let m = maps.iter().find(|m| a >= m.start && a < m.end)?;
            Some((a, (m.path.clone(), a - m.start + m.offset)))
        })
        .collect();
    let hits: Vec<(String, u64)> = places.iter().map(|(_, p)| p.clone()).collect();
    let names = crate::native::function_names(pid, &hits);
    places
        .into_iter()
        .zip(names)
        .filter_map(|((a, _), n)| Some((a, n?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"{"payload":{"process_name":"Workloads.dll","threads":[
      {"is_managed":"true","crashed":"false","native_thread_id":"0x72b8","stack_frames":[
        {"is_managed":"false","native_address":"0x7f146ca3a26f","native_module":"libc.so.6"},
        {"is_managed":"true","native_address":"0x7f13ee08409a","method_name":"Workloads.Cpu.Burn(Double)"},
        {"is_managed":"true","native_address":"0x7f146c5fb3cc","token":"0x0"}]},
      {"is_managed":"false","native_thread_id":"0x72b0","stack_frames":[]},
      {"is_managed":"false","stack_frames":[]}]}}"#;

    #[test]
    fn a_report_gives_every_thread_with_its_frames_innermost_first() {
        let t = report_threads(REPORT.as_bytes()).unwrap();
        assert_eq!(t.len(), 2, "a thread without an id is skipped");
        assert_eq!(t[0].thread_id, 0x72b8);
        assert!(t[0].managed);
        assert!(!t[1].managed);
        assert_eq!(t[0].frames.len(), 3);
        assert_eq!(t[0].frames[0].module.as_deref(), Some("libc.so.6"));
        assert_eq!(t[0].frames[0].address, 0x7f14_6ca3_a26f);
        let mut names = std::collections::HashMap::new();
        assert_eq!(
            frame_names(&t[0], &names),
            ["libc.so.6+0x7f146ca3a26f", "Workloads.Cpu.Burn(Double)"]
        );
        names.insert(0x7f14_6ca3_a26f, "__futex_abstimed_wait_common".to_string());
        assert_eq!(
            frame_names(&t[0], &names)[0],
            "libc.so.6!__futex_abstimed_wait_common"
        );
    }

    #[test]
    fn a_file_that_is_not_a_report_is_an_error() {
        assert!(report_threads(b"{}").is_err());
        assert!(report_threads(b"not json").is_err());
    }
}
