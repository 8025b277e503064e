//! NetPerf (.NET Core 2.x) to NetTrace: every whole event of a NetPerf stream read with the
//! reader and written again with [`TraceWriter`] as NetTrace V5, for tools that no longer read
//! NetPerf. The trace header's facts, each metadata row, and each event's thread, timestamp,
//! activity ids, stack and payload are kept; a cut or damaged input is converted up to its
//! last whole event.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use crate::header::{FormatVersion, TraceHeader};
use crate::reader::StreamReader;
use crate::repaired::Repair;
use crate::writer::{EventRecord, TraceWriter, WriteFormat, WriterOptions};

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

/// What the converted trace's Trace block says: the NetPerf header's facts.
fn writer_options(h: &TraceHeader) -> WriterOptions {
    WriterOptions {
        format: WriteFormat::V5,
        sync_time_utc: h.sync_time_utc,
        sync_time_ticks: h.sync_time_ticks,
        ticks_per_second: h.ticks_per_second,
        pointer_size: h.pointer_size,
        process_id: h
            .process_id
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0),
        cpu_count: h.cpu_count.unwrap_or(0),
        sampling_interval_ns: h.sampling_interval_ns.unwrap_or(0),
        ..WriterOptions::default()
    }
}

/// Converts the NetPerf stream `input` to NetTrace V5 in `out` (see [`crate::repair`]).
pub(crate) fn netperf_to_nettrace(input: impl Read, out: &mut File) -> io::Result<Repair> {
    let mut counting = Counting { inner: input, n: 0 };
    let mut r = Repair::new();
    let mut reader = match StreamReader::from_read(&mut counting) {
        Ok(rd) => rd,
        Err(e) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("not a trace: {e}"),
            ))
        }
    };
    r.format = Some(FormatVersion::NetPerf3);
    r.output_format = Some(FormatVersion::NetTrace4);
    r.converted = true;
    let header_end = reader.stats().bytes_read;
    out.set_len(0)?;
    out.seek(SeekFrom::Start(0))?;
    let mut w = TraceWriter::new(
        BufWriter::with_capacity(1 << 20, &mut *out),
        writer_options(reader.header()),
    )?;
    // Metadata rows by the reader's key: defined in the output before their first event.
    let mut ids: HashMap<u64, u32> = HashMap::new();
    let mut ips: Vec<u64> = Vec::new();
    let mut last_end = header_end;
    let mut block_thread: Option<u64> = None;
    loop {
        let ev = match reader.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => break,
            Err(e) => {
                if let crate::ErrorKind::Io(_) = e.kind {
                    return Err(io::Error::other(e));
                }
                if !e.is_truncation() {
                    r.damage = Some(e);
                }
                break;
            }
        };
        let id = match ids.get(&ev.metadata_key()) {
            Some(&id) => id,
            None => {
                let id = w.define(ev.metadata)?;
                ids.insert(ev.metadata_key(), id);
                id
            }
        };
        // One capture thread per event block, as the runtime writes them: TraceEvent reads
        // every (unsorted) event of a block as the first event's thread's, and would count
        // the other threads' sequence numbers as dropped events.
        let capture = ev.capture_thread_id.unwrap_or(ev.thread_id);
        if block_thread.is_some_and(|t| t != capture) {
            w.flush_events()?;
        }
        block_thread = Some(capture);
        ips.clear();
        ips.extend(ev.stack.ips());
        w.write(&EventRecord {
            metadata_id: id,
            thread_id: ev.thread_id,
            // NetPerf names no capturing thread or processor: the event's own thread, CPU 0.
            capture_thread_id: capture,
            processor: ev.processor.unwrap_or(0),
            timestamp: ev.timestamp,
            activity_id: ev.activity_id,
            related_activity_id: ev.related_activity_id,
            stack: &ips,
            payload: ev.payload,
            is_sorted: ev.is_sorted,
        })?;
        r.events_converted += 1;
        if let Some(end) = reader.event_end() {
            last_end = end;
        }
    }
    let stats = reader.stats().clone();
    drop(reader);
    let mut sink = w.finish()?;
    sink.flush()?;
    drop(sink);
    r.bytes_out = out.stream_position()?;
    out.set_len(r.bytes_out)?;
    out.flush()?;
    // Count what the reader left unread.
    io::copy(&mut counting, &mut io::sink())?;
    r.bytes_in = counting.n;
    r.blocks = stats.blocks;
    r.was_whole = stats.ended_cleanly && r.damage.is_none() && stats.bytes_read == r.bytes_in;
    r.bytes_kept = if r.was_whole {
        r.bytes_in
    } else {
        last_end.max(stats.bytes_read)
    };
    if r.bytes_kept < r.bytes_in {
        r.cut_at = Some(r.bytes_kept);
    }
    Ok(r)
}
