//! The network under HTTP: socket connects and accepts (`System.Net.Sockets`), name
//! resolutions (`System.Net.NameResolution`) and TLS handshakes (`System.Net.Security`) — how
//! many, to what, how long, how many failed. A start and its stop are tied by their activity
//! id; a failure comes before its operation's stop, under the same activity.

use std::collections::BTreeMap;

use clr_events::ViewError;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::shared::{text, Durations, Pair, Pairs};
use crate::model_entry::{boxed, ModelEntry};
use crate::{Model, ModelEvent, Wanted};

const SOCKETS: &str = "System.Net.Sockets";
const DNS: &str = "System.Net.NameResolution";
const TLS: &str = "System.Net.Security";

/// One target's operations (an address, a host name).
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct TargetOps {
    /// Finished operations' durations (failed ones included).
    pub(crate) durations: Durations,
    /// How many of them failed.
    pub(crate) failed: u64,
}

/// One kind of operation, by target.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct Ops {
    /// By target.
    pub(crate) targets: BTreeMap<String, TargetOps>,
    /// Started and not finished by the end.
    pub(crate) in_flight: u64,
    /// Stops whose start is not in the trace.
    pub(crate) without_start: u64,
    #[serde(skip)]
    pairs: Pairs<[u8; 16], String, ()>,
    #[serde(skip)]
    failed: FxHashSet<[u8; 16]>,
}

impl Ops {
    fn done(&mut self, id: [u8; 16], pair: Option<Pair<String, ()>>) {
        let Some((start, target, end, ())) = pair else {
            return;
        };
        let t = self.targets.entry(target).or_default();
        t.durations.add(end - start);
        if self.failed.remove(&id) {
            t.failed += 1;
        }
    }

    fn start(&mut self, id: [u8; 16], ts: i64, target: String) {
        let pair = self.pairs.start(id, ts, target);
        self.done(id, pair);
    }

    fn stop(&mut self, id: [u8; 16], ts: i64) {
        let pair = self.pairs.end(id, ts, ());
        self.done(id, pair);
    }

    fn finish(&mut self) {
        self.in_flight = self.pairs.open();
        self.without_start = self.pairs.orphan_ends();
        self.targets.values_mut().for_each(|t| t.durations.finish());
    }

    /// All targets' finished operations.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.targets.values().map(|t| t.durations.count).sum()
    }
}

/// Connects, accepts, resolutions and handshakes.
#[derive(Clone, Debug, Default, Serialize)]
pub(crate) struct NetModel {
    /// Outgoing socket connects, by address (`ip:port`, see [`socket_address`]).
    pub(crate) connects: Ops,
    /// Accepted connections, by listening address.
    pub(crate) accepts: Ops,
    /// Name resolutions, by host name (or address).
    pub(crate) resolutions: Ops,
    /// TLS handshakes, by target host (empty on the server side when none is asked for).
    pub(crate) handshakes: Ops,
    /// Events without an activity id, not tied to their operation: the recording did not
    /// enable `System.Threading.Tasks.TplEventSource` with keyword 0x80.
    pub(crate) without_activity_id: u64,
}

impl Model for NetModel {
    const EVENTS: &'static [Wanted] = &[
        Wanted::named(SOCKETS, "ConnectStart"),
        Wanted::named(SOCKETS, "ConnectStop"),
        Wanted::named(SOCKETS, "ConnectFailed"),
        Wanted::named(SOCKETS, "AcceptStart"),
        Wanted::named(SOCKETS, "AcceptStop"),
        Wanted::named(SOCKETS, "AcceptFailed"),
        Wanted::named(DNS, "ResolutionStart"),
        Wanted::named(DNS, "ResolutionStop"),
        Wanted::named(DNS, "ResolutionFailed"),
        Wanted::named(TLS, "HandshakeStart"),
        Wanted::named(TLS, "HandshakeStop"),
        Wanted::named(TLS, "HandshakeFailed"),
    ];

    fn on_event(&mut self, ev: &ModelEvent<'_>) -> Result<(), ViewError> {
        let id = ev.context.activity_id.0;
        if ev.context.activity_id.is_zero() {
            self.without_activity_id += 1;
            return Ok(());
        }
        let name = ev.context.event_name;
        let (ops, what) = if let Some(w) = name.strip_prefix("Connect") {
            (&mut self.connects, w)
        } else if let Some(w) = name.strip_prefix("Accept") {
            (&mut self.accepts, w)
        } else if let Some(w) = name.strip_prefix("Resolution") {
            (&mut self.resolutions, w)
        } else if let Some(w) = name.strip_prefix("Handshake") {
            (&mut self.handshakes, w)
        } else {
            return Ok(());
        };
        match what {
            "Start" => {
                let d = ev.decode();
                let target = match text(&d, "address") {
                    a if !a.is_empty() => socket_address(&a).unwrap_or(a),
                    _ => match text(&d, "hostNameOrAddress") {
                        h if !h.is_empty() => h,
                        _ => text(&d, "targetHost"),
                    },
                };
                ops.start(id, ev.ts_ns, target);
            }
            "Stop" => ops.stop(id, ev.ts_ns),
            // "Failed": its stop follows under the same activity.
            _ => {
                ops.failed.insert(id);
            }
        }
        Ok(())
    }

    fn finish(&mut self) {
        for ops in [
            &mut self.connects,
            &mut self.accepts,
            &mut self.resolutions,
            &mut self.handshakes,
        ] {
            ops.finish();
        }
    }
}

/// `ip:port` of an address as the sockets events write it (`SocketAddress.ToString()`:
/// `InterNetwork:16:{p,p,a,b,c,d,...}`, `InterNetworkV6:28:{p,p,f,f,f,f,16 address bytes,...}`:
/// the port big-endian, then the address); `None` for anything else (kept as written).
pub(crate) fn socket_address(raw: &str) -> Option<String> {
    let (family, rest) = raw.split_once(':')?;
    let (_, bytes) = rest.split_once(':')?;
    let bytes: Vec<u8> = bytes
        .strip_prefix('{')?
        .strip_suffix('}')?
        .split(',')
        .map(|b| b.trim().parse().ok())
        .collect::<Option<_>>()?;
    let port = u16::from_be_bytes([*bytes.first()?, *bytes.get(1)?]);
    match family {
        "InterNetwork" => {
            let a: [u8; 4] = bytes.get(2..6)?.try_into().ok()?;
            Some(format!("{}:{port}", std::net::Ipv4Addr::from(a)))
        }
        "InterNetworkV6" => {
            let a: [u8; 16] = bytes.get(6..22)?.try_into().ok()?;
            Some(format!("[{}]:{port}", std::net::Ipv6Addr::from(a)))
        }
        _ => None,
    }
}

/// The registry's entry: socket connects and accepts, name resolutions, TLS handshakes: counts,
/// durations, failures.
pub(crate) const ENTRY: ModelEntry = ModelEntry::of::<NetModel>(
    "net",
    boxed::<NetModel>,
);
