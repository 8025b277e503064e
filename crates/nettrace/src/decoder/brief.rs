//! The lean counting pass ([`crate::Reader::for_each_brief`]): what it reads of each event
//! ([`EventBrief`]) and its loop over one event block, with the sink inlined.

use super::*;

/// What a [`crate::Reader::for_each_brief`] sink answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BriefAnswer {
    /// The event is handled; go on.
    Done,
    /// Build the whole event and call the sink again with it (answered for a brief alone).
    NeedEvent,
    /// Stop reading.
    Stop,
}

/// The few facts of one event that counting passes need, read from its header without
/// building the [`Event`] (see [`crate::Reader::for_each_brief`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventBrief {
    /// The metadata id the event refers to (ids may be redefined in V6; see `metadata_key`).
    pub metadata_id: u32,
    /// As [`Event::metadata_key`]: 0 when the id was never defined.
    pub metadata_key: u64,
    /// As [`Event::version`] (label list override, else the metadata's).
    pub version: u8,
    /// True when the event's stack has at least one frame (as `!Event::stack.is_empty()`).
    pub has_stack: bool,
    /// As [`Event::timestamp`].
    pub timestamp: i64,
    /// As [`Event::offset`].
    pub offset: u64,
}

impl Decoder {
    /// What the lean pass ([`crate::Reader::for_each_brief`]) needs of a decoded header, and
    /// whether its stack id missed the stack table. Counts nothing: see [`Decoder::count_brief`].
    #[inline(always)]
    pub(crate) fn brief(&self, raw: &RawEvent) -> (EventBrief, bool) {
        // A stack has a frame when it holds at least one pointer (`len / ps > 0`).
        let ps = usize::from(self.header.pointer_size.max(1));
        let (has_stack, stack_missing) = match raw.inline_stack {
            Some((_, l)) => (l >= ps, false),
            None if raw.h.stack_id != 0 => match self.stacks.len(raw.h.stack_id) {
                Some(l) => (l >= ps, false),
                None => (false, true),
            },
            None => (false, false),
        };
        let id = raw.h.metadata_id;
        let mut version = self
            .metadata(id)
            .map_or(self.unknown_metadata.version, |m| m.version);
        if raw.h.label_list != 0 {
            if let Some(v) = self.labels.get(&raw.h.label_list).and_then(|l| l.version) {
                version = v;
            }
        }
        let brief = EventBrief {
            metadata_id: id,
            metadata_key: self.metadata_key(id),
            version,
            has_stack,
            timestamp: raw.h.timestamp,
            offset: raw.offset,
        };
        (brief, stack_missing)
    }

    /// Counts the table misses of an event the lean pass did not build (what
    /// [`Decoder::make_event`] counts for one it builds).
    #[inline(always)]
    pub(crate) fn count_brief(&mut self, brief: &EventBrief, stack_missing: bool) {
        if stack_missing {
            self.stats.missing_stacks += 1;
        }
        if brief.metadata_key == 0 {
            self.stats.events_without_metadata += 1;
        }
    }

    /// Runs the lean pass over the rest of an event block: each event's brief goes to `sink`,
    /// and the event itself when the sink asks for it. `Ok(true)` when the sink said stop,
    /// `Ok(false)` at the block's end.
    #[inline(always)]
    pub(crate) fn brief_block<F>(
        &mut self,
        data: &[u8],
        offset: u64,
        it: &mut BlockIter,
        sink: &mut F,
    ) -> Result<bool>
    where
        F: FnMut(&EventBrief, Option<&Event<'_>>) -> BriefAnswer,
    {
        while self.next_in_block(data, offset, it)? {
            let (brief, stack_missing) = self.brief(&it.cur);
            match sink(&brief, None) {
                BriefAnswer::Done => self.count_brief(&brief, stack_missing),
                BriefAnswer::Stop => {
                    self.count_brief(&brief, stack_missing);
                    return Ok(true);
                }
                BriefAnswer::NeedEvent => {
                    let ev = self.make_event(data, &it.cur);
                    if sink(&brief, Some(&ev)) == BriefAnswer::Stop {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }
}
