//! Stacks through on-stack-replaced (OSR) code, mended. A method with a loop starts in Tier0
//! code; when the loop runs hot, the runtime jumps from a patchpoint into an optimized OSR
//! version whose frame lies under the Tier0 frame, which stays on the stack. The OSR frame's
//! record (at A) holds the Tier0 frame's saved frame pointer (X: the caller's record) and, as
//! return address, the patchpoint call's return into the Tier0 code (the "pseudo" return). The
//! kernel's frame-pointer walk therefore reads the method twice (the OSR frame, then the
//! pseudo return) and skips the method's caller. The Tier0 frame's own record, between A and
//! X, holds X and the return address into the caller: read from the stack, it replaces the
//! pseudo frame.

use crate::unwind::Unwinder;
use crate::Sample;

/// How much of the stack above a sample's stack pointer is searched for the OSR frame's
/// record.
const OSR_SCAN: usize = 16 * 1024;
/// The largest Tier0 frame crossed to find the caller.
const OSR_TIER0_MAX: u64 = 64 * 1024;

/// Mends `sample` where `osr_pair(frames[i], frames[i + 1])` (OSR code, then the pseudo
/// return into the same method's Tier0 code): the pseudo frame is replaced by the return
/// address into the caller, read from the thread's stack now, else dropped. Returns how many
/// callers were found.
pub(crate) fn repair(
    unwinder: &mut Unwinder,
    sample: &mut Sample,
    osr_pair: impl Fn(u64, u64) -> bool,
) -> usize {
    let mut found = 0;
    let mut i = 0;
    while i + 1 < sample.frames.len() {
        let (ip, pseudo) = (sample.frames[i], sample.frames[i + 1]);
        if !osr_pair(ip, pseudo) {
            i += 1;
            continue;
        }
        let caller = match sample.sp {
            0 => None,
            sp => osr_caller(unwinder, sp, pseudo),
        };
        match caller {
            Some(c) => {
                sample.frames[i + 1] = c;
                found += 1;
            }
            None => {
                sample.frames.remove(i + 1);
            }
        }
        i += 1;
    }
    found
}

/// The return address into the caller of the OSR frame whose record holds `pseudo`, read
/// from the stack at `sp` (the sample's stack pointer) up, now: None when the thread has left
/// that frame since (no record holds `pseudo`), the layout is not found, or what is found is
/// not a code address.
fn osr_caller(unwinder: &mut Unwinder, sp: u64, pseudo: u64) -> Option<u64> {
    let mut buf = Vec::new();
    if !unwinder.read_len(sp, OSR_SCAN, &mut buf) {
        return None;
    }
    // The OSR frame's record: the first slot (8-aligned, past the first) holding `pseudo`.
    let slot = (8..buf.len().saturating_sub(7))
        .step_by(8)
        .find(|&i| word(&buf, i) == Some(pseudo))?;
    let a = sp + slot as u64 - 8;
    let x = word(&buf, slot - 8)?;
    if x <= a + 16 || x - a > OSR_TIER0_MAX {
        return None;
    }
    // The stack up to the caller's record, read further when the first read stopped short.
    let base = if x + 16 <= sp + buf.len() as u64 {
        sp
    } else {
        if !unwinder.read_len(a, (x + 16 - a) as usize, &mut buf) {
            return None;
        }
        a
    };
    // The Tier0 frame's record: the first slot above the OSR record holding X.
    let (from, to) = ((a + 16 - base) as usize, (x - base) as usize);
    let caller = (from..to)
        .step_by(8)
        .find(|&i| word(&buf, i) == Some(x))
        .and_then(|i| word(&buf, i + 8))?;
    unwinder.is_code(caller).then_some(caller)
}

/// The 8 bytes of `b` at `i`.
fn word(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        b.get(i..i.checked_add(8)?)?.try_into().ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unwind::tests::anonymous_code;

    /// A stack in this process's memory laid out as an on-stack-replaced frame leaves it: the
    /// OSR frame's record holds the caller's record and the pseudo return address into the
    /// Tier0 code; the Tier0 frame's record, further up, holds the same caller's record and
    /// the return address into the caller.
    #[test]
    fn an_osr_frames_caller_is_read_from_the_tier0_frame_above_it() {
        let code = anonymous_code();
        let (pseudo, into_caller) = (code + 0x40, code + 0x80);
        let mut words = vec![0u64; 64];
        let base = words.as_ptr() as u64;
        let at = |i: usize| base + 8 * i as u64;
        // sp at word 0; OSR record at word 4; Tier0 record at word 20; caller's at word 40.
        words[4] = at(40);
        words[5] = pseudo;
        words[12] = 7; // a local of the Tier0 frame
        words[20] = at(40);
        words[21] = into_caller;
        words[40] = at(60);
        words[41] = code + 0xc0;
        let mut u = Unwinder::new(std::process::id());
        std::hint::black_box(&words);
        assert_eq!(osr_caller(&mut u, base, pseudo), Some(into_caller));
        // The thread has left the frame: the pseudo return address is not on the stack.
        assert_eq!(osr_caller(&mut u, base, code + 0x44), None);
        // What the Tier0 record holds is not code.
        words[21] = 12345;
        std::hint::black_box(&words);
        assert_eq!(osr_caller(&mut u, base, pseudo), None);
        // No Tier0 record between the OSR record and the caller's.
        words[21] = into_caller;
        words[20] = 0;
        std::hint::black_box(&words);
        assert_eq!(osr_caller(&mut u, base, pseudo), None);
        drop(words);
    }
}
