//! What a dump's analysis holds: the JSON `dump analyze --json` writes (stable keys, documented
//! in `docs/dump-analyze.md`), and what the text views read.

use serde::{Deserialize, Serialize};

/// Everything read from one dump.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Analysis {
    /// The dump and the runtime in it.
    pub dump: DumpFacts,
    /// Every managed thread the runtime knows.
    pub threads: Vec<ManagedThread>,
    /// Monitors held (`lock`, `Monitor.Enter`), from the runtime's sync-block table.
    pub locks: Vec<Lock>,
    /// Cycles of threads each waiting for a monitor the next one holds.
    pub deadlocks: Vec<Deadlock>,
    /// The exceptions the threads hold (the last one each threw), with their inner chains.
    pub exceptions: Vec<ExceptionInfo>,
    /// The heap by type, when asked for.
    pub heap: Option<HeapStats>,
    /// The images the process had mapped.
    pub modules: Vec<Module>,
    /// Paths from the roots to the objects asked for (`gcroot`).
    pub gcroots: Vec<GcRoot>,
    /// What could not be read, said once each.
    pub warnings: Vec<String>,
}

/// The dump and its runtime.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DumpFacts {
    /// The file read.
    pub path: String,
    /// How it was packed and read.
    pub packing: String,
    /// The process id.
    pub pid: u32,
    /// The process's name.
    pub command: String,
    /// `x64` or `arm64`.
    pub machine: String,
    /// Threads in the core (managed or not).
    pub os_threads: usize,
    /// Bytes of memory the core holds.
    pub memory_bytes: u64,
    /// The runtime's path in the process.
    pub runtime: String,
    /// The data access library used, and how it was found.
    pub dac: String,
}

/// A managed thread.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ManagedThread {
    /// Its name (`Thread.Name`), read from its `Thread` object where the dump holds the heap.
    pub name: Option<String>,
    /// The managed thread id (`Environment.CurrentManagedThreadId`).
    pub managed_id: u32,
    /// The OS thread id (0 for a thread not started or gone).
    pub os_id: u32,
    /// What the runtime says it is: `finalizer`, `threadpool worker`, `background`, `dead`...
    pub kinds: Vec<String>,
    /// The runtime's `Thread` object (hex), as `syncblk` names owners.
    pub address: String,
    /// Monitors it holds (the runtime's count).
    pub lock_count: u32,
    /// The exception it holds (the object's address, hex), if any.
    pub exception: Option<String>,
    /// Its innermost managed frames are entering a monitor (`Monitor.Enter`, `lock`).
    pub entering_monitor: bool,
    /// The monitor's object (hex) it waits to enter, when its stack is in `Monitor.Enter`
    /// and a monitor held by another thread is on its stack.
    pub waits_for: Option<String>,
    /// The method of the runtime's own frame it sits in before its managed frames, where the
    /// runtime says (`System.Threading.Monitor.ReliableEnter(...)` on .NET 8 and 9).
    pub runtime_frame: Option<String>,
    /// Its managed frames, innermost first.
    pub frames: Vec<Frame>,
}

/// One managed frame.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Frame {
    /// The stack pointer (hex).
    pub sp: String,
    /// The instruction pointer (hex).
    pub ip: String,
    /// The method.
    pub method: String,
}

/// A monitor (a sync block) that is held.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Lock {
    /// The sync block's index in the runtime's table (as `syncblk` shows it).
    pub index: u32,
    /// The object locked on (hex).
    pub object: String,
    /// Its type.
    pub object_type: String,
    /// The owner's OS thread id.
    pub owner_os_id: u32,
    /// The owner's managed thread id.
    pub owner_managed_id: u32,
    /// How many times the owner entered it.
    pub recursion: u32,
    /// Threads waiting to enter it, as the runtime counts them.
    pub waiters: u32,
    /// The OS ids of the waiting threads found from their stacks.
    pub waiting_threads: Vec<u32>,
}

/// A deadlock: each member waits for the monitor the next one holds; the last waits for the
/// first's.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Deadlock {
    /// The members, in order.
    pub members: Vec<CycleMember>,
}

/// One thread of a deadlock.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CycleMember {
    /// Its name, where known.
    pub name: Option<String>,
    /// Its OS thread id.
    pub os_id: u32,
    /// Its managed thread id.
    pub managed_id: u32,
    /// The object of the monitor it waits for (hex), and its type.
    pub waits_for: String,
    /// That object's type.
    pub waits_for_type: String,
    /// The objects of the monitors it holds (hex).
    pub holds: Vec<String>,
    /// Threads waiting behind the monitor it waits for, as the runtime counts them.
    pub waiters_behind: u32,
    /// Its innermost managed frames.
    pub stack: Vec<String>,
}

/// An exception object.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExceptionInfo {
    /// The thread holding it (OS id), for the outermost.
    pub thread_os_id: u32,
    /// The object (hex).
    pub address: String,
    /// Its type.
    pub type_name: String,
    /// Its message.
    pub message: Option<String>,
    /// Its HRESULT (hex).
    pub hresult: String,
    /// Its stack trace as the runtime saved it in text, where it did.
    pub stack_trace: Option<String>,
    /// Its inner exceptions, outermost first.
    pub inner: Vec<ExceptionInfo>,
}

/// The heap by type (as `dumpheap -stat`: every object in the heap, reachable or not).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HeapStats {
    /// Objects walked.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Segments or regions walked.
    pub segments: u64,
    /// Types, by bytes, largest first.
    pub types: Vec<TypeStat>,
    /// Walks cut short by unreadable or inconsistent memory.
    pub gaps: u64,
}

/// One type's objects.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TypeStat {
    /// The method table (hex).
    pub method_table: String,
    /// The type's name.
    pub name: String,
    /// Objects.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What holds an object alive: the path from a root to it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GcRoot {
    /// The object (hex).
    pub target: String,
    /// Its type.
    pub type_name: String,
    /// The shortest path from any root; None when no root reaches it (garbage).
    pub path: Option<RootPath>,
    /// False when the search stopped at its bound before reaching every object: "no path"
    /// is then not proven.
    pub searched_all: bool,
}

/// A root and the objects from it to the target.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RootPath {
    /// The root (`pinned handle 0x…`, `strong handle 0x…`, `thread 1234's stack`).
    pub root: String,
    /// The objects from the root's to the target, in order.
    pub chain: Vec<PathNode>,
}

/// One object on a path.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PathNode {
    /// Its address (hex).
    pub address: String,
    /// Its type.
    pub type_name: String,
}

/// A mapped image.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Module {
    /// Where it was mapped (hex).
    pub base: String,
    /// Its path in the process.
    pub path: String,
    /// Whether it is a managed assembly (a `.dll` the runtime mapped).
    pub managed: bool,
}

/// Hex with `0x`.
pub(crate) fn hex(v: u64) -> String {
    format!("{v:#x}")
}
