//! Test helpers: small traces built with the crate's writer.

use crate::{
    EventMetadata, EventRecord, FieldDesc, FieldType, FormatVersion, Guid, TraceWriter,
    WriteFormat, WriterOptions,
};

/// The four ways the writer can write a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    V5Compressed,
    V5Plain,
    V6Compressed,
    V6Plain,
}

impl Flavor {
    pub(crate) const ALL: [Flavor; 4] = [
        Flavor::V5Compressed,
        Flavor::V5Plain,
        Flavor::V6Compressed,
        Flavor::V6Plain,
    ];

    pub(crate) fn options(self) -> WriterOptions {
        let (format, compressed_headers) = match self {
            Flavor::V5Compressed => (WriteFormat::V5, true),
            Flavor::V5Plain => (WriteFormat::V5, false),
            Flavor::V6Compressed => (WriteFormat::V6, true),
            Flavor::V6Plain => (WriteFormat::V6, false),
        };
        WriterOptions {
            format,
            compressed_headers,
            block_size: 300,
            blocks_per_sequence_point: 2,
            process_id: 4242,
            cpu_count: 3,
            sampling_interval_ns: 1_000_000,
            ticks_per_second: 10_000_000,
            sync_time_ticks: 500,
            ..WriterOptions::default()
        }
    }

    pub(crate) fn format(self) -> FormatVersion {
        match self {
            Flavor::V5Compressed | Flavor::V5Plain => FormatVersion::NetTrace4,
            Flavor::V6Compressed | Flavor::V6Plain => FormatVersion::NetTrace6,
        }
    }
}

/// One event of [`sample_trace`]: (metadata index, thread, timestamp, stack, payload).
pub(crate) type SampleEvent = (usize, u64, i64, Vec<u64>, Vec<u8>);

/// The events of [`sample_trace`].
pub(crate) fn sample_events() -> Vec<SampleEvent> {
    (0..40u64)
        .map(|i| {
            let stack = (0..i % 5).map(|d| 0x7f00_0000 + d * 0x10 + i % 3).collect();
            let payload = (i as u32).to_le_bytes().repeat(1 + (i % 4) as usize);
            (
                (i % 2) as usize,
                10 + i % 3,
                1_000 + i as i64 * 7,
                stack,
                payload,
            )
        })
        .collect()
}

/// A small trace with metadata, stack, event and sequence-point blocks on three threads.
pub(crate) fn sample_trace(flavor: Flavor) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), flavor.options()).unwrap();
    let metas = [
        EventMetadata {
            provider: "Test-Provider".into(),
            event_id: 1,
            event_name: "Count".into(),
            fields: vec![FieldDesc {
                name: "N".into(),
                ty: FieldType::U32,
            }],
            ..EventMetadata::default()
        },
        EventMetadata {
            provider: "Test-Provider".into(),
            event_id: 2,
            event_name: "Blob".into(),
            ..EventMetadata::default()
        },
    ];
    let ids: Vec<u32> = metas.iter().map(|m| w.define(m).unwrap()).collect();
    for (m, thread, ts, stack, payload) in sample_events() {
        w.write(&EventRecord {
            metadata_id: ids[m],
            thread_id: thread,
            capture_thread_id: thread,
            processor: (thread % 2) as u32,
            timestamp: ts,
            activity_id: Guid([thread as u8; 16]),
            stack: &stack,
            payload: &payload,
            ..EventRecord::default()
        })
        .unwrap();
    }
    w.finish().unwrap()
}
