//! `clrspy dump analyze` against Microsoft's dotnet-dump on one process in a known state, the
//! `dumpme` workload: a two-lock deadlock with 300 more threads queued on one of its locks, a
//! thread inside the handler of an exception that has an inner one, 5,000 leaked objects. The
//! dumps `clrspy dump` writes of it — a heap dump seekable-zstd (the default) and raw, a full
//! dump gzip, a mini and a triage dump — are each read with `dump analyze --json` (locks,
//! threads, exceptions, heap) and compared with what dotnet-dump's `syncblk`, `clrstack -all`,
//! `pe` and `dumpheap -stat` say of the raw core. Then damaged copies of the raw core (cut in
//! half, bytes flipped): an answer or one clean error, never a signal or a panic, in bounded
//! time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{clrspy_command, live, need, run_bounded, workloads, Need, Running};

/// Threads queued on the deadlock's first lock (`--threads`).
const WAITERS: usize = 300;
/// `Workloads.LeakedItem`s held (the scenario's default `--count`).
const LEAKED: u64 = 5000;

/// The workload's threads by name.
struct Dumpme {
    /// OS thread ids by thread name (`/proc/PID/task/*/comm`: .NET names OS threads after
    /// managed ones, cut to 15 bytes).
    tids: HashMap<String, Vec<u32>>,
}

impl Dumpme {
    fn tid(&self, name: &str) -> u32 {
        let t = &self.tids[name];
        assert_eq!(t.len(), 1, "{name}: {t:?}");
        t[0]
    }
}

/// Starts `dumpme --threads 300` and waits (a minute at most) for its line saying that all of
/// it is in place; the process (killed when dropped) and its threads.
fn start_dumpme() -> (Running, Dumpme) {
    // Thread stacks of 1.5 MB rather than the shell's 8 MB: with 8 MB (and transparent huge
    // pages always on, as on the machine this was written on) each idle thread keeps its whole
    // stack resident and every heap dump of the 300 threads is 2.5 GB, three times slower to
    // write; nothing compared here depends on it.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -s 1536 && exec dotnet \"$0\" dumpme --threads \"$1\"")
        .arg(workloads())
        .arg(WAITERS.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the workload");
    let pid = child.id();
    let stdout = child.stdout.take().expect("stdout");
    let app = Running(child, pid);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let ready = loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("dumpme ") => break line,
            Ok(line) => seen.push(line),
            Err(e) => panic!("no `dumpme` line from the workload ({e}): {seen:?}"),
        }
    };
    assert_eq!(seen, [format!("ready pid={pid}")]);
    assert_eq!(
        ready,
        format!("dumpme waiters={WAITERS} leaked={LEAKED}"),
        "not every waiter blocked"
    );
    let mut tids: HashMap<String, Vec<u32>> = HashMap::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let tid: u32 = e.file_name().to_str().unwrap().parse().unwrap();
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        tids.entry(comm.trim_end().to_string())
            .or_default()
            .push(tid);
    }
    (app, Dumpme { tids })
}

/// `clrspy dump -p PID -o DIR/NAME ARGS`, 2 minutes at most; the file written (NAME plus
/// `suffix`, the compression's).
fn take_dump(pid: u32, dir: &Path, name: &str, args: &[&str], suffix: &str) -> PathBuf {
    let t = Instant::now();
    let mut cmd = clrspy_command();
    cmd.args(["dump", "-p", &pid.to_string(), "-o"])
        .arg(dir.join(name))
        .args(args);
    let r = run_bounded(cmd, dir, Duration::from_secs(120));
    assert!(
        r.status.is_some_and(|s| s.success()),
        "clrspy dump {args:?}: {:?}\n{}{}",
        r.status,
        r.stdout,
        r.stderr
    );
    let file = dir.join(format!("{name}{suffix}"));
    assert!(file.is_file(), "{}: {}", file.display(), r.stderr);
    let mut dac = file.clone().into_os_string();
    dac.push(".libmscordaccore.so");
    assert!(
        Path::new(&dac).is_file(),
        "no library stored beside {file:?}"
    );
    eprintln!(
        "dump {name}{suffix} ({args:?}): {} bytes in {:.1} s",
        std::fs::metadata(&file).unwrap().len(),
        t.elapsed().as_secs_f64()
    );
    file
}

/// `clrspy dump analyze DUMP ARGS --json`, 2 minutes at most, asserting it succeeded.
fn analyze(dump: &Path, args: &[&str], dir: &Path) -> serde_json::Value {
    let mut cmd = clrspy_command();
    cmd.args(["dump", "analyze"])
        .arg(dump)
        .args(args)
        .arg("--json");
    let r = run_bounded(cmd, dir, Duration::from_secs(120));
    assert!(
        r.status.is_some_and(|s| s.success()),
        "dump analyze {} {args:?}: {:?}\n{}",
        dump.display(),
        r.status,
        r.stderr
    );
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", r.stdout))
}

/// `dotnet-dump analyze CORE -c COMMAND... -c exit`, 2 minutes at most; its stdout.
fn dotnet_dump(tool: &Path, core: &Path, commands: &[&str], dir: &Path) -> String {
    let mut cmd = Command::new(tool);
    cmd.arg("analyze").arg(core);
    for c in commands.iter().chain(&["exit"]) {
        cmd.arg("-c").arg(c);
    }
    cmd.env("DOTNET_CLI_TELEMETRY_OPTOUT", "1")
        .env("DOTNET_NOLOGO", "1");
    let r = run_bounded(cmd, dir, Duration::from_secs(120));
    assert!(
        r.status.is_some_and(|s| s.success()),
        "dotnet-dump {commands:?}: {:?}\n{}{}",
        r.status,
        r.stdout,
        r.stderr
    );
    r.stdout
}

/// A hex number with or without `0x`.
fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("not hex: {s:?}: {e}"))
}

/// One row of `syncblk`.
#[derive(Debug, PartialEq)]
struct SyncBlk {
    index: u64,
    owner_os_id: u32,
    recursion: u64,
    /// (MonitorHeld - 1) / 2: the owner counts 1, each waiter 2.
    waiters: u64,
    object_type: String,
}

/// `syncblk`'s rows by object.
fn parse_syncblk(text: &str) -> BTreeMap<u64, SyncBlk> {
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        // Index SyncBlock MonitorHeld Recursion ThreadObj OSID DbgId Object Type...
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 9 || t[0].parse::<u64>().is_err() {
            continue;
        }
        let held: u64 = t[2].parse().unwrap();
        assert!(held % 2 == 1, "{line}");
        rows.insert(
            hex(t[7]),
            SyncBlk {
                index: t[0].parse().unwrap(),
                owner_os_id: hex(t[5]) as u32,
                recursion: t[3].parse().unwrap(),
                waiters: (held - 1) / 2,
                object_type: t[8..].join(" "),
            },
        );
    }
    rows
}

/// A managed frame: stack pointer, instruction pointer, method.
type Frame = (u64, u64, String);

/// `clrstack -all`: each thread's managed frames by OS id, innermost first, without the
/// runtime's transition frames (`[InlinedCallFrame: ...]`) and without the source position
/// (` [/path/File.cs @ 12]`).
fn parse_clrstack(text: &str) -> BTreeMap<u32, Vec<Frame>> {
    let mut threads = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(id) = line.strip_prefix("OS Thread Id: 0x") {
            let id = id.split_whitespace().next().unwrap();
            let tid = hex(id) as u32;
            threads.insert(tid, Vec::new());
            current = Some(tid);
            continue;
        }
        let Some(tid) = current else { continue };
        let mut parts = line.splitn(3, ' ');
        let (Some(sp), Some(ip), Some(site)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let is_hex = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_hex(sp) || !is_hex(ip) {
            continue;
        }
        let site = site.trim();
        if site.starts_with('[') {
            continue;
        }
        let method = match site.rfind(" [") {
            Some(at) if site.ends_with(']') && site[at..].contains(" @ ") => &site[..at],
            _ => site,
        };
        threads
            .get_mut(&tid)
            .unwrap()
            .push((hex(sp), hex(ip), method.to_string()));
    }
    threads
}

/// What `pe` says of an exception.
#[derive(Debug, Default)]
struct Pe {
    address: u64,
    type_name: String,
    message: String,
    inner_type: Option<String>,
    inner_address: Option<u64>,
    hresult: u64,
}

fn parse_pe(text: &str) -> Pe {
    let mut pe = Pe::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key {
            "Exception object" => pe.address = hex(value),
            "Exception type" => pe.type_name = value.to_string(),
            "Message" => pe.message = value.to_string(),
            "HResult" => pe.hresult = hex(value),
            "InnerException" if value != "<none>" => {
                // `System.FormatException, Use printexception 00007F8B25885028 to see more.`
                let (t, rest) = value.split_once(", ").unwrap_or_else(|| panic!("{line}"));
                pe.inner_type = Some(t.to_string());
                pe.inner_address = rest.split_whitespace().nth(2).map(hex);
            }
            _ => {}
        }
    }
    assert!(pe.address != 0, "no exception in: {text}");
    pe
}

/// `dumpheap -stat`: count, bytes and name by method table, and the totals.
struct HeapStat {
    types: BTreeMap<u64, (u64, u64, String)>,
    objects: u64,
    bytes: u64,
}

fn parse_dumpheap_stat(text: &str) -> HeapStat {
    let number = |s: &str| -> u64 { s.replace(',', "").parse().unwrap() };
    let mut stat = HeapStat {
        types: BTreeMap::new(),
        objects: 0,
        bytes: 0,
    };
    let mut rows = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("MT ") {
            rows = true;
            continue;
        }
        if let Some(total) = line.strip_prefix("Total ") {
            // `Total 12,062 objects, 643,012 bytes`
            let t: Vec<&str> = total.split_whitespace().collect();
            stat.objects = number(t[0]);
            stat.bytes = number(t[2]);
            break;
        }
        if !rows {
            continue;
        }
        let (mt, rest) = line.split_once(' ').unwrap();
        let (count, rest) = rest.trim_start().split_once(' ').unwrap();
        let (bytes, name) = rest.trim_start().split_once(' ').unwrap();
        stat.types
            .insert(hex(mt), (number(count), number(bytes), name.to_string()));
    }
    stat
}

/// What dotnet-dump says of the raw heap dump.
struct Reference {
    syncblk: BTreeMap<u64, SyncBlk>,
    stacks: BTreeMap<u32, Vec<Frame>>,
    exception: Pe,
    inner: Pe,
    heap: HeapStat,
}

impl Reference {
    fn read(tool: &Path, core: &Path, thrower: u32, dir: &Path) -> Reference {
        let t = Instant::now();
        let syncblk = parse_syncblk(&dotnet_dump(tool, core, &["syncblk"], dir));
        let stacks = parse_clrstack(&dotnet_dump(tool, core, &["clrstack -all"], dir));
        let exception = parse_pe(&dotnet_dump(
            tool,
            core,
            &[&format!("setthread -t {thrower}"), "pe"],
            dir,
        ));
        let inner_address = exception.inner_address.expect("an inner exception");
        let inner = parse_pe(&dotnet_dump(
            tool,
            core,
            &[&format!("pe {inner_address:x}")],
            dir,
        ));
        let heap = parse_dumpheap_stat(&dotnet_dump(tool, core, &["dumpheap -stat"], dir));
        eprintln!(
            "dotnet-dump on {}: {:.1} s",
            core.display(),
            t.elapsed().as_secs_f64()
        );
        Reference {
            syncblk,
            stacks,
            exception,
            inner,
            heap,
        }
    }
}

/// The facts the workload fixes, whatever dotnet-dump says.
fn check_reference(r: &Reference, w: &Dumpme) {
    let (a, b) = (w.tid("lock-a-then-b"), w.tid("lock-b-then-a"));
    let owners: BTreeMap<u32, u64> = r
        .syncblk
        .values()
        .map(|s| (s.owner_os_id, s.waiters))
        .collect();
    // lock-a-then-b holds LockA, with lock-b-then-a and the 300 waiters behind it.
    assert_eq!(
        owners,
        BTreeMap::from([(a, WAITERS as u64 + 1), (b, 1)]),
        "syncblk: {:?}",
        r.syncblk
    );
    assert_eq!(r.exception.type_name, "System.InvalidOperationException");
    assert_eq!(r.exception.message, "dumpme: the original failure");
    assert_eq!(r.inner.type_name, "System.FormatException");
    assert_eq!(r.inner.message, "dumpme: the inner cause");
    let leaked = r
        .heap
        .types
        .values()
        .find(|t| t.2 == "Workloads.LeakedItem");
    assert_eq!(leaked.map(|t| t.0), Some(LEAKED));
}

/// `locks --json` of a dump that holds the sync-block table: the same monitors, owners,
/// recursion and waiter counts as `syncblk`; each waiter found from its stack; one cycle of
/// the two lock threads, 301 waiters behind the monitor lock-b-then-a waits for.
fn check_locks(kind: &str, v: &serde_json::Value, r: &Reference, w: &Dumpme) {
    let locks = v["locks"].as_array().unwrap();
    let mut seen = BTreeMap::new();
    for l in locks {
        let object = hex(l["object"].as_str().unwrap());
        let want = r
            .syncblk
            .get(&object)
            .unwrap_or_else(|| panic!("{kind}: {l} is not in syncblk: {:?}", r.syncblk));
        let got = SyncBlk {
            index: l["index"].as_u64().unwrap(),
            owner_os_id: l["owner_os_id"].as_u64().unwrap() as u32,
            recursion: l["recursion"].as_u64().unwrap(),
            waiters: l["waiters"].as_u64().unwrap(),
            object_type: l["object_type"].as_str().unwrap().to_string(),
        };
        assert_eq!(&got, want, "{kind}: monitor {object:#x}");
        let waiting: BTreeSet<u32> = l["waiting_threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_u64().unwrap() as u32)
            .collect();
        seen.insert(got.owner_os_id, (object, waiting));
    }
    assert_eq!(seen.len(), r.syncblk.len(), "{kind}: {v}");
    let (a, b) = (w.tid("lock-a-then-b"), w.tid("lock-b-then-a"));
    let mut behind_a: BTreeSet<u32> = (0..WAITERS)
        .map(|i| w.tid(&format!("waiter-{i}")))
        .collect();
    behind_a.insert(b);
    assert_eq!(
        seen[&a].1, behind_a,
        "{kind}: the threads waiting for LockA"
    );
    assert_eq!(seen[&b].1, BTreeSet::from([a]), "{kind}");
    let (lock_a, lock_b) = (seen[&a].0, seen[&b].0);

    let cycles = v["deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{kind}: {v}");
    let members = cycles[0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 2, "{kind}: {v}");
    for m in members {
        let os_id = m["os_id"].as_u64().unwrap() as u32;
        let (holds, waits_for, method, name) = if os_id == a {
            (
                lock_a,
                lock_b,
                "Workloads.DumpMe.TakeAThenB()",
                "lock-a-then-b",
            )
        } else {
            assert_eq!(os_id, b, "{kind}: {m}");
            (
                lock_b,
                lock_a,
                "Workloads.DumpMe.TakeBThenA()",
                "lock-b-then-a",
            )
        };
        // The name, from the thread's `Thread` object in the dump's heap.
        assert_eq!(m["name"], name, "{kind}: {m}");
        assert_eq!(
            m["holds"],
            serde_json::json!([format!("{holds:#x}")]),
            "{kind}"
        );
        assert_eq!(hex(m["waits_for"].as_str().unwrap()), waits_for, "{kind}");
        assert_eq!(m["waits_for_type"], "System.Object", "{kind}");
        assert_eq!(
            m["waiters_behind"].as_u64(),
            Some(r.syncblk[&waits_for].waiters),
            "{kind}: {m}"
        );
        let stack: Vec<&str> = m["stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(
            stack[..3],
            [
                "System.Threading.Monitor.Enter_Slowpath(System.Object)",
                "System.Threading.Monitor.Enter(System.Object, Boolean ByRef)",
                method
            ],
            "{kind}"
        );
    }
    assert_eq!(r.syncblk[&lock_a].waiters, WAITERS as u64 + 1);
}

/// `locks --json` of a mini or triage dump: no sync-block table (dotnet-dump's `syncblk` has
/// none either), so no owner and no cycle, but a warning counting the threads entering a
/// monitor.
fn check_no_locks(kind: &str, v: &serde_json::Value) {
    assert_eq!(v["locks"], serde_json::json!([]), "{kind}");
    assert_eq!(v["deadlocks"], serde_json::json!([]), "{kind}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "{} thread(s) wait to enter a monitor",
            WAITERS + 2
        )),
        "{kind}: {warnings}"
    );
}

/// `threads --json`: the same threads as `clrstack -all`, each with the same frames (stack
/// pointer, instruction pointer and method); the thrower holds `pe`'s exception; the two of
/// the cycle and the 300 waiters are entering a monitor.
fn check_threads(kind: &str, v: &serde_json::Value, r: &Reference, w: &Dumpme) {
    let threads = v["threads"].as_array().unwrap();
    let mut got = BTreeMap::new();
    for t in threads {
        let frames: Vec<Frame> = t["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    hex(f["sp"].as_str().unwrap()),
                    hex(f["ip"].as_str().unwrap()),
                    f["method"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        got.insert(t["os_id"].as_u64().unwrap() as u32, frames);
    }
    let (want_ids, got_ids): (BTreeSet<_>, BTreeSet<_>) =
        (r.stacks.keys().collect(), got.keys().collect());
    assert_eq!(got_ids, want_ids, "{kind}: the managed threads");
    assert!(got.len() >= WAITERS + 4, "{kind}: {}", got.len());
    for (tid, want) in &r.stacks {
        let names = |f: &[Frame]| f.iter().map(|x| x.2.clone()).collect::<Vec<_>>();
        assert_eq!(
            names(&got[tid]),
            names(want),
            "{kind}: the methods of thread {tid}"
        );
        assert_eq!(&got[tid], want, "{kind}: the frames of thread {tid}");
    }
    let thrower = w.tid("thrower");
    let entering: BTreeSet<u32> = threads
        .iter()
        .filter(|t| t["entering_monitor"] == true)
        .map(|t| t["os_id"].as_u64().unwrap() as u32)
        .collect();
    let mut want: BTreeSet<u32> = (0..WAITERS)
        .map(|i| w.tid(&format!("waiter-{i}")))
        .collect();
    want.extend([w.tid("lock-a-then-b"), w.tid("lock-b-then-a")]);
    assert_eq!(entering, want, "{kind}: the threads entering a monitor");
    for t in threads {
        let os_id = t["os_id"].as_u64().unwrap() as u32;
        let exception = t["exception"].as_str().map(hex);
        if os_id == thrower {
            assert_eq!(exception, Some(r.exception.address), "{kind}: {t}");
        } else {
            assert_eq!(exception, None, "{kind}: {t}");
        }
    }
}

/// `exceptions --json`: the thrower's exception with its inner one, as `pe` shows them
/// (`messages`: a triage dump leaves the strings out, and dotnet-dump cannot read them
/// either).
fn check_exceptions(kind: &str, v: &serde_json::Value, r: &Reference, w: &Dumpme, messages: bool) {
    let list = v["exceptions"].as_array().unwrap();
    assert_eq!(list.len(), 1, "{kind}: {v}");
    let e = &list[0];
    assert_eq!(
        e["thread_os_id"].as_u64(),
        Some(u64::from(w.tid("thrower"))),
        "{kind}"
    );
    let same = |got: &serde_json::Value, want: &Pe| {
        assert_eq!(
            hex(got["address"].as_str().unwrap()),
            want.address,
            "{kind}: {got}"
        );
        assert_eq!(
            got["type_name"].as_str(),
            Some(want.type_name.as_str()),
            "{kind}"
        );
        assert_eq!(
            hex(got["hresult"].as_str().unwrap()),
            want.hresult,
            "{kind}"
        );
        if messages {
            assert_eq!(
                got["message"].as_str(),
                Some(want.message.as_str()),
                "{kind}"
            );
        } else {
            assert!(got["message"].is_null(), "{kind}: {got}");
        }
    };
    same(e, &r.exception);
    let inner = e["inner"].as_array().unwrap();
    assert_eq!(inner.len(), 1, "{kind}: {e}");
    same(&inner[0], &r.inner);
    assert_eq!(r.exception.inner_address, Some(r.inner.address));
    assert_eq!(
        r.exception.inner_type.as_deref(),
        Some(r.inner.type_name.as_str())
    );
}

/// `heap --json --top 0`: every type of `dumpheap -stat` with the same count and bytes, by
/// method table, and the same name once the runtime's spelling of generics is written as
/// dotnet-dump writes it; the same totals; 5,000 `Workloads.LeakedItem`.
fn check_heap(kind: &str, v: &serde_json::Value, r: &Reference) {
    let h = &v["heap"];
    assert_eq!(v["warnings"], serde_json::json!([]), "{kind}");
    assert_eq!(h["gaps"], 0, "{kind}");
    assert_eq!(h["objects"].as_u64(), Some(r.heap.objects), "{kind}");
    assert_eq!(h["bytes"].as_u64(), Some(r.heap.bytes), "{kind}");
    let got: BTreeMap<u64, (u64, u64, String)> = h["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                hex(t["method_table"].as_str().unwrap()),
                (
                    t["count"].as_u64().unwrap(),
                    t["bytes"].as_u64().unwrap(),
                    t["name"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(got.len(), r.heap.types.len(), "{kind}: types");
    for (mt, want) in &r.heap.types {
        assert_eq!(got.get(mt), Some(want), "{kind}: method table {mt:#x}");
    }
    let leaked = got.values().find(|t| t.2 == "Workloads.LeakedItem");
    assert_eq!(leaked.map(|t| t.0), Some(LEAKED), "{kind}");
}

/// `gcroot --type` of the leaked objects: each held through the static list — the statics'
/// array, the `List<LeakedItem>`, its array, the object — found from a root.
fn check_gcroot(kind: &str, v: &serde_json::Value) {
    let roots = v["gcroots"].as_array().unwrap();
    assert!(!roots.is_empty(), "{kind}: {v}");
    for r in roots {
        assert_eq!(r["type_name"], "Workloads.LeakedItem", "{kind}: {r}");
        assert_eq!(r["searched_all"], true, "{kind}: {r}");
        let p = &r["path"];
        assert!(p.is_object(), "{kind}: no path to {r}");
        assert!(!p["root"].as_str().unwrap().is_empty(), "{kind}: {r}");
        let chain: Vec<&str> = p["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type_name"].as_str().unwrap())
            .collect();
        assert_eq!(chain.last(), Some(&"Workloads.LeakedItem"), "{kind}: {r}");
        assert_eq!(
            p["chain"].as_array().unwrap().last().unwrap()["address"],
            r["target"]
        );
        assert!(
            chain.contains(&"System.Collections.Generic.List<Workloads.LeakedItem>"),
            "{kind}: {chain:?}"
        );
    }
}

/// `heap --json` of a mini or triage dump: no objects of the workload's (the heap is not in
/// it; dotnet-dump's `dumpheap -stat` lists nothing), and a warning saying the figures are
/// not the heap's.
fn check_no_heap(kind: &str, v: &serde_json::Value) {
    let types = v["heap"]["types"].as_array().unwrap();
    assert!(
        types.iter().all(|t| t["name"] != "Workloads.LeakedItem"),
        "{kind}: {types:?}"
    );
    assert!(
        v["warnings"].to_string().contains("heap"),
        "{kind}: {}",
        v["warnings"]
    );
}

/// Unpacks a zstd or gzip dump to `out` (dotnet-dump reads raw cores only).
fn unpack(packed: &Path, out: &Path) {
    let input = std::fs::File::open(packed).unwrap();
    let mut output = std::fs::File::create(out).unwrap();
    if packed.extension().is_some_and(|e| e == "gz") {
        std::io::copy(&mut flate2::read::GzDecoder::new(input), &mut output).unwrap();
    } else {
        zstd::stream::copy_decode(input, &mut output).unwrap();
    }
}

/// The file offset of virtual address `addr` in an ELF64 core (its PT_LOAD segments).
fn file_offset(core: &Path, addr: u64) -> Option<u64> {
    let mut f = std::fs::File::open(core).ok()?;
    let mut header = [0u8; 64];
    f.read_exact(&mut header).ok()?;
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (phoff, size, count) = (
        u64_at(&header, 0x20),
        u16_at(&header, 0x36) as usize,
        u16_at(&header, 0x38) as usize,
    );
    let mut table = vec![0u8; size * count];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    table.chunks(size).find_map(|ph| {
        let (kind, offset, vaddr, filesz) = (
            u32::from_le_bytes(ph[..4].try_into().unwrap()),
            u64_at(ph, 8),
            u64_at(ph, 16),
            u64_at(ph, 32),
        );
        (kind == 1 && (vaddr..vaddr + filesz).contains(&addr)).then(|| offset + addr - vaddr)
    })
}

/// Every byte of `len` at `at` in `file` inverted.
fn flip(file: &Path, at: u64, len: usize) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(file)
        .unwrap();
    let mut buf = vec![0u8; len];
    f.seek(SeekFrom::Start(at)).unwrap();
    let n = f.read(&mut buf).unwrap();
    buf.truncate(n);
    for b in &mut buf {
        *b = !*b;
    }
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&buf).unwrap();
}

/// Each view of a damaged core, a minute at most: an answer (JSON) or one clean error line;
/// never killed by a signal, never a panic.
fn check_damaged(what: &str, core: &Path, dac: &Path, dir: &Path) {
    for view in [
        "summary",
        "locks",
        "threads",
        "exceptions",
        "heap",
        "modules",
    ] {
        let t = Instant::now();
        let mut cmd = clrspy_command();
        cmd.args(["dump", "analyze"])
            .arg(core)
            .args([view, "--json", "--dac"])
            .arg(dac);
        let r = run_bounded(cmd, dir, Duration::from_secs(60));
        let said = format!("{what}, {view}: {:?}\n{}", r.status, r.stderr);
        let status = r.status.unwrap_or_else(|| panic!("over a minute: {said}"));
        assert!(status.code().is_some(), "ended by a signal: {said}");
        assert!(!r.stderr.contains("panic"), "a panic: {said}");
        if status.success() {
            let v: serde_json::Value = serde_json::from_str(&r.stdout)
                .unwrap_or_else(|e| panic!("{said}: not JSON ({e}): {}", r.stdout));
            assert!(v["dump"].is_object(), "{said}");
            eprintln!(
                "{what}, {view}: an answer in {:.1} s, warnings {}",
                t.elapsed().as_secs_f64(),
                v["warnings"]
            );
        } else {
            let lines: Vec<&str> = r.stderr.lines().collect();
            assert!(
                lines.len() == 1 && lines[0].starts_with("clrspy: error: "),
                "not one clean error: {said}"
            );
            assert!(r.stdout.is_empty(), "{said}");
            eprintln!(
                "{what}, {view}: exit {:?} in {:.1} s: {}",
                status.code(),
                t.elapsed().as_secs_f64(),
                lines[0]
            );
        }
    }
}

#[test]
fn dump_analyze_answers_as_dotnet_dump_does_on_every_kind_of_dump() {
    if !live() {
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (app, w) = start_dumpme();
    let pid = app.1;
    let heap_zst = take_dump(pid, d, "heap.dmp", &[], ".zst");
    let raw = take_dump(pid, d, "raw.dmp", &["--compress", "none"], "");
    let full_gz = take_dump(
        pid,
        d,
        "full.dmp",
        &["--type", "full", "--compress", "gzip"],
        ".gz",
    );
    let mini = take_dump(pid, d, "mini.dmp", &["--type", "mini"], ".zst");
    let triage = take_dump(pid, d, "triage.dmp", &["--type", "triage"], ".zst");
    let thrower = w.tid("thrower");
    // The hang now, as a user asks: `report hangs -p` names the cycle and the threads queued
    // behind it (its own heap dump, kept in the working folder).
    let out = clrspy_command()
        .current_dir(d)
        .args(["report", "hangs", "-p", &pid.to_string(), "--json"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let cycles = v["deadlocks"].as_array().unwrap();
    assert_eq!(cycles.len(), 1, "{v}");
    let mut named: Vec<(String, u64)> = cycles[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap_or("").to_string(),
                m["waiters_behind"].as_u64().unwrap(),
            )
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            ("lock-a-then-b".to_string(), 1),
            ("lock-b-then-a".to_string(), WAITERS as u64 + 1)
        ],
        "{v}"
    );
    assert!(
        v["blocked_entering_monitor"].as_u64().unwrap() >= WAITERS as u64 + 2,
        "{v}"
    );
    let _ = std::fs::remove_file(v["dump"].as_str().unwrap());
    drop(app);

    let Some(tool) = need(Need::DotnetDump) else {
        return;
    };
    // Each dump against dotnet-dump on its own raw core: the dumps are seconds apart, and a
    // thread of the runtime's own (the tiered compilation's worker) may come or go between
    // them.
    let mut raw_reference = None;
    for (kind, dump) in [
        ("heap zstd", &heap_zst),
        ("heap raw", &raw),
        ("full gzip", &full_gz),
        ("mini", &mini),
        ("triage", &triage),
    ] {
        let t = Instant::now();
        let core = if dump == &raw {
            raw.clone()
        } else {
            let core = d.join("unpacked.core");
            unpack(dump, &core);
            core
        };
        let r = Reference::read(&tool, &core, thrower, d);
        if core != raw {
            std::fs::remove_file(&core).unwrap();
        }
        match kind {
            // The heap dump (seekable zstd, read in place, and raw) and the full dump (gzip,
            // unpacked to a temporary file): everything.
            "heap zstd" | "heap raw" | "full gzip" => {
                check_reference(&r, &w);
                check_locks(kind, &analyze(dump, &["locks"], d), &r, &w);
                check_threads(kind, &analyze(dump, &["threads"], d), &r, &w);
                check_exceptions(kind, &analyze(dump, &["exceptions"], d), &r, &w, true);
                check_heap(kind, &analyze(dump, &["heap", "--top", "0"], d), &r);
                // `?` makes the whole name match: LeakedItem objects, not the list of them.
                let roots = analyze(dump, &["gcroot", "--type", "Workloads.Leaked?tem"], d);
                check_gcroot(kind, &roots);
            }
            // Mini and triage dumps: every thread's stack and the exceptions (triage without
            // their messages), no sync-block table and no heap — as dotnet-dump finds them.
            _ => {
                let messages = kind == "mini";
                assert!(r.syncblk.is_empty(), "{kind}: {:?}", r.syncblk);
                assert!(r.heap.types.is_empty(), "{kind}");
                assert_eq!(
                    r.exception.message == "dumpme: the original failure",
                    messages,
                    "{kind}: {:?}",
                    r.exception
                );
                check_no_locks(kind, &analyze(dump, &["locks"], d));
                check_threads(kind, &analyze(dump, &["threads"], d), &r, &w);
                check_exceptions(kind, &analyze(dump, &["exceptions"], d), &r, &w, messages);
                check_no_heap(kind, &analyze(dump, &["heap", "--top", "0"], d));
            }
        }
        eprintln!("{kind}: checked in {:.1} s", t.elapsed().as_secs_f64());
        if dump == &raw {
            raw_reference = Some(r);
        }
    }
    let r = raw_reference.unwrap();

    // Damaged copies of the raw core, read with the library stored beside the original.
    let t = Instant::now();
    let dac = d.join("raw.dmp.libmscordaccore.so");
    let len = std::fs::metadata(&raw).unwrap().len();
    let cut = d.join("cut.core");
    std::io::copy(
        &mut std::fs::File::open(&raw).unwrap().take(len / 2),
        &mut std::fs::File::create(&cut).unwrap(),
    )
    .unwrap();
    check_damaged("the core cut in half", &cut, &dac, d);
    std::fs::remove_file(&cut).unwrap();
    // Flipped: 1 MiB in the middle of the file, and 64 KiB of the heap around the monitor
    // of the cycle (objects, their method tables' pointers, the sync-block indexes).
    let flipped = d.join("flipped.core");
    std::fs::rename(&raw, &flipped).unwrap();
    flip(&flipped, len / 2, 1 << 20);
    let object = *r.syncblk.keys().next().unwrap();
    let at = file_offset(&flipped, object).expect("the monitor's object is in the core");
    flip(&flipped, at.saturating_sub(32 << 10), 64 << 10);
    check_damaged("the core with flipped bytes", &flipped, &dac, d);
    eprintln!("damaged cores: {:.1} s", t.elapsed().as_secs_f64());
    eprintln!("the whole test: {:.1} s", started.elapsed().as_secs_f64());
}
