//! Record-time names for precompiled (ReadyToRun) code, so a trace stays self-contained on
//! another machine: the event tap collects the code addresses of the samples' stacks
//! ([`StackIps`]); now and then the pump resolves the new ones that fall into a mapped .NET
//! image — read once per image with the [`readytorun`] crate, through `/proc/<pid>/root` so a
//! container's files are the ones read — and splices one `R2RMethod` event per function hit
//! (its file offsets and name) and one `R2RImage` per image (size and MVID) into the trace.
//! Only functions the samples hit are stored: a few hundred events, where the whole framework
//! would take hundreds of thousands. Addresses in native files go to [`crate::native`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::inject::Injected;
use crate::procstat::Mapping;
use crate::tap::{Action, EventConsumer};

/// The most distinct addresses remembered (beyond it new ones are ignored).
const MAX_IPS: usize = 1 << 20;
/// The most functions stored per recording.
const MAX_FUNCTIONS: usize = 200_000;
/// The largest image file read.
const MAX_IMAGE_BYTES: u64 = 512 << 20;

#[derive(Debug, Default)]
struct IpSet {
    /// Every frame of every sample passes here: a fast hash, not SipHash.
    seen: rustc_hash::FxHashSet<u64>,
    fresh: Vec<u64>,
}

/// The addresses seen in the recording's stacks, shared between the tap and the pump.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedIps(Arc<Mutex<IpSet>>);

impl SharedIps {
    /// Remembers the addresses not seen before (up to [`MAX_IPS`]).
    pub(crate) fn add(&self, ips: impl Iterator<Item = u64>) {
        if let Ok(mut s) = self.0.lock() {
            for ip in ips {
                if s.seen.len() < MAX_IPS && s.seen.insert(ip) {
                    s.fresh.push(ip);
                }
            }
        }
    }

    /// The addresses first seen since the last call.
    fn take(&self) -> Vec<u64> {
        self.0
            .lock()
            .map(|mut s| std::mem::take(&mut s.fresh))
            .unwrap_or_default()
    }
}

/// An event consumer collecting every stack's addresses.
pub(crate) struct StackIps(pub SharedIps);

impl EventConsumer for StackIps {
    fn event(&mut self, ev: &nettrace::Event<'_>) -> Action {
        if ev.stack.is_empty() {
            return Action::Continue;
        }
        self.0.add(ev.stack.ips());
        Action::Continue
    }
}

/// Resolves the collected addresses against the process's images.
#[derive(Debug)]
pub(crate) struct R2rRecorder {
    pid: u32,
    ips: SharedIps,
    /// Images by mapped path, without their names (None: not a readable ReadyToRun image).
    images: HashMap<String, Option<readytorun::Image>>,
    /// (path, function start) already stored.
    stored: HashSet<(String, u32)>,
    /// Addresses in no known mapping yet (an image mapped after the last read of the maps),
    /// with the rounds they have waited.
    retry: Vec<(u64, u8)>,
    /// Names of the native code hit (ELF symbols).
    native: crate::native::NativeNames,
    /// The last round met addresses in no mapping for the first time: the maps are worth
    /// reading again soon (an image mapped since), not in 2 s.
    unmapped: bool,
}

/// Rounds an address in no mapping is retried (the maps are re-read every 2 s; JIT-compiled
/// code never falls into a file mapping).
const RETRY_ROUNDS: u8 = 16;
/// The most addresses waiting for a retry.
const MAX_RETRY: usize = 1 << 17;

/// Maps the file of the image mapped from `path` in process `pid` (the target's own view of
/// it, a container's root, else ours).
fn map_image(pid: u32, path: &str) -> Option<memmap2::Mmap> {
    if !(path.ends_with(".dll") || path.ends_with(".exe")) {
        return None;
    }
    // The process's own file (a container's), never through a link it planted.
    let f =
        diagnostics_client::rooted::open_in_root(pid, std::path::Path::new(path), MAX_IMAGE_BYTES)
            .ok()?;
    // SAFETY: the map is only read while an image is parsed or named, and dropped then; the
    // runtime's images are not rewritten while it runs them, and every read is bounds-checked.
    unsafe { memmap2::Mmap::map(&f) }.ok()
}

impl R2rRecorder {
    pub(crate) fn new(pid: u32, ips: SharedIps) -> R2rRecorder {
        R2rRecorder {
            pid,
            ips,
            images: HashMap::new(),
            stored: HashSet::new(),
            retry: Vec::new(),
            native: crate::native::NativeNames::default(),
            unmapped: false,
        }
    }

    /// True when the last [`R2rRecorder::resolve`] met new addresses in no known mapping.
    pub(crate) fn met_unmapped(&self) -> bool {
        self.unmapped
    }

    /// The image mapped from `path`, read the first time (R2RImage goes to `out` then). Only
    /// its function table is kept: the names are read for the functions hit
    /// ([`R2rRecorder::resolve`]). Mapped, not read, so that only the pages a read touches are
    /// ever in memory (reading CoreLib took 15 MB, naming all its functions 7 MB more).
    fn image(&mut self, path: &str, out: &mut Vec<Injected>) -> Option<&readytorun::Image> {
        if !self.images.contains_key(path) {
            let found = map_image(self.pid, path).and_then(|map| {
                let img = readytorun::Image::parse_unnamed(&map).ok()?;
                Some((img, map.len() as u64))
            });
            if let Some((img, size)) = &found {
                if let Some(mvid) = img.mvid() {
                    out.push(Injected::R2rImage {
                        path: path.to_string(),
                        size: *size,
                        mvid: mvid.iter().map(|b| format!("{b:02x}")).collect(),
                    });
                }
            }
            self.images
                .insert(path.to_string(), found.map(|(img, _)| img));
        }
        self.images.get(path).and_then(Option::as_ref)
    }

    /// Events naming the functions the new addresses fall into (`mappings`: the process's
    /// executable mappings).
    pub(crate) fn resolve(&mut self, mappings: &[Mapping]) -> Vec<Injected> {
        let mut out = Vec::new();
        let mut ips: Vec<(u64, u8)> = std::mem::take(&mut self.retry);
        ips.extend(self.ips.take().into_iter().map(|ip| (ip, 0)));
        self.unmapped = false;
        if ips.is_empty() {
            return out;
        }
        let mut sorted: Vec<&Mapping> = mappings.iter().collect();
        sorted.sort_by_key(|m| m.start);
        // The new functions hit, per image, in the order first hit.
        let mut hit: Vec<(String, Vec<readytorun::Function>)> = Vec::new();
        // Native code hit: (path, file offset).
        let mut native = Vec::new();
        for (ip, rounds) in ips {
            let i = sorted.partition_point(|m| m.start <= ip);
            let m = i.checked_sub(1).and_then(|i| sorted.get(i)).copied();
            let Some(m) = m.filter(|m| ip < m.end) else {
                self.unmapped |= rounds == 0;
                if rounds < RETRY_ROUNDS && self.retry.len() < MAX_RETRY {
                    self.retry.push((ip, rounds + 1));
                }
                continue;
            };
            let offset = ip - m.start + m.offset;
            if crate::native::is_native_file(&m.path) {
                native.push((m.path.clone(), offset));
                continue;
            }
            if self.stored.len() >= MAX_FUNCTIONS {
                continue;
            }
            let Some(img) = self.image(&m.path, &mut out) else {
                continue;
            };
            let Some(f) = img
                .rva_of_file_offset(offset)
                .and_then(|rva| img.function_at(rva))
                .copied()
            else {
                continue;
            };
            if !self.stored.insert((m.path.clone(), f.start)) {
                continue;
            }
            match hit.iter_mut().find(|h| h.0 == m.path) {
                Some(h) => h.1.push(f),
                None => hit.push((m.path.clone(), vec![f])),
            }
        }
        for (path, functions) in hit {
            let Some(Some(img)) = self.images.get(&path) else {
                continue;
            };
            let Some(names) =
                map_image(self.pid, &path).and_then(|map| img.names_from(&map, &functions).ok())
            else {
                continue;
            };
            for (f, name) in functions.iter().zip(names) {
                let Some(start) = img.file_offset_of_rva(f.start) else {
                    continue;
                };
                out.push(Injected::R2rMethod {
                    path: path.clone(),
                    offset: start,
                    size: f.end - f.start,
                    name,
                });
            }
        }
        self.native.resolve(self.pid, &native, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_functions_are_named_once_with_their_image() {
        let Some(dir) = std::fs::read_dir("/usr/share/dotnet/shared/Microsoft.NETCore.App")
            .ok()
            .and_then(|d| d.flatten().map(|e| e.path()).max())
        else {
            eprintln!("no shared framework installed: skipped");
            return;
        };
        let path = dir.join("System.Net.Sockets.dll").display().to_string();
        let img = readytorun::Image::parse(&std::fs::read(&path).unwrap()).unwrap();
        let f = *img
            .functions()
            .iter()
            .find(|f| img.name(f) == "System.Net.Sockets.SocketAsyncEngine.EventLoop")
            .unwrap();
        // The whole file mapped at `base` (file offsets = address - base).
        let base = 0x7f00_0000_0000u64;
        let maps = [Mapping {
            start: base,
            end: base + 0x100_0000,
            offset: 0,
            path: path.clone(),
        }];
        let off = u64::from(img.file_offset_of_rva(f.start).unwrap());
        let ips = SharedIps::default();
        let mut consumer_side = ips.0.lock().unwrap();
        for ip in [base + off + 2, base + off + 5, 0x1000] {
            if consumer_side.seen.insert(ip) {
                consumer_side.fresh.push(ip);
            }
        }
        drop(consumer_side);
        // The recorder reads through /proc/<pid>/root: our own pid sees the same files.
        let mut r = R2rRecorder::new(std::process::id(), ips.clone());
        let out = r.resolve(&maps);
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(matches!(&out[0], Injected::R2rImage { mvid, .. } if mvid.len() == 32));
        assert_eq!(
            out[1],
            Injected::R2rMethod {
                path: path.clone(),
                offset: off as u32,
                size: f.end - f.start,
                name: "System.Net.Sockets.SocketAsyncEngine.EventLoop".into(),
            }
        );
        assert!(r.resolve(&maps).is_empty());
        // The image's names are not kept: a function hit later is named from the file.
        let known = r.images[&path].as_ref().unwrap();
        assert!(known
            .functions()
            .iter()
            .all(|g| known.name(g) == "[unnamed]"));
        let g = *img
            .functions()
            .iter()
            .find(|g| g.start != f.start && img.name(g) != "[unnamed]")
            .unwrap();
        let g_off = u64::from(img.file_offset_of_rva(g.start).unwrap());
        {
            let mut s = ips.0.lock().unwrap();
            s.seen.insert(base + g_off);
            s.fresh.push(base + g_off);
        }
        assert_eq!(
            r.resolve(&maps),
            vec![Injected::R2rMethod {
                path: path.clone(),
                offset: g_off as u32,
                size: g.end - g.start,
                name: img.name(&g).to_string(),
            }]
        );
        // 0x1000 was in no mapping: retried a bounded number of rounds, then dropped.
        assert_eq!(r.retry.len(), 1);
        for _ in 0..RETRY_ROUNDS {
            r.resolve(&maps);
        }
        assert!(r.retry.is_empty());
        // An image mapped after its code was first seen is still named.
        let late = SharedIps::default();
        let mut r = R2rRecorder::new(std::process::id(), late.clone());
        {
            let mut s = late.0.lock().unwrap();
            s.seen.insert(base + off);
            s.fresh.push(base + off);
        }
        assert!(r.resolve(&[]).is_empty());
        assert_eq!(r.resolve(&maps).len(), 2);
    }
}
