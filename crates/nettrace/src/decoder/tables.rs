//! The blocks that fill the decoder's tables: metadata, stacks, sequence points, V6 thread
//! rows and label lists.

use super::*;

impl Decoder {
    pub(super) fn metadata_block(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let kind = BlockKind::Metadata;
        if self.is_v6() {
            let mut c = Cursor::new(data, offset);
            let hs = c.u16()? as usize;
            c.skip(hs)?;
            while !c.is_empty() {
                let size = c.u16()? as usize;
                let at = c.offset();
                let row = c.bytes(size)?;
                let m = metadata::parse_v6_row(row, at)?;
                self.add_metadata(m);
            }
            return Ok(());
        }
        // V4/V5: metadata rows are encoded as event blobs.
        let (compressed, hs) = Self::block_header(data, offset, kind)?;
        let mut it = BlockIter {
            encoding: if compressed {
                EventEncoding::V5Compressed
            } else {
                EventEncoding::V5Plain
            },
            pos: hs,
            cur: RawEvent::default(),
        };
        while self.decode_header(data, offset, &mut it)? {
            let raw = &it.cur;
            let p = &data[raw.payload_start..raw.payload_start + raw.h.payload_size as usize];
            let m = metadata::parse_v5(p, offset + raw.payload_start as u64)?;
            self.add_metadata(m);
        }
        Ok(())
    }

    pub(super) fn stack_block(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let mut c = Cursor::new(data, offset);
        let first = c.u32()?;
        let at = c.offset();
        let count = c.u32()?;
        if count as usize > c.remaining() / 4 {
            return Err(Error::at(
                at,
                BlockKind::Stack,
                ErrorKind::CountTooLarge {
                    what: "stacks",
                    count: count.into(),
                    room: c.remaining() as u64,
                },
            ));
        }
        for i in 0..count {
            let at = c.offset();
            let size = c.u32()?;
            if size > MAX_STACK_BYTES {
                return Err(Error::new(
                    at,
                    Some(BlockKind::Stack),
                    ErrorKind::LimitExceeded {
                        what: "stack size",
                        value: size.into(),
                        limit: MAX_STACK_BYTES.into(),
                    },
                ));
            }
            let bytes = c.bytes(size as usize)?;
            self.stacks.insert(first.wrapping_add(i), bytes);
            self.stats.stacks += 1;
        }
        Ok(())
    }

    fn note_sequence(&mut self, thread: u64, seq: u32) {
        // Called at sequence points and thread removal: a higher number than seen means drops.
        self.flush_seq_cache();
        let last = self.last_seq.entry(thread).or_insert(0);
        if seq > *last {
            self.stats.dropped_events += u64::from(seq - *last);
            if *last == 0 || self.at_start {
                self.stats.dropped_at_start += u64::from(seq - *last);
            }
            *last = seq;
        }
    }

    pub(super) fn sequence_point(&mut self, data: &[u8], offset: u64) -> Result<()> {
        self.stats.sequence_points += 1;
        let mut c = Cursor::new(data, offset);
        let _timestamp = c.i64()?;
        if self.is_v6() {
            let flags = c.u32()?;
            let count = c.u32()?;
            for _ in 0..count {
                let idx = c.varu64()?;
                let seq = c.varu32()?;
                self.note_sequence(idx, seq);
            }
            if flags & 1 != 0 {
                self.threads.clear();
                self.thread_cache = None;
            }
            if flags & 2 != 0 {
                self.dense_metadata.clear();
                self.sparse_metadata.clear();
                self.dense_keys.clear();
                self.sparse_keys.clear();
            }
        } else {
            let at = c.offset();
            let count = c.u32()?;
            if count as usize > c.remaining() / 12 {
                return Err(Error::at(
                    at,
                    BlockKind::SequencePoint,
                    ErrorKind::CountTooLarge {
                        what: "threads",
                        count: count.into(),
                        room: c.remaining() as u64,
                    },
                ));
            }
            for _ in 0..count {
                let tid = c.u64()?;
                let seq = c.u32()?;
                self.note_sequence(tid, seq);
            }
        }
        self.at_start = false;
        self.stacks.clear();
        self.labels.clear();
        Ok(())
    }

    pub(super) fn thread_block(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let mut c = Cursor::new(data, offset);
        while !c.is_empty() {
            let size = c.u16()? as usize;
            let at = c.offset();
            let row = c.bytes(size)?;
            let mut r = Cursor::new(row, at);
            let index = r.varu64()?;
            let mut info = ThreadInfo::default();
            while !r.is_empty() {
                let at = r.offset();
                match r.u8()? {
                    1 => info.name = Some(r.utf8_varlen()?),
                    2 => info.process_id = Some(r.varu64()?),
                    3 => info.thread_id = Some(r.varu64()?),
                    4 => {
                        let k = r.utf8_varlen()?;
                        let v = r.utf8_varlen()?;
                        info.key_values.push((k, v));
                    }
                    k => {
                        return Err(Error::at(
                            at,
                            BlockKind::Thread,
                            ErrorKind::UnknownCode {
                                what: "thread info kind",
                                found: k.into(),
                            },
                        ))
                    }
                }
            }
            self.threads.insert(index, info);
        }
        self.thread_cache = None;
        Ok(())
    }

    pub(super) fn remove_thread_block(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let mut c = Cursor::new(data, offset);
        while !c.is_empty() {
            let idx = c.varu64()?;
            let seq = c.varu32()?;
            self.note_sequence(idx, seq);
            self.last_seq.remove(&idx);
            self.threads.remove(&idx);
        }
        self.thread_cache = None;
        Ok(())
    }

    pub(super) fn label_list_block(&mut self, data: &[u8], offset: u64) -> Result<()> {
        let b = BlockKind::LabelList;
        let mut c = Cursor::new(data, offset);
        let first = c.u32()?;
        let at = c.offset();
        let count = c.u32()?;
        if count as usize > c.remaining() {
            return Err(Error::at(
                at,
                b,
                ErrorKind::CountTooLarge {
                    what: "label lists",
                    count: count.into(),
                    room: c.remaining() as u64,
                },
            ));
        }
        for i in 0..count {
            let mut list = LabelList::default();
            loop {
                let at = c.offset();
                let kind = c.u8()?;
                match kind & 0x7f {
                    1 => list.activity_id = Some(c.guid()?),
                    2 => list.related_activity_id = Some(c.guid()?),
                    3 => list.trace_id = Some(c.array::<16>()?),
                    4 => list.span_id = Some(c.u64()?),
                    5 => {
                        let k = c.utf8_varlen()?;
                        let v = c.utf8_varlen()?;
                        list.strings.push((k, v));
                    }
                    6 => {
                        let k = c.utf8_varlen()?;
                        let v = c.vari64()?;
                        list.integers.push((k, v));
                    }
                    7 => list.opcode = Some(c.u8()?),
                    8 => list.keywords = Some(c.u64()?),
                    9 => list.level = Some(c.u8()?),
                    10 => list.version = Some(c.u8()?),
                    k => {
                        return Err(Error::at(
                            at,
                            b,
                            ErrorKind::UnknownCode {
                                what: "label kind",
                                found: k.into(),
                            },
                        ))
                    }
                }
                if kind & 0x80 != 0 {
                    break;
                }
            }
            self.labels.insert(first.wrapping_add(i), list);
        }
        Ok(())
    }
}
