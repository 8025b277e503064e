//! What a repair (or a NetPerf upgrade) kept, dropped and wrote: [`Repair`], shared by the
//! block-copying repair and the NetPerf to NetTrace upgrade.

use crate::header::FormatVersion;
use crate::Error;

/// What [`crate::repair`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Repair {
    /// The input's format, once its header was read.
    pub format: Option<FormatVersion>,
    /// The output's format: the input's, or NetTrace V4/V5 for a NetPerf input.
    pub output_format: Option<FormatVersion>,
    /// Bytes read from the input.
    pub bytes_in: u64,
    /// Bytes of the input kept: copied unchanged, or (NetPerf) up to the end of the last event
    /// converted. Everything before them was whole.
    pub bytes_kept: u64,
    /// Bytes of the output (kept bytes, a re-framed cut block and the end of stream clrspy
    /// wrote, if any; or the whole converted trace).
    pub bytes_out: u64,
    /// Whole blocks kept (not counting the stream header); blocks read for a conversion.
    pub blocks: u64,
    /// True when the input already was a whole trace: the output is a copy (or, for NetPerf,
    /// a conversion of every event).
    pub was_whole: bool,
    /// Where and why the input stops being a trace (None when it was whole, or only cut short
    /// at its end).
    pub damage: Option<Error>,
    /// Offset of the first byte dropped (`bytes_kept`), when something was.
    pub cut_at: Option<u64>,
    /// Whole events of a cut last event block, kept in a block re-framed around them (their
    /// bytes unchanged) after the copied blocks.
    pub salvaged_events: u64,
    /// True when the input was NetPerf and the output is NetTrace: every event re-encoded with
    /// [`crate::TraceWriter`].
    pub converted: bool,
    /// Events written by a conversion (0 when the blocks were copied).
    pub events_converted: u64,
}

impl Repair {
    pub(crate) fn new() -> Repair {
        Repair {
            format: None,
            output_format: None,
            bytes_in: 0,
            bytes_kept: 0,
            bytes_out: 0,
            blocks: 0,
            was_whole: false,
            damage: None,
            cut_at: None,
            salvaged_events: 0,
            converted: false,
            events_converted: 0,
        }
    }
}
