//! How a stack's frames are read: the blocking call a thread waited in, a pool worker's or
//! event loop's idle wait, the GC poll frames folded into their caller, and the focus and
//! exclude filters ([`StackFilter`]).

use rustc_hash::FxHashMap;

use crate::cpu::is_blocking_caller;
use crate::grouping::JustMyCode;
use crate::profile::native::{NativeGroups, NativeView};
use crate::symbols::{FrameId, FrameKind, Symbols};

/// Frames for time no sampled stack shows, interned by [`crate::Analysis::finish`].
#[derive(Clone, Debug, Default)]
pub struct Groups {
    /// The frame of each thread's unsampled CPU: `[runtime: tiered JIT]` for a runtime
    /// thread the sampler never saw, [`UNSAMPLED_FRAME`](super::UNSAMPLED_FRAME) for a sampled one.
    pub unsampled: FxHashMap<u64, FrameId>,
    /// [`UNSAMPLED_FRAME`](super::UNSAMPLED_FRAME), for a thread's CPU after its last sample when that was blocked.
    pub(crate) unsampled_any: Option<FrameId>,
    /// [`IDLE_POOL_FRAME`](super::IDLE_POOL_FRAME).
    pub(crate) idle_pool: Option<FrameId>,
    /// [`IDLE_SOCKETS_FRAME`](super::IDLE_SOCKETS_FRAME).
    pub(crate) idle_sockets: Option<FrameId>,
    /// The frame each run of native frames is grouped into.
    pub(crate) native: NativeGroups,
}

/// Filters applied to stacks before any view.
#[derive(Clone, Debug, Default)]
pub struct StackFilter {
    /// Only this thread.
    pub thread: Option<u64>,
    /// Re-root at the outermost frame whose name contains this (stacks without it are dropped).
    pub focus: Option<String>,
    /// Drop stacks with a frame whose name contains any of these.
    pub exclude: Vec<String>,
    /// Fold the runtime's and frameworks' frames into the boundary frame where the app's own
    /// code calls them (after focus and exclude, which see every frame).
    pub just_my_code: Option<JustMyCode>,
    /// How runs of native frames (the runtime, the JIT, libc, native libraries: the kernel
    /// sampler's stacks have them) are shown: one frame by role, by default.
    pub native: NativeView,
}

/// True when a row's waiting is time ready to run: measured waiting in managed code outside
/// any known blocking call.
pub(super) fn is_runnable(frames: &[FrameId], symbols: &Symbols) -> bool {
    blocking_call(frames, symbols).is_none()
        && frames
            .first()
            .is_some_and(|&f| symbols.frame(f).kind == FrameKind::Managed)
}

/// The deepest (leaf-most) known blocking call of a leaf-first stack: a managed frame named
/// in [`crate::cpu::BLOCKING_FRAMES`], or the innermost managed frame when it is one of
/// [`crate::cpu::BLOCKING_CALLERS`] with native code below it (its own inlined platform
/// call). Every report sorts running from waiting by this one rule.
pub(crate) fn blocking_call(frames: &[FrameId], symbols: &Symbols) -> Option<FrameId> {
    let named = frames.iter().copied().find(|&f| symbols.is_blocking(f));
    named.or_else(|| blocking_caller(frames, symbols).map(|(_, f)| f))
}

/// The innermost managed frame and its index when it blocks in native code below it.
pub(super) fn blocking_caller(frames: &[FrameId], symbols: &Symbols) -> Option<(usize, FrameId)> {
    let i = frames
        .iter()
        .position(|&f| symbols.frame(f).kind == FrameKind::Managed)?;
    let f = *frames.get(i)?;
    (i > 0 && is_blocking_caller(&symbols.frame(f).name)).then_some((i, f))
}

/// How a thread-pool worker or event loop waits for work: where its stack shows it, and the
/// idle frame that replaces the waiting part.
pub(super) fn idle_kind(
    frames: &[FrameId],
    symbols: &Symbols,
    groups: &Groups,
) -> Option<(usize, FrameId)> {
    // The outermost waiting frame: everything it called is the wait.
    for (i, &f) in frames.iter().enumerate().rev() {
        let n = &symbols.frame(f).name;
        if n.starts_with("System.Threading.LowLevelLifoSemaphore.") {
            return groups.idle_pool.map(|g| (i + 1, g));
        }
        if n.starts_with("Interop+Sys.WaitForSocketEvents") {
            return groups.idle_sockets.map(|g| (i + 1, g));
        }
        // The pool's gate thread between its checks: everything it called is its wait.
        if n.starts_with(IDLE_GATE_LOOP) {
            let waiting = blocking_call(&frames[..i], symbols).is_some();
            return groups.idle_pool.filter(|_| waiting).map(|g| (i, g));
        }
    }
    // The sockets' event loop in its own (inlined) wait for events.
    if let Some((i, f)) = blocking_caller(frames, symbols) {
        if symbols.frame(f).name.starts_with(SOCKETS_EVENT_LOOP) {
            return groups.idle_sockets.map(|g| (i, g));
        }
    }
    // A worker caught in its own loop between work items: spinning for work.
    let leaf = frames.first().map(|&f| symbols.frame(f).name.as_str());
    if leaf.is_some_and(|n| n.starts_with(IDLE_WORKER_LOOP)) {
        return groups.idle_pool.map(|g| (0, g));
    }
    None
}

/// The thread pool gate thread's loop.
const IDLE_GATE_LOOP: &str = "System.Threading.PortableThreadPool+GateThread.GateThreadStart";

/// The sockets' event loop.
const SOCKETS_EVENT_LOOP: &str = "System.Net.Sockets.SocketAsyncEngine.EventLoop";

/// The thread pool worker's loop.
const IDLE_WORKER_LOOP: &str = "System.Threading.PortableThreadPool+WorkerThread.WorkerThreadStart";

/// The runtime's GC poll helpers, where the sampler often catches a thread that is running
/// its caller's loop: their samples belong to the caller.
pub(super) fn is_safepoint_frame(name: &str) -> bool {
    name.starts_with("System.Threading.Thread.<PollGC>") || name == "System.Threading.Thread.PollGC"
}

/// Drops GC poll frames from the leaf end of a stack.
pub(super) fn fold_safepoint_frames(mut frames: Vec<FrameId>, symbols: &Symbols) -> Vec<FrameId> {
    let n = frames
        .iter()
        .take_while(|&&f| is_safepoint_frame(&symbols.frame(f).name))
        .count();
    if n > 0 && n < frames.len() {
        frames.drain(..n);
    }
    frames
}

/// Applies focus and exclude to a leaf-first frame list.
pub(super) fn apply_filter(
    frames: Vec<FrameId>,
    symbols: &Symbols,
    f: &StackFilter,
) -> Option<Vec<FrameId>> {
    if !f.exclude.is_empty()
        && frames.iter().any(|&fr| {
            let n = &symbols.frame(fr).name;
            f.exclude.iter().any(|x| n.contains(x.as_str()))
        })
    {
        return None;
    }
    match &f.focus {
        None => Some(frames),
        Some(focus) => {
            // The outermost (root-most) matching frame becomes the root.
            let pos = frames
                .iter()
                .rposition(|&fr| symbols.frame(fr).name.contains(focus.as_str()))?;
            Some(frames[..=pos].to_vec())
        }
    }
}
