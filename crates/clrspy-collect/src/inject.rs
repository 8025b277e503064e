//! Splicing clrspy's own events into the runtime's NetTrace stream as it is written to disk, so
//! a recording stays one self-contained file that TraceEvent and PerfView still open.
//!
//! The runtime's bytes pass through unchanged. The splicer follows the stream's framing with
//! nettrace's [`Scanner`] (the `Nettrace` magic, the Trace object, then block objects; tag 1
//! ends the stream), holding back at most an object header, and between two blocks it inserts
//! its own MetadataBlock and EventBlock objects, written by nettrace's writer with metadata ids
//! far above the runtime's and a capture thread of their own (so no sequence gaps appear), on no
//! thread ([`NO_THREAD`]: other tools' sample views do not count them as samples). Each
//! inserted object is made a multiple of 4 bytes long (by growing its block header, whose
//! size readers honour) so every later runtime block keeps its alignment. Streams it does not
//! recognise (NetPerf, V6, anything damaged or unexpected) pass through untouched from there
//! on and nothing more is added.

use std::io::{self, Write};

use nettrace::{
    BlockKind, EventMetadata, EventRecord, FormatVersion, Item, Scanner, TraceWriter, WriteFormat,
    WriterOptions,
};

/// clrspy's provider name.
#[cfg(test)]
pub(crate) const PROVIDER: &str = clr_events::clrspy::PROVIDER;
pub use clr_events::clrspy::{CAPTURE_THREAD, FIRST_METADATA_ID, FIRST_STACK_ID, NO_THREAD};

/// clrspy's events.
#[derive(Clone, Debug, PartialEq)]
pub enum Injected {
    /// `ThreadCpu` (1): a thread's total CPU time at a sampler tick.
    ThreadCpu {
        /// Thread.
        tid: u32,
        /// CPU ns so far.
        cpu_ns: u64,
        /// Run-queue ns so far (`None` without schedstat).
        runqueue_ns: Option<u64>,
        /// Scheduler state letter (`X` once the thread is gone).
        state: u8,
    },
    /// `CgroupCpu` (10): the target's cgroup's CPU bandwidth counters so far.
    CgroupCpu {
        /// The counters.
        bandwidth: clr_events::clrspy::CpuBandwidth,
        /// The group's directory.
        path: String,
    },
    /// `ThreadName` (2).
    ThreadName {
        /// Thread.
        tid: u32,
        /// Name.
        name: String,
    },
    /// `SamplerInfo` (3): once, how readings are taken.
    SamplerInfo {
        /// Interval, ms.
        interval_ms: u32,
        /// "schedstat" or "stat".
        source: String,
    },
    /// `Tick` (4): every thread was read at this time.
    Tick,
    /// `RecorderCpu` (6): the recorder's own CPU time so far.
    RecorderCpu {
        /// The recorder's process id.
        pid: u32,
        /// CPU ns so far.
        cpu_ns: u64,
        /// This session's own threads' CPU ns so far.
        session_cpu_ns: Option<u64>,
    },
    /// `ModuleMap` (5): an executable mapping.
    ModuleMap {
        /// Start address.
        start: u64,
        /// End address.
        end: u64,
        /// File offset.
        offset: u64,
        /// Path.
        path: String,
    },
    /// `R2RMethod` (6): a precompiled function's name, by file offsets of its image.
    R2rMethod {
        /// The image's mapped path.
        path: String,
        /// File offset of the code.
        offset: u32,
        /// Code size.
        size: u32,
        /// `Namespace.Type.Method`.
        name: String,
    },
    /// `Trigger` (9): a stop trigger fired.
    Trigger {
        /// The trigger as written.
        trigger: String,
        /// Why it fired.
        reason: String,
        /// The firing event's provider and name (empty for none).
        provider: String,
        /// The firing event's name.
        event: String,
        /// The firing event's timestamp (trace clock ticks; 0 for none).
        event_timestamp: u64,
        /// How long recording goes on after it, ms.
        after_ms: u32,
    },
    /// `Ring` (11): once, last, what a ring buffer kept and dropped.
    Ring(clr_events::clrspy::Ring),
    /// A CPU sample the kernel took of a thread, with its stack: written as the runtime
    /// writes its own samples (the SampleProfiler provider's `ThreadSample` on the sampled
    /// thread, its stack an id into the file's stack blocks, which hold the `managed` frames
    /// other readers can name) and the whole stack in a `KernelStack` (16) of clrspy's.
    KernelSample {
        /// Thread.
        tid: u32,
        /// Return addresses, innermost first.
        stack: Vec<u64>,
        /// The frames of `stack` in managed code, innermost first.
        managed: Vec<u64>,
    },
    /// A thread of managed code blocked (left its CPU, not runnable) at this time, with its
    /// stack: written as the runtime's `ThreadSample` of the "external" kind, as the runtime's
    /// sampler samples a blocked thread, for other readers only (clrspy reads the wait's own
    /// `KernelWait`): their thread-time views weigh a sample by the time to the thread's next,
    /// and without it would count the time blocked as the last CPU sample's.
    KernelBlocked {
        /// Thread.
        tid: u32,
        /// Return addresses when it left, innermost first.
        stack: Vec<u64>,
        /// The frames of `stack` in managed code.
        managed: Vec<u64>,
    },
    /// `KernelSampler` (13): the kernel sampler's rate and counts so far.
    KernelSampler(clr_events::clrspy::KernelSampler),
    /// `KernelWait` (15): a thread off its CPU, with its stack when it left (written at
    /// its return; the stack by id, as a sample's).
    KernelWait {
        /// Thread.
        tid: u32,
        /// Return addresses when it left, innermost first.
        stack: Vec<u64>,
        /// The frames of `stack` in managed code.
        managed: Vec<u64>,
        /// How long it was off its CPU, ns.
        duration_ns: u64,
        /// Preempted (runnable), not blocked.
        preempted: bool,
    },
    /// `NativeSymbol` (14): a native function's name, by file offsets of its ELF file.
    NativeSymbol {
        /// The file's mapped path.
        path: String,
        /// File offset of the function's start.
        offset: u64,
        /// Its size (0: unknown, the nearest symbol).
        size: u64,
        /// The symbol.
        name: String,
    },
    /// `Inlined` (17): the JIT compiled `method` with the app's `inlinee` inlined into it (both
    /// empty: the mark of when inlining began to be followed).
    Inlined {
        /// The compiled method, `Namespace.Type.Name`.
        method: String,
        /// The inlined method, named the same way.
        inlinee: String,
    },
    /// `R2RImage` (7): a ReadyToRun image's identity.
    R2rImage {
        /// The image's mapped path.
        path: String,
        /// File size.
        size: u64,
        /// MVID, 32 hex digits.
        mvid: String,
    },
}

impl Injected {
    /// The event's index in [`definitions`].
    fn id(&self) -> usize {
        use clr_events::clrspy::{ids, EVENTS};
        let id = match self {
            Injected::ThreadCpu { .. } => ids::THREAD_CPU,
            Injected::ThreadName { .. } => ids::THREAD_NAME,
            Injected::SamplerInfo { .. } => ids::SAMPLER_INFO,
            Injected::Tick => ids::TICK,
            Injected::ModuleMap { .. } => ids::MODULE_MAP,
            Injected::R2rMethod { .. } => ids::R2R_METHOD,
            Injected::R2rImage { .. } => ids::R2R_IMAGE,
            Injected::RecorderCpu { .. } => ids::RECORDER_CPU,
            Injected::Trigger { .. } => ids::TRIGGER,
            Injected::CgroupCpu { .. } => ids::CGROUP_CPU,
            Injected::Ring(_) => ids::RING,
            // Written as the runtime's sample (or, native code alone, as clrspy's own):
            // see `Splicer::inject_now`.
            Injected::KernelSample { .. } | Injected::KernelBlocked { .. } => ids::KERNEL_SAMPLE,
            Injected::KernelSampler(_) => ids::KERNEL_SAMPLER,
            Injected::KernelWait { .. } => ids::KERNEL_WAIT,
            Injected::NativeSymbol { .. } => ids::NATIVE_SYMBOL,
            Injected::Inlined { .. } => ids::INLINED,
        };
        // Every id is in the table (clr-events' tests check it).
        EVENTS.iter().position(|e| e.id == id).unwrap_or(0)
    }

    /// Writes the event's payload into `p` (cleared first: one buffer serves every event).
    fn payload_into(&self, p: &mut Vec<u8>) {
        use clr_events::clrspy;
        p.clear();
        match self {
            Injected::ThreadCpu {
                tid,
                cpu_ns,
                runqueue_ns,
                state,
            } => clrspy::ThreadCpu {
                thread_id: *tid,
                cpu_ns: *cpu_ns,
                state: u16::from(*state),
                runqueue_ns: *runqueue_ns,
            }
            .encode(p),
            Injected::CgroupCpu { bandwidth, path } => {
                clrspy::CgroupCpu::encode(bandwidth, path, p)
            }
            Injected::ThreadName { tid, name } => clrspy::ThreadName::encode(*tid, name, p),
            Injected::SamplerInfo {
                interval_ms,
                source,
            } => clrspy::SamplerInfo::encode(*interval_ms, source, p),
            Injected::Tick => {}
            Injected::RecorderCpu {
                pid,
                cpu_ns,
                session_cpu_ns,
            } => clrspy::RecorderCpu {
                process_id: *pid,
                cpu_ns: *cpu_ns,
                session_cpu_ns: *session_cpu_ns,
            }
            .encode(p),
            Injected::ModuleMap {
                start,
                end,
                offset,
                path,
            } => clrspy::ModuleMap::encode(*start, *end, *offset, path, p),
            Injected::R2rMethod {
                path,
                offset,
                size,
                name,
            } => clrspy::R2rMethod::encode(path, *offset, *size, name, p),
            Injected::Trigger {
                trigger,
                reason,
                provider,
                event,
                event_timestamp,
                after_ms,
            } => clrspy::Trigger::encode(
                [trigger, reason, provider, event],
                *event_timestamp,
                *after_ms,
                p,
            ),
            Injected::R2rImage { path, size, mvid } => {
                clrspy::R2rImage::encode(path, *size, mvid, p)
            }
            Injected::Ring(r) => r.encode(p),
            // The thread is the event's, the stack its stack id: the payload is the runtime's
            // sample kind, "managed" (on a CPU) or "external" (blocked).
            Injected::KernelSample { .. } => p.extend_from_slice(&THREAD_SAMPLE_ON_CPU),
            Injected::KernelBlocked { .. } => p.extend_from_slice(&THREAD_SAMPLE_BLOCKED),
            Injected::KernelSampler(k) => k.encode(p),
            // The stack is by id (the writer puts the id in: see `Splicer::inject_now`).
            Injected::KernelWait {
                tid,
                duration_ns,
                preempted,
                ..
            } => clrspy::KernelWait::encode(*tid, &[], *duration_ns, *preempted, 0, p),
            Injected::NativeSymbol {
                path,
                offset,
                size,
                name,
            } => clrspy::NativeSymbol::encode(path, *offset, *size, name, p),
            Injected::Inlined { method, inlinee } => clrspy::Inlined::encode(method, inlinee, p),
        }
    }
}

/// The payload of a runtime `ThreadSample` taken while the thread ran (its kind, 2: managed;
/// TraceEvent counts only this kind as CPU time).
const THREAD_SAMPLE_ON_CPU: [u8; 4] = 2u32.to_le_bytes();

/// The payload of a runtime `ThreadSample` of a thread not running managed code (its kind, 1:
/// external; TraceEvent counts it as blocked time).
const THREAD_SAMPLE_BLOCKED: [u8; 4] = 1u32.to_le_bytes();

/// The most distinct stacks clrspy writes in one sequence-point region; past it a sample
/// keeps no stack (counted in [`Splicer::stackless`]).
const MAX_REGION_STACKS: usize = 1 << 20;

/// The events' metadata, from clr-events' definition of the provider, then the runtime's
/// `ThreadSample` (the SampleProfiler provider's event 0, as the runtime declares it: no name,
/// no fields, version 0), last.
fn definitions() -> Vec<EventMetadata> {
    let mut d = clr_events::clrspy::metadata();
    d.push(EventMetadata {
        provider: clr_events::SAMPLE_PROFILER_PROVIDER.into(),
        event_id: 0,
        event_name: String::new(),
        version: 0,
        level: 4,
        ..EventMetadata::default()
    });
    d
}

/// Facts of the runtime's Trace object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceFacts {
    /// Clock ticks per second.
    pub ticks_per_second: i64,
    /// Pointer size.
    pub pointer_size: u8,
}

/// A sink's optional splicer, as the trace file and the ring both hold it: they answer
/// [`crate::sink::ByteSink`]'s splice calls through it (nothing happens when it is `None`).
pub(crate) trait SplicerSlot {
    /// Whether splicing events in still has an effect.
    fn wants_splices(&self) -> bool;
    /// Queues `ev` for the next gap between blocks.
    fn splice(&mut self, monotonic_ns: u64, ev: &Injected);
    /// Queues `ev` for the end of the stream.
    fn splice_at_end(&mut self, monotonic_ns: u64, ev: &Injected);
}

impl<W: Write> SplicerSlot for Option<Splicer<W>> {
    fn wants_splices(&self) -> bool {
        self.as_ref().is_some_and(|s| s.is_active())
    }

    fn splice(&mut self, monotonic_ns: u64, ev: &Injected) {
        if let Some(s) = self.as_mut() {
            s.push(monotonic_ns, ev.clone());
        }
    }

    fn splice_at_end(&mut self, monotonic_ns: u64, ev: &Injected) {
        if let Some(s) = self.as_mut() {
            s.push_at_end(monotonic_ns, ev.clone());
        }
    }
}

/// Passes the runtime's stream through to `W` and splices clrspy's events in between blocks.
pub struct Splicer<W: Write> {
    out: W,
    /// Follows the runtime's framing.
    scanner: Scanner,
    /// False once the stream is not one to splice into (unrecognised, damaged or ended):
    /// everything passes through.
    active: bool,
    /// Runtime bytes held back while the scanner holds an incomplete header.
    hold: Vec<u8>,
    /// Bytes written to `out` (runtime's and ours).
    written: u64,
    facts: Option<TraceFacts>,
    writer: Option<(TraceWriter<Vec<u8>>, Vec<u32>, u64)>,
    /// One event's payload, the buffer reused for every event.
    payload: Vec<u8>,
    pending: Vec<(u64, Injected)>,
    /// The timestamp (ticks) of the last event written.
    last_ticks: i64,
    /// Events dropped because the queue was full or the stream was not recognised.
    pub dropped: u64,
    /// Events spliced in.
    pub spliced: u64,
    /// How far the output is a whole trace.
    whole: WholePrefix,
    /// False once the scanner failed on the runtime's bytes (no boundary is known after).
    tracking: bool,
    /// The runtime's end-of-stream marker, held until [`Splicer::into_inner`].
    end_held: Option<Vec<u8>>,
    /// The stacks written since the runtime's last sequence point (stack ids are valid only
    /// until the next one), by their whole frames: their ids, [`FIRST_STACK_ID`] and up.
    region: rustc_hash::FxHashMap<Vec<u64>, u32>,
    /// Samples and waits written without their stack (a region held too many).
    pub(crate) stackless: u64,
}

/// How far a stream written so far is a whole trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WholePrefix {
    /// The format, once the stream header was read.
    pub format: Option<FormatVersion>,
    /// Output offset one past the last whole item (header, block, or the end marker).
    pub end: u64,
    /// True when the end-of-stream marker was written.
    pub ended: bool,
}

/// The most events held while waiting for a block boundary.
const MAX_PENDING: usize = 200_000;

impl<W: Write> Splicer<W> {
    /// A splicer writing to `out`.
    pub fn new(out: W) -> Splicer<W> {
        Splicer {
            out,
            scanner: Scanner::new(),
            active: true,
            hold: Vec::new(),
            written: 0,
            facts: None,
            writer: None,
            payload: Vec::new(),
            pending: Vec::new(),
            last_ticks: 0,
            dropped: 0,
            spliced: 0,
            whole: WholePrefix::default(),
            tracking: true,
            end_held: None,
            region: rustc_hash::FxHashMap::default(),
            stackless: 0,
        }
    }

    /// How far the output is a whole trace: a stream cut before its end marker can be made
    /// whole by cutting it at [`WholePrefix::end`] and appending the format's end of stream.
    pub fn whole(&self) -> WholePrefix {
        self.whole
    }

    /// Bytes written so far (the runtime's and clrspy's).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The Trace object's facts, once read.
    pub fn facts(&self) -> Option<TraceFacts> {
        self.facts
    }

    /// True while clrspy's events can still be spliced in.
    pub(crate) fn is_active(&self) -> bool {
        self.active
    }

    /// Queues an event stamped `monotonic_ns` (CLOCK_MONOTONIC); it is written at the next
    /// block boundary.
    pub fn push(&mut self, monotonic_ns: u64, e: Injected) {
        if !self.active || self.pending.len() >= MAX_PENDING {
            self.dropped += 1;
            return;
        }
        self.pending.push((monotonic_ns, e));
    }

    fn emit(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    /// Writes the held bytes, then `b`.
    fn release(&mut self, b: &[u8]) -> io::Result<()> {
        let held = std::mem::take(&mut self.hold);
        self.emit(&held)?;
        self.emit(b)
    }

    /// Passes runtime bytes through.
    pub fn write_runtime(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if !bytes.is_empty() {
            // Bytes after the end marker (never from a runtime): the marker goes first.
            self.release_end()?;
        }
        while !bytes.is_empty() {
            if !self.active {
                return self.pass_through(bytes);
            }
            let step = match self.scanner.feed(bytes) {
                Ok(step) => step,
                Err(_) => {
                    self.tracking = false;
                    self.give_up()?;
                    continue;
                }
            };
            let (eaten, rest) = bytes.split_at(step.consumed);
            bytes = rest;
            match step.item {
                None if self.scanner.held() > 0 => self.hold.extend_from_slice(eaten),
                None => self.release(eaten)?,
                Some(Item::Header { format, .. }) => {
                    self.release(eaten)?;
                    self.whole.format = Some(format);
                    self.whole.end = self.written;
                    let facts = self.scanner.header().map(|h| TraceFacts {
                        ticks_per_second: h.ticks_per_second,
                        pointer_size: h.pointer_size,
                    });
                    // V4/V5 traces only: NetPerf and V6 pass through.
                    if format != FormatVersion::NetTrace4 {
                        self.give_up()?;
                        continue;
                    }
                    self.facts = facts;
                    self.inject()?;
                }
                Some(Item::Block(b)) => {
                    self.release(eaten)?;
                    self.whole.end = self.written;
                    if b.kind == nettrace::BlockKind::SequencePoint {
                        // Stack ids end here, for every reader: ours are written again.
                        self.region.clear();
                    }
                    self.inject()?;
                }
                Some(Item::End { .. }) => {
                    // The end of the stream: our last events go in before its tag, which is
                    // held until `into_inner` so events queued after the runtime ended the
                    // stream (a trigger on the target's exit) still go in before it.
                    self.inject_now()?;
                    let mut end = std::mem::take(&mut self.hold);
                    end.extend_from_slice(eaten);
                    self.end_held = Some(end);
                    self.whole.ended = true;
                    self.active = false;
                }
                Some(_) => self.release(eaten)?,
            }
        }
        Ok(())
    }

    /// Writes bytes of a stream clrspy does not splice into, still following its blocks
    /// while the scanner can (so a cut NetPerf or V6 stream can be made whole too).
    fn pass_through(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        if !self.tracking || self.whole.ended {
            return self.emit(bytes);
        }
        while !bytes.is_empty() {
            let step = match self.scanner.feed(bytes) {
                Ok(step) => step,
                Err(_) => {
                    self.tracking = false;
                    return self.emit(bytes);
                }
            };
            let (eaten, rest) = bytes.split_at(step.consumed);
            bytes = rest;
            self.emit(eaten)?;
            match step.item {
                Some(Item::End { .. }) => {
                    self.whole.end = self.written;
                    self.whole.ended = true;
                    return self.emit(bytes);
                }
                Some(_) => self.whole.end = self.written,
                None => {}
            }
        }
        Ok(())
    }

    fn give_up(&mut self) -> io::Result<()> {
        self.release(&[])?;
        self.active = false;
        self.dropped += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes queued events now if the stream is between blocks. Call it when the runtime is
    /// quiet, too: an idle stream sits between blocks.
    pub fn inject(&mut self) -> io::Result<()> {
        if !self.active || !self.scanner.at_boundary() {
            return Ok(());
        }
        self.inject_now()
    }

    fn inject_now(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let Some(facts) = self.facts else {
            return Ok(());
        };
        if self.writer.is_none() {
            let opts = WriterOptions {
                format: WriteFormat::V5,
                compressed_headers: true,
                pointer_size: facts.pointer_size,
                ticks_per_second: facts.ticks_per_second,
                block_size: usize::MAX,
                blocks_per_sequence_point: u32::MAX,
                first_metadata_id: FIRST_METADATA_ID,
                ..WriterOptions::default()
            };
            let mut w = TraceWriter::new(Vec::new(), opts)?;
            let ids = definitions()
                .iter()
                .map(|d| w.define(d))
                .collect::<io::Result<Vec<u32>>>()?;
            // The writer's own preamble is not ours to write: drop it, remembering its length
            // (the writer pads relative to its own position).
            let skipped = w.get_mut().len() as u64;
            w.get_mut().clear();
            self.writer = Some((w, ids, skipped));
        }
        let pending = std::mem::take(&mut self.pending);
        let tps = facts.ticks_per_second.max(1) as u128;
        let Some((w, ids, writer_pos)) = self.writer.as_mut() else {
            return Ok(());
        };
        // One capture thread's timestamps never decrease: a kernel sample drained late is
        // stamped no earlier than what was written before it.
        let mut last = self.last_ticks;
        let mut stamp = |ns: u64| {
            let ticks = ((u128::from(ns) * tps / 1_000_000_000) as i64).max(last);
            last = ticks;
            ticks
        };
        // The stacks of this batch new to the region: their ids, the frames other readers are
        // given in the stack block, and the whole stack in a `KernelStack` written first.
        let mut stack_ids = Vec::with_capacity(pending.len());
        let first_new = FIRST_STACK_ID.saturating_add(self.region.len() as u32);
        let mut new_stacks: Vec<(&[u64], &[u64])> = Vec::new();
        for (_, e) in &pending {
            let id = match e {
                Injected::KernelSample { stack, managed, .. }
                | Injected::KernelBlocked { stack, managed, .. }
                | Injected::KernelWait { stack, managed, .. }
                    if !stack.is_empty() =>
                {
                    match self.region.get(stack) {
                        Some(&id) => id,
                        None if self.region.len() < MAX_REGION_STACKS => {
                            let id = FIRST_STACK_ID.saturating_add(self.region.len() as u32);
                            self.region.insert(stack.clone(), id);
                            new_stacks.push((stack, managed));
                            id
                        }
                        None => {
                            self.stackless += 1;
                            0
                        }
                    }
                }
                _ => 0,
            };
            stack_ids.push(id);
        }
        if !new_stacks.is_empty() {
            let projections: Vec<&[u64]> = new_stacks.iter().map(|(_, m)| *m).collect();
            w.stacks_at(first_new, &projections);
            let at = stamp(pending.first().map_or(0, |p| p.0));
            let kernel_stack = ids[clr_events::clrspy::EVENTS
                .iter()
                .position(|d| d.id == clr_events::clrspy::ids::KERNEL_STACK)
                .unwrap_or(0)];
            for (k, (whole, _)) in new_stacks.iter().enumerate() {
                self.payload.clear();
                clr_events::clrspy::KernelStack::encode(
                    first_new + k as u32,
                    whole,
                    &mut self.payload,
                );
                w.write(&EventRecord {
                    metadata_id: kernel_stack,
                    thread_id: NO_THREAD,
                    capture_thread_id: CAPTURE_THREAD,
                    timestamp: at,
                    payload: &self.payload,
                    ..EventRecord::default()
                })?;
            }
        }
        let sample_id = ids.last().copied().unwrap_or(0);
        for ((ns, e), &stack_id) in pending.iter().zip(&stack_ids) {
            let ticks = stamp(*ns);
            // A sample is its thread's, its stack the event's; a wait is on no thread (other
            // tools' thread-time views would count it as a sample), its stack id in its
            // payload.
            let (metadata_id, thread_id, event_stack) = match e {
                // Native code alone (the runtime's own threads, the JIT, the GC): what the
                // runtime's sampler never sees, kept for clrspy in its own event.
                Injected::KernelSample { tid, managed, .. } if managed.is_empty() => {
                    self.payload.clear();
                    clr_events::clrspy::KernelSample::encode_by_id(
                        *tid,
                        stack_id,
                        &mut self.payload,
                    );
                    (ids[e.id()], NO_THREAD, 0)
                }
                Injected::KernelSample { tid, .. } | Injected::KernelBlocked { tid, .. } => {
                    e.payload_into(&mut self.payload);
                    (sample_id, u64::from(*tid), stack_id)
                }
                Injected::KernelWait {
                    tid,
                    duration_ns,
                    preempted,
                    ..
                } => {
                    self.payload.clear();
                    clr_events::clrspy::KernelWait::encode(
                        *tid,
                        &[],
                        *duration_ns,
                        *preempted,
                        stack_id,
                        &mut self.payload,
                    );
                    (ids[e.id()], NO_THREAD, 0)
                }
                _ => {
                    e.payload_into(&mut self.payload);
                    (ids[e.id()], NO_THREAD, 0)
                }
            };
            w.write_with_stack_id(
                &EventRecord {
                    metadata_id,
                    thread_id,
                    capture_thread_id: CAPTURE_THREAD,
                    timestamp: ticks,
                    payload: &self.payload,
                    ..EventRecord::default()
                },
                event_stack,
            )?;
        }
        self.last_ticks = last;
        w.flush_events()?;
        let mut bytes = std::mem::take(w.get_mut());
        let start = *writer_pos;
        *writer_pos += bytes.len() as u64;
        let objects = realign(&bytes, start, self.written)
            .ok_or_else(|| io::Error::other("internal: unexpected writer output"))?;
        // The writer's buffer goes back to it, with its capacity.
        bytes.clear();
        *w.get_mut() = bytes;
        self.emit(&objects)?;
        // Spliced only between blocks: the output is still whole up to here.
        self.whole.end = self.written;
        self.spliced += pending.len() as u64;
        Ok(())
    }

    /// Writes the held end marker after the events queued since it came; none after it.
    fn release_end(&mut self) -> io::Result<()> {
        if let Some(end) = self.end_held.take() {
            self.inject_now()?;
            self.emit(&end)?;
            self.whole.end = self.written;
        }
        Ok(())
    }

    /// Queues an event to go in last, before the runtime's end marker, when the stream has
    /// ended (the marker is held until [`Splicer::into_inner`]); as [`Splicer::push`] before
    /// that. For what is learnt only when the stream ends (the target exited).
    pub fn push_at_end(&mut self, monotonic_ns: u64, e: Injected) {
        if self.end_held.is_some() && self.pending.len() < MAX_PENDING {
            self.pending.push((monotonic_ns, e));
        } else {
            self.push(monotonic_ns, e);
        }
    }

    /// Writes what is held: the events queued at the end with the runtime's end marker after
    /// them, or runtime bytes of a stream cut inside a block header. Nothing can be spliced
    /// after. [`Splicer::into_inner`] does it too; call it first to read the final
    /// [`Splicer::spliced`] count.
    pub fn end(&mut self) -> io::Result<()> {
        self.release_end()?;
        self.active = false;
        self.release(&[])
    }

    /// Writes what is held ([`Splicer::end`]), flushes and returns the output.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.end()?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// The output, to read.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// The output.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }
}

/// Rewrites the writer's block objects (written at writer position `writer_pos`) for stream
/// position `stream_pos`: padding recomputed, and the whole grown to a multiple of 4 bytes by
/// enlarging the header of its event and metadata blocks (a stack block has no header to
/// grow, and no trailing bytes may follow its stacks: readers would take them for one more;
/// the event block after it takes up the slack).
fn realign(bytes: &[u8], writer_pos: u64, stream_pos: u64) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut scanner = Scanner::between_blocks(FormatVersion::NetTrace4, writer_pos);
    let mut input = bytes;
    while !input.is_empty() {
        let step = scanner.feed(input).ok()?;
        input = &input[step.consumed..];
        let Some(Item::Block(b)) = step.item else {
            continue;
        };
        let at = |abs: u64| usize::try_from(abs - writer_pos).ok();
        // The object up to its size field: begin tag and type object.
        let head = bytes.get(at(b.offset)?..at(b.payload_offset - u64::from(b.padding) - 4)?)?;
        let data = bytes.get(at(b.payload_offset)?..at(b.payload_offset + b.payload_len)?)?;
        let size = data.len();
        let obj_start = stream_pos + out.len() as u64;
        let spad = ((4 - (obj_start + head.len() as u64 + 4) % 4) % 4) as usize;
        let base_len = head.len() + 4 + spad + size + 1;
        let growable = matches!(b.kind, BlockKind::Event | BlockKind::Metadata);
        let extra = if growable {
            (4 - (out.len() + base_len) % 4) % 4
        } else {
            0
        };
        out.extend_from_slice(head);
        out.extend_from_slice(&((size + extra) as u32).to_le_bytes());
        out.resize(out.len() + spad, 0);
        if growable {
            // The block's header size (u16 at its start) grows by `extra` zero bytes.
            let header_size = u16::from_le_bytes(data.get(..2)?.try_into().ok()?) as usize;
            out.extend_from_slice(&((header_size + extra) as u16).to_le_bytes());
            out.extend_from_slice(data.get(2..header_size)?);
            out.resize(out.len() + extra, 0);
            out.extend_from_slice(data.get(header_size..)?);
        } else {
            out.extend_from_slice(data);
        }
        out.push(6);
    }
    (scanner.at_boundary() && out.len() % 4 == 0).then_some(out)
}
