//! The inventory of a trace: how many events of each (provider, id, version) it holds, under
//! the names users know, with the header and the reader's statistics (whole or cut, lost
//! events, stacks). What `clrspy info` shows; one streaming pass, memory by distinct events.

use std::borrow::Cow;
use std::collections::BTreeMap;

use nettrace::{BriefAnswer, ByteSource, Event, EventBrief, Reader, TraceHeader, TraceStats};
use rustc_hash::FxHashMap;

/// The display name of an event: PerfView's name for the runtime's own events ("GC/Start"),
/// the trace's own name for EventSource events, `EventID(n)` otherwise.
pub fn event_name<'a>(ev: &Event<'a>) -> Cow<'a, str> {
    if let Some(n) = clr_events::event_name(ev.provider(), ev.event_id(), ev.version()) {
        return Cow::Borrowed(n);
    }
    let m = ev.metadata_name();
    if !m.is_empty() {
        return Cow::Borrowed(m);
    }
    Cow::Owned(format!("EventID({})", ev.event_id()))
}

/// Events of one (provider, id, version).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EventCount {
    /// Provider name.
    pub provider: String,
    /// Event id.
    pub event_id: u32,
    /// Event version.
    pub version: u8,
    /// Display name ([`event_name`]).
    pub name: String,
    /// Events.
    pub count: u64,
}

/// What a trace holds.
#[derive(Clone, Debug)]
pub struct Inventory {
    /// The trace header.
    pub header: TraceHeader,
    /// The reader's statistics after the pass (bytes read, whole or cut, lost events, ...).
    pub stats: TraceStats,
    /// Counts per (provider, id, version), sorted by those.
    pub per_event: Vec<EventCount>,
    /// Events that carry a stack.
    pub events_with_stack: u64,
    /// Why reading stopped before the end (damage), when it did.
    pub error: Option<String>,
    /// The stop trigger that ended the recording (clrspy's `Trigger` event), if one did.
    pub trigger: Option<TriggerNote>,
    /// What the ring buffer kept and dropped, for a trace a ring wrote (clrspy's `Ring`
    /// event).
    pub ring: Option<clr_events::clrspy::Ring>,
    /// The traced process's command line, from EventPipe's `ProcessInfo` event (.NET 5+), so
    /// traces of one program's several processes (a build's compilers) can be told apart.
    pub command_line: Option<String>,
    /// CPU samples the kernel took (`clrspy record`'s kernel sampler), as its last count says
    /// (clrspy's `KernelSampler`; else the kernel samples counted): those of managed code are
    /// written as the runtime's `Thread/Sample` (in [`Inventory::per_event`] under the
    /// SampleProfiler provider, with the marks of threads that blocked), the rest (and every
    /// one in traces before) as clrspy's `KernelSample`.
    pub kernel_samples: u64,
    /// The kernel sampler's last counts (rate, samples, lost records, threads), when the trace
    /// has them.
    pub kernel_sampler: Option<clr_events::clrspy::KernelSampler>,
    /// The CPU the target's threads used between their first and last of clrspy's readings,
    /// ns (0 without readings).
    pub thread_cpu_ns: u64,
    /// CPU samples the runtime's own sampler took (the SampleProfiler provider's
    /// `Thread/Sample` the runtime wrote).
    pub runtime_samples: u64,
}

/// A stop trigger that fired, as `clrspy record` stored it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TriggerNote {
    /// The trigger as written (`exception=System.Net.*`).
    pub trigger: String,
    /// Why it fired.
    pub reason: String,
    /// The firing event's provider and name (`Provider/Name`; empty when none).
    pub event: String,
    /// The firing event's time, ns since the trace start (None when no event fired it).
    pub event_ns: Option<i64>,
    /// How long recording went on after it, ms.
    pub after_ms: u32,
}

impl TriggerNote {
    /// Reads clrspy's `Trigger` event (None for any other event).
    pub fn read(ev: &Event<'_>) -> Option<TriggerNote> {
        use clr_events::clrspy::{ids, Trigger, PROVIDER};
        if ev.provider() != PROVIDER || ev.event_id() != ids::TRIGGER {
            return None;
        }
        let t = Trigger::parse(ev.payload).ok()?;
        let (provider, event) = (t.provider.to_string(), t.event.to_string());
        Some(TriggerNote {
            trigger: t.trigger.to_string(),
            reason: t.reason.to_string(),
            event: if event.is_empty() {
                String::new()
            } else {
                format!("{provider}/{event}")
            },
            event_ns: (t.event_timestamp > 0).then(|| {
                ev.clock
                    .ns_since_start(i64::try_from(t.event_timestamp).unwrap_or(i64::MAX))
            }),
            after_ms: t.after_ms,
        })
    }
}

/// What clrspy wrote about the recording itself.
#[derive(Default)]
struct Notes {
    trigger: Option<TriggerNote>,
    ring: Option<clr_events::clrspy::Ring>,
    command_line: Option<String>,
    kernel_sampler: Option<clr_events::clrspy::KernelSampler>,
    /// Each thread's first and last CPU reading, ns.
    thread_cpu: FxHashMap<u32, (u64, u64)>,
    /// The trace's pointer size, for decoding `ProcessInfo`.
    pointer_size: u8,
}

/// Reads the command line of EventPipe's `ProcessInfo` event (None for any other event).
fn command_line(ev: &Event<'_>, pointer_size: u8) -> Option<String> {
    if ev.provider() != clr_events::EVENTPIPE_PROVIDER || ev.event_id() != 1 {
        return None;
    }
    let d = clr_events::decode(ev.provider(), 1, ev.version(), ev.payload, pointer_size)?;
    d.str("CommandLine").map(str::to_string)
}

/// Reads clrspy's `Ring` event (None for any other event).
pub(crate) fn ring_note(ev: &Event<'_>) -> Option<clr_events::clrspy::Ring> {
    use clr_events::clrspy::{ids, Ring, PROVIDER};
    if ev.provider() != PROVIDER || ev.event_id() != ids::RING {
        return None;
    }
    Ring::parse(ev.payload).ok()
}

/// [`Inventory::run`] reports progress once per this many events.
pub(crate) const PROGRESS_EVERY: u32 = 256;

/// Metadata ids below this are looked up in a vector by id, larger ones in the map.
const DENSE_IDS: u32 = 1 << 16;

/// Counts per metadata row (key and version): one vector index per event in the usual case.
#[derive(Default)]
struct Counts {
    /// (provider, event id, display name, events, version), in first-seen order.
    rows: Vec<(String, u32, String, u64, u8)>,
    /// The rows of kernel samples clrspy wrote as the runtime's `ThreadSample`.
    kernel_rows: Vec<usize>,
    /// The rows of the runtime's own samples.
    runtime_rows: Vec<usize>,
    /// The row of clrspy's `KernelSampler` counts, whose events are read (the last one says
    /// what the sampler took).
    sampler_row: Option<usize>,
    /// The row of clrspy's `ThreadCpu` readings, whose events are read (each thread's CPU
    /// over the recording).
    thread_cpu_row: Option<usize>,
    /// By metadata id: the row's key, version and slot in `rows` (key 0: none yet).
    by_id: Vec<(u64, u8, u32)>,
    /// By (key, version): the slot, for every row.
    by_key: FxHashMap<(u64, u8), u32>,
}

impl Counts {
    /// The slot of the event's row when its metadata id was seen with the same key and
    /// version last time (nearly every event).
    #[inline(always)]
    fn cached_slot(&self, b: &EventBrief) -> Option<usize> {
        match self.by_id.get(b.metadata_id as usize) {
            Some(&(k, v, slot)) if k == b.metadata_key && v == b.version && k != 0 => {
                Some(slot as usize)
            }
            _ => None,
        }
    }

    /// The slot of the event's row when [`Counts::cached_slot`] missed: from the map, or a new
    /// row built from `ev`; None when the row is new and `ev` not given yet.
    #[cold]
    #[inline(never)]
    fn slot_slow(
        &mut self,
        b: &EventBrief,
        ev: Option<&Event<'_>>,
        notes: &mut Notes,
    ) -> Option<usize> {
        if let Some(&slot) = self.by_key.get(&(b.metadata_key, b.version)) {
            self.remember(b, slot);
            return Some(slot as usize);
        }
        ev.map(|ev| self.first_of_row(b, ev, notes))
    }

    fn remember(&mut self, b: &EventBrief, slot: u32) {
        if b.metadata_key == 0 || b.metadata_id >= DENSE_IDS {
            return;
        }
        let i = b.metadata_id as usize;
        if i >= self.by_id.len() {
            self.by_id.resize(i + 1, (0, 0, 0));
        }
        self.by_id[i] = (b.metadata_key, b.version, slot);
    }

    /// The first event of a row: a new row, and clrspy's `Trigger` or `Ring` or EventPipe's
    /// `ProcessInfo` read when it is one (a trace holds one of each at most).
    #[cold]
    fn first_of_row(&mut self, b: &EventBrief, ev: &Event<'_>, notes: &mut Notes) -> usize {
        if notes.trigger.is_none() {
            notes.trigger = TriggerNote::read(ev);
        }
        if notes.ring.is_none() {
            notes.ring = ring_note(ev);
        }
        if notes.command_line.is_none() {
            notes.command_line = command_line(ev, notes.pointer_size);
        }
        self.add_row(b, ev)
    }

    /// A new row for the event's (key, version); its slot.
    fn add_row(&mut self, b: &EventBrief, ev: &Event<'_>) -> usize {
        let slot = u32::try_from(self.rows.len()).unwrap_or(u32::MAX);
        let kernel = ev.metadata.metadata_id >= clr_events::clrspy::FIRST_METADATA_ID
            && ev.provider() == clr_events::SAMPLE_PROFILER_PROVIDER;
        let old_kernel = ev.provider() == clr_events::clrspy::PROVIDER
            && ev.event_id() == clr_events::clrspy::ids::KERNEL_SAMPLE;
        if kernel || old_kernel {
            self.kernel_rows.push(self.rows.len());
        } else if ev.provider() == clr_events::SAMPLE_PROFILER_PROVIDER {
            self.runtime_rows.push(self.rows.len());
        }
        if ev.provider() == clr_events::clrspy::PROVIDER
            && ev.event_id() == clr_events::clrspy::ids::KERNEL_SAMPLER
        {
            self.sampler_row = Some(self.rows.len());
        }
        if ev.provider() == clr_events::clrspy::PROVIDER
            && ev.event_id() == clr_events::clrspy::ids::THREAD_CPU
        {
            self.thread_cpu_row = Some(self.rows.len());
        }
        self.rows.push((
            ev.provider().to_string(),
            ev.event_id(),
            event_name(ev).into_owned(),
            0,
            b.version,
        ));
        self.by_key.insert((b.metadata_key, b.version), slot);
        self.remember(b, slot);
        self.rows.len() - 1
    }
}

/// Calls the progress callback, out of the per-event loop.
#[cold]
#[inline(never)]
fn report_progress(progress: &mut impl FnMut(u64), offset: u64) {
    progress(offset);
}

impl Inventory {
    /// The kernel's samples per second of the target's measured CPU (the rate the sampler
    /// reached; it samples threads on a CPU at its rate), when both are known.
    pub fn kernel_samples_per_cpu_second(&self) -> Option<f64> {
        (self.kernel_samples > 0 && self.thread_cpu_ns >= 100_000_000)
            .then(|| self.kernel_samples as f64 / (self.thread_cpu_ns as f64 / 1e9))
    }

    /// Counts every event of `reader`; `progress` gets the offset of every
    /// `PROGRESS_EVERY`th event.
    ///
    /// Reads event headers only ([`Reader::for_each_brief`]): an event is built only for the
    /// first event of each metadata row (for its names, and clrspy's `Trigger` payload).
    pub fn run<S: ByteSource>(reader: &mut Reader<S>, mut progress: impl FnMut(u64)) -> Inventory {
        let mut counts = Counts::default();
        let mut with_stack = 0u64;
        let mut notes = Notes {
            pointer_size: reader.header().pointer_size,
            ..Notes::default()
        };
        let mut seen = 0u32;
        let result = reader.for_each_brief(|b, ev| {
            let slot = match counts.cached_slot(b) {
                Some(slot) => slot,
                None => match counts.slot_slow(b, ev, &mut notes) {
                    Some(slot) => slot,
                    None => return BriefAnswer::NeedEvent,
                },
            };
            if Some(slot) == counts.sampler_row {
                // Each of the sampler's counts is read: the last one holds its totals.
                match ev {
                    None => return BriefAnswer::NeedEvent,
                    Some(ev) => {
                        if let Ok(k) = clr_events::clrspy::KernelSampler::parse(ev.payload) {
                            notes.kernel_sampler = Some(k);
                        }
                    }
                }
            }
            if Some(slot) == counts.thread_cpu_row {
                match ev {
                    None => return BriefAnswer::NeedEvent,
                    Some(ev) => {
                        if let Ok(r) = clr_events::clrspy::ThreadCpu::parse(ev.payload) {
                            let e = notes.thread_cpu.entry(r.thread_id).or_insert((r.cpu_ns, 0));
                            e.1 = r.cpu_ns.max(e.0);
                        }
                    }
                }
            }
            if let Some(row) = counts.rows.get_mut(slot) {
                row.3 += 1;
            }
            with_stack += u64::from(b.has_stack);
            seen = seen.wrapping_add(1);
            if seen.is_multiple_of(PROGRESS_EVERY) {
                report_progress(&mut progress, b.offset);
            }
            BriefAnswer::Done
        });
        let runtime_samples = counts
            .runtime_rows
            .iter()
            .filter_map(|&r| counts.rows.get(r))
            .map(|r| r.3)
            .sum();
        let kernel_samples = match notes.kernel_sampler {
            Some(k) => k.samples,
            None => counts
                .kernel_rows
                .iter()
                .filter_map(|&r| counts.rows.get(r))
                .map(|r| r.3)
                .sum(),
        };
        // Rows in first-seen order: the first row of a (provider, id, version) names it.
        let mut per_event: BTreeMap<(String, u32, u8), (String, u64)> = BTreeMap::new();
        for (provider, event_id, name, n, version) in counts.rows {
            per_event
                .entry((provider, event_id, version))
                .or_insert_with(|| (name, 0))
                .1 += n;
        }
        Inventory {
            header: reader.header().clone(),
            stats: reader.stats().clone(),
            per_event: per_event
                .into_iter()
                .map(
                    |((provider, event_id, version), (name, count))| EventCount {
                        provider,
                        event_id,
                        version,
                        name,
                        count,
                    },
                )
                .collect(),
            events_with_stack: with_stack,
            error: result.err().map(|e| e.to_string()),
            trigger: notes.trigger,
            ring: notes.ring,
            command_line: notes.command_line,
            kernel_samples,
            kernel_sampler: notes.kernel_sampler,
            thread_cpu_ns: notes.thread_cpu.values().map(|(a, b)| b - a).sum(),
            runtime_samples,
        }
    }

    /// The format version users know: 3 (NetPerf), 4, 5 (NetTrace with V5 metadata), 6.
    pub fn format_version(&self) -> u32 {
        match self.header.format {
            nettrace::FormatVersion::NetTrace4 if self.stats.v5_metadata_tags => 5,
            f => f.number(),
        }
    }

    /// The first event's time, ns since the trace start.
    pub fn first_ns(&self) -> Option<i64> {
        let clock = self.header.clock();
        self.stats.min_timestamp.map(|t| clock.ns_since_start(t))
    }

    /// The last event's time, ns since the trace start.
    pub fn last_ns(&self) -> Option<i64> {
        let clock = self.header.clock();
        self.stats.max_timestamp.map(|t| clock.ns_since_start(t))
    }

    /// The trace start to its last event, ns.
    pub fn duration_ns(&self) -> Option<i64> {
        self.last_ns()
            .map(|l| l.max(0) - self.first_ns().unwrap_or(0).min(0))
    }

    /// Events per provider, by provider name.
    pub fn per_provider(&self) -> Vec<(String, u64)> {
        let mut m: BTreeMap<&str, u64> = BTreeMap::new();
        for e in &self.per_event {
            *m.entry(e.provider.as_str()).or_default() += e.count;
        }
        m.into_iter().map(|(p, n)| (p.to_string(), n)).collect()
    }

    /// Events of `provider` named `name` (PerfView's name).
    pub fn count(&self, provider: &str, name: &str) -> u64 {
        self.per_event
            .iter()
            .filter(|e| e.provider == provider && e.name == name)
            .map(|e| e.count)
            .sum()
    }

    /// True when the trace has the rundown's method events (names of code jitted before the
    /// session started).
    pub fn has_rundown(&self) -> bool {
        self.count(clr_events::RUNDOWN_PROVIDER, "Method/DCStopVerbose") > 0
            || self.count(clr_events::RUNDOWN_PROVIDER, "Method/DCStartVerbose") > 0
    }

    /// Method loads with names (`Method/LoadVerbose`) in the trace.
    pub fn method_loads(&self) -> u64 {
        self.count(clr_events::RUNTIME_PROVIDER, "Method/LoadVerbose")
    }

    /// Events the runtime lost (gaps in sequence numbers). For a ring buffer's trace, not
    /// those at its start (before its first sequence point, or before a thread's first kept
    /// event): the ring dropped them, by design.
    pub fn lost_events(&self) -> u64 {
        match self.ring {
            Some(_) => self
                .stats
                .dropped_events
                .saturating_sub(self.stats.dropped_at_start),
            None => self.stats.dropped_events,
        }
    }

    /// True when the trace ended without its end-of-stream marker.
    pub fn truncated(&self) -> bool {
        !self.stats.ended_cleanly
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrace::{EventRecord, TraceWriter, WriterOptions};

    #[test]
    fn the_trigger_that_stopped_a_recording_is_read_back() {
        use clr_events::clrspy;
        let mut w = TraceWriter::new(Vec::new(), WriterOptions::default()).unwrap();
        let ids: Vec<u32> = clrspy::metadata()
            .iter()
            .map(|m| w.define(m).unwrap())
            .collect();
        let at = clrspy::EVENTS
            .iter()
            .position(|e| e.id == clrspy::ids::TRIGGER)
            .unwrap();
        let mut p = Vec::new();
        clrspy::Trigger::encode(
            ["gen2", "a blocking gen2 GC started", "Rt", "GC/Start"],
            2_000_000,
            5000,
            &mut p,
        );
        w.write(&EventRecord {
            metadata_id: ids[at],
            timestamp: 3_000_000,
            payload: &p,
            ..EventRecord::default()
        })
        .unwrap();
        let bytes = w.finish().unwrap();
        let mut r = nettrace::TraceReader::new(&bytes).unwrap();
        let inv = Inventory::run(&mut r, |_| {});
        let t = inv.trigger.unwrap();
        assert_eq!(t.trigger, "gen2");
        assert_eq!(t.event, "Rt/GC/Start");
        assert_eq!(t.event_ns, Some(2_000_000));
        assert_eq!(t.after_ms, 5000);
    }
}
