//! The code of on-stack-replaced methods, learned from the runtime's method events while a
//! kernel-sampled recording streams, so that the pump can mend their stacks.
//!
//! A method with a loop starts in Tier0 code; when the loop runs hot, the runtime jumps from a
//! patchpoint into an optimized "OSR" version of it, whose frame lies under the Tier0 frame.
//! The kernel's frame-pointer walk then reads the method twice (the OSR frame, then the
//! patchpoint's return into the Tier0 code) and skips its real caller
//! ([`clrspy_sampler::Sampler::repair_osr`] mends that). The tap sees every
//! `Method/LoadVerbose`: [`OsrLoads`] keeps the Tier0 code of each method, and publishes each
//! OSR version with the Tier0 code of the same method ([`SharedOsr`]).

use std::sync::{Arc, Mutex};

use clr_events::runtime::{ids, MethodLoad};
use rustc_hash::FxHashMap;

use crate::tap::{Action, EventConsumer};

/// The most Tier0 methods remembered (beyond it, OSR versions of newer ones are not mended).
const MAX_TIER0: usize = 1 << 18;

/// One OSR version: its code, and the Tier0 code of the same method (None when that was
/// compiled before the recording).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Osr {
    start: u64,
    end: u64,
    tier0: Option<(u64, u64)>,
}

/// The OSR versions seen so far, shared by the tap (which adds) and the pump (which reads).
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedOsr(Arc<Mutex<Vec<Osr>>>);

impl SharedOsr {
    /// Copies the versions added since `local` was last brought up to date.
    pub(crate) fn update(&self, local: &mut OsrCode) {
        let Ok(all) = self.0.lock() else {
            return;
        };
        if all.len() == local.known {
            return;
        }
        local.osr.extend_from_slice(&all[local.known..]);
        local.known = all.len();
        local.osr.sort_by_key(|o| o.start);
    }
}

/// The pump's copy of the OSR versions.
#[derive(Debug, Default)]
pub(crate) struct OsrCode {
    /// Sorted by start.
    osr: Vec<Osr>,
    known: usize,
}

impl OsrCode {
    /// True when none is known (nothing to mend).
    pub(crate) fn is_empty(&self) -> bool {
        self.osr.is_empty()
    }

    /// True when `ip` is OSR code and `next` (the kernel walk's next frame) the Tier0 code of
    /// the same method: the patchpoint's return address.
    pub(crate) fn pair(&self, ip: u64, next: u64) -> bool {
        let i = self.osr.partition_point(|o| o.start <= ip);
        let Some(o) = i.checked_sub(1).map(|i| self.osr[i]) else {
            return false;
        };
        ip < o.end && o.tier0.is_some_and(|(s, e)| next >= s && next < e)
    }
}

/// The tap's consumer of method loads.
pub(crate) struct OsrLoads {
    shared: SharedOsr,
    /// Each method's Tier0 code (tier QuickJitted or its instrumented form), by method id.
    tier0: FxHashMap<u64, (u64, u64)>,
}

impl OsrLoads {
    pub(crate) fn new(shared: SharedOsr) -> OsrLoads {
        OsrLoads {
            shared,
            tier0: FxHashMap::default(),
        }
    }
}

impl EventConsumer for OsrLoads {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if ev.event_id() != ids::METHOD_LOAD_VERBOSE
            || ev.provider() != clr_events::RUNTIME_PROVIDER
        {
            return Action::Continue;
        }
        let Ok(m) = MethodLoad::parse(ev.payload, ev.version(), ev.pointer_size()) else {
            return Action::Continue;
        };
        let range = (m.start, m.start.saturating_add(u64::from(m.size)));
        if m.start == 0 || m.size == 0 {
            return Action::Continue;
        }
        if m.is_osr() {
            let osr = Osr {
                start: range.0,
                end: range.1,
                tier0: self.tier0.get(&m.method_id).copied(),
            };
            if let Ok(mut all) = self.shared.0.lock() {
                all.push(osr);
            }
        } else if matches!((m.flags >> 7) & 0x7, 3 | 6) && self.tier0.len() < MAX_TIER0 {
            self.tier0.insert(m.method_id, range);
        }
        Action::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_osr_code_then_the_same_methods_tier0_code() {
        let shared = SharedOsr::default();
        shared.0.lock().unwrap().extend([
            Osr {
                start: 0x2000,
                end: 0x2100,
                tier0: Some((0x1000, 0x1200)),
            },
            Osr {
                start: 0x5000,
                end: 0x5100,
                tier0: None,
            },
        ]);
        let mut local = OsrCode::default();
        shared.update(&mut local);
        assert!(local.pair(0x2050, 0x1100));
        // Not the same method's Tier0 code: the caller (the OSR method's prolog or epilog).
        assert!(!local.pair(0x2050, 0x3000));
        assert!(!local.pair(0x2100, 0x1100));
        // Its Tier0 code is not known (compiled before the recording).
        assert!(!local.pair(0x5050, 0x1100));
        assert!(!local.pair(0x0100, 0x1100));
    }
}
