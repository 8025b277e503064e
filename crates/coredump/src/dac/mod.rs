//! The runtime's data access library (`libmscordaccore.so`), loaded into this process with a
//! data target over a core: the runtime's own reading of its threads, stacks, sync blocks,
//! objects and heap. The interfaces (`IXCLRDataProcess`, `ISOSDacInterface`) are called by
//! their vtable slots as the runtime's IDL orders them.
//!
//! The library must be the build of the dump's runtime ([`find`]); it runs in this process, so
//! callers run it in a child ([`crate::worker`]).

pub(crate) mod com;
mod find;
pub(crate) mod structs;
mod target;

use std::ffi::{c_void, CString};
use std::path::Path;

use com::{com_call, Guid, HResult, Iface, S_OK};
pub(crate) use find::find_dac;
pub use find::{sidecar_path, DAC_NAME};
use structs::*;
use target::DataTarget;

use crate::elf::{Core, Machine};
use crate::Error;

const IID_XCLR_DATA_PROCESS: Guid = Guid::new(
    0x5c55_2ab6,
    0xfc09,
    0x4cb3,
    [0x8e, 0x36, 0x22, 0xfa, 0x03, 0xc7, 0x98, 0xb7],
);
const IID_SOS_DAC: Guid = Guid::new(
    0x436f_00f2,
    0xb42a,
    0x4b9f,
    [0x87, 0x0c, 0xe7, 0x3d, 0xb6, 0x6a, 0xe9, 0x30],
);
const IID_SOS_DAC2: Guid = Guid::new(
    0xA160_26EC,
    0x96F4,
    0x40BA,
    [0x87, 0xFB, 0x55, 0x75, 0x98, 0x6F, 0xB7, 0xAF],
);

const IID_SOS_DAC8: Guid = Guid::new(
    0xc12f_35a9,
    0xe55c,
    0x4520,
    [0xa8, 0x94, 0xb3, 0xdc, 0x51, 0x65, 0xdf, 0xce],
);
const IID_SOS_DAC12: Guid = Guid::new(
    0x1b93_bacc,
    0x8ca4,
    0x432d,
    [0x94, 0x3a, 0x3e, 0x6e, 0x7e, 0xc0, 0xb0, 0xa3],
);

// ISOSDacInterface's slots.
const SOS_THREAD_STORE: usize = 3;
const SOS_THREAD: usize = 17;
const SOS_MD_FROM_IP: usize = 21;
const SOS_MD_NAME: usize = 22;
const SOS_OBJECT: usize = 33;
const SOS_OBJECT_STRING: usize = 34;
const SOS_MT_NAME: usize = 36;
const SOS_MT: usize = 37;
const SOS_GC_HEAP_DATA: usize = 46;
const SOS_GC_HEAP_LIST: usize = 47;
const SOS_GC_HEAP_DETAILS: usize = 48;
const SOS_GC_HEAP_STATIC: usize = 49;
const SOS_SEGMENT: usize = 50;
const SOS_SYNC_BLOCK: usize = 59;
const SOS_HANDLE_ENUM: usize = 61;
const SOS_STACK_REFS: usize = 79;
// ISOSDacInterface2.
const SOS2_EXCEPTION: usize = 3;
// ISOSDacInterface8: the generation table with every generation (the pinned-object heap too).
const SOS8_GENERATIONS: usize = 4;
const SOS8_GENERATIONS_SVR: usize = 6;
// ISOSDacInterface12.
const SOS12_GLOBAL_ALLOC_CONTEXT: usize = 3;
// ISOSStackRefEnum and ISOSHandleEnum (after ISOSEnum's Skip, Reset, GetCount).
const REFS_NEXT: usize = 6;
const HANDLES_NEXT: usize = 6;
/// Handles read at most.
const MAX_HANDLES: usize = 10_000_000;
// IXCLRDataProcess, IXCLRDataTask, IXCLRDataStackWalk.
const PROCESS_TASK_BY_OS_ID: usize = 7;
const TASK_CREATE_STACK_WALK: usize = 11;
const WALK_GET_CONTEXT: usize = 3;
const WALK_NEXT: usize = 5;
const WALK_FRAME_TYPE: usize = 7;
const WALK_REQUEST: usize = 9;
/// `DACSTACKPRIV_REQUEST_FRAME_DATA`: the address of the runtime's frame the walk is at.
const FRAME_DATA: u32 = 0xf000_0000;
/// ISOSDacInterface's `GetMethodDescPtrFromFrame`.
const SOS_MD_FROM_FRAME: usize = 23;
/// `CLRDATA_SIMPFRAME_MANAGED_METHOD`: a frame of a managed method (not a runtime's marker).
const MANAGED_METHOD: u32 = 0x2;
/// Every kind of frame (`CLRDATA_SIMPFRAME_*`).
const ALL_FRAMES: u32 = 0xF;
/// Big enough for every runtime's `CONTEXT` (3,104 bytes on x64 today).
const CONTEXT_BYTES: usize = 8192;
/// Frames of one thread's stack kept at most.
const MAX_FRAMES: usize = 2000;

/// A frame of a managed stack.
#[derive(Clone, Debug)]
pub(crate) struct RawFrame {
    pub(crate) sp: u64,
    pub(crate) ip: u64,
    /// The method's name where the instruction pointer is in managed code.
    pub(crate) method: Option<String>,
}

/// A thread's stack: its managed frames, and the method of the runtime's own frame inside
/// which it sits when that comes before any managed frame (on .NET 8 and 9 a thread blocked
/// entering a monitor is in `Monitor.ReliableEnter`'s helper frame, not in managed code).
#[derive(Clone, Debug, Default)]
pub(crate) struct RawStack {
    pub(crate) frames: Vec<RawFrame>,
    pub(crate) runtime_top: Option<String>,
}

/// The library, loaded and attached to a core.
pub(crate) struct Dac {
    // Field order is drop order: the interfaces first, the target, then the library.
    sos: Iface,
    sos2: Option<Iface>,
    sos8: Option<Iface>,
    sos12: Option<Iface>,
    process: Iface,
    _target: DataTarget,
    handle: *mut c_void,
    machine: Machine,
}

impl Drop for Dac {
    fn drop(&mut self) {
        // The library keeps threads and state: it stays loaded (as every debugger leaves it).
        let _ = self.handle;
    }
}

impl Dac {
    /// Loads the library at `path` and attaches it to `core`, whose runtime is mapped at
    /// `runtime_base`. The core must outlive the returned value.
    pub(crate) fn open(path: &Path, core: &Core, runtime_base: u64) -> Result<Dac, Error> {
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::NoDac(format!("{} has a NUL in its path", path.display())))?;
        // SAFETY: dlopen with a valid C string; the library's initialisers run here.
        let handle = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns a C string or null.
            let why = unsafe {
                let e = libc::dlerror();
                if e.is_null() {
                    "unknown error".to_string()
                } else {
                    std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
                }
            };
            return Err(Error::NoDac(format!(
                "cannot load {}: {why}",
                path.display()
            )));
        }
        let sym = |name: &str| {
            let c = CString::new(name).unwrap_or_default();
            // SAFETY: a valid handle and C string.
            unsafe { libc::dlsym(handle, c.as_ptr()) }
        };
        let main = sym("DllMain");
        if !main.is_null() {
            type DllMain = unsafe extern "C" fn(*mut c_void, u32, *mut c_void) -> i32;
            // SAFETY: the library's DllMain, told it is attached (this sets up its platform
            // layer), as on Windows.
            unsafe {
                let f: DllMain = std::mem::transmute(main);
                f(handle, 1, std::ptr::null_mut());
            }
        }
        let create = sym("CLRDataCreateInstance");
        if create.is_null() {
            return Err(Error::NoDac(format!(
                "{} exports no CLRDataCreateInstance: not a data access library",
                path.display()
            )));
        }
        let mut target = DataTarget::new(core, runtime_base);
        type Create = unsafe extern "C" fn(*const Guid, *mut c_void, *mut *mut c_void) -> HResult;
        let mut out = std::ptr::null_mut();
        // SAFETY: the library's documented entry point, with our target.
        let hr = unsafe {
            let f: Create = std::mem::transmute(create);
            f(&IID_XCLR_DATA_PROCESS, target.as_ptr(), &mut out)
        };
        let process = match Iface::from_raw(out) {
            Some(p) if hr >= 0 => p,
            _ => {
                return Err(Error::Runtime(format!(
                    "the data access library could not read the runtime in this dump (HRESULT {:#x}): is the library the dump's runtime build?",
                    hr as u32
                )))
            }
        };
        let sos = process.query(&IID_SOS_DAC).ok_or_else(|| {
            Error::Runtime("the data access library has no ISOSDacInterface".into())
        })?;
        let sos2 = process.query(&IID_SOS_DAC2);
        let sos8 = process.query(&IID_SOS_DAC8);
        let sos12 = process.query(&IID_SOS_DAC12);
        Ok(Dac {
            sos,
            sos2,
            sos8,
            sos12,
            machine: core.machine,
            process,
            _target: target,
            handle,
        })
    }

    fn ok(hr: HResult) -> bool {
        hr == S_OK
    }

    /// The thread store.
    pub(crate) fn thread_store(&self) -> Option<ThreadStoreData> {
        let mut d = ThreadStoreData::default();
        let hr = com_call!(
            &self.sos,
            SOS_THREAD_STORE,
            (*mut ThreadStoreData),
            (&mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// A runtime thread.
    pub(crate) fn thread(&self, addr: u64) -> Option<ThreadData> {
        let mut d = ThreadData::default();
        let hr = com_call!(
            &self.sos,
            SOS_THREAD,
            (u64, *mut ThreadData),
            (addr, &mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// Sync block `n` (1-based).
    pub(crate) fn sync_block(&self, n: u32) -> Option<SyncBlockData> {
        let mut d = SyncBlockData::default();
        let hr = com_call!(
            &self.sos,
            SOS_SYNC_BLOCK,
            (u32, *mut SyncBlockData),
            (n, &mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// An object's header facts.
    pub(crate) fn object(&self, addr: u64) -> Option<ObjectData> {
        let mut d = ObjectData::default();
        let hr = com_call!(
            &self.sos,
            SOS_OBJECT,
            (u64, *mut ObjectData),
            (addr, &mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// A method table's sizes.
    pub(crate) fn method_table(&self, mt: u64) -> Option<MethodTableData> {
        let mut d = MethodTableData::default();
        let hr = com_call!(&self.sos, SOS_MT, (u64, *mut MethodTableData), (mt, &mut d));
        Self::ok(hr).then_some(d)
    }

    /// The text of a `String` object.
    pub(crate) fn string(&self, obj: u64, max: u32) -> Option<String> {
        self.wide(
            |count, buf, needed| {
                com_call!(
                    &self.sos,
                    SOS_OBJECT_STRING,
                    (u64, u32, *mut u16, *mut u32),
                    (obj, count, buf, needed)
                )
            },
            max,
        )
    }

    /// A method table's type name, as C# writes it (`List<T>`, not ``List`1[[T, asm]]``).
    pub(crate) fn type_name(&self, mt: u64) -> Option<String> {
        self.runtime_type_name(mt)
            .map(|n| crate::names::csharp_name(&n))
    }

    /// A method table's type name, as the runtime writes it.
    fn runtime_type_name(&self, mt: u64) -> Option<String> {
        self.wide(
            |count, buf, needed| {
                com_call!(
                    &self.sos,
                    SOS_MT_NAME,
                    (u64, u32, *mut u16, *mut u32),
                    (mt, count, buf, needed)
                )
            },
            4096,
        )
    }

    /// A method's full name.
    pub(crate) fn method_name(&self, md: u64) -> Option<String> {
        self.wide(
            |count, buf, needed| {
                com_call!(
                    &self.sos,
                    SOS_MD_NAME,
                    (u64, u32, *mut u16, *mut u32),
                    (md, count, buf, needed)
                )
            },
            4096,
        )
    }

    /// The method whose code holds `ip`.
    pub(crate) fn method_at(&self, ip: u64) -> Option<u64> {
        let mut md = 0u64;
        let hr = com_call!(&self.sos, SOS_MD_FROM_IP, (u64, *mut u64), (ip, &mut md));
        (Self::ok(hr) && md != 0).then_some(md)
    }

    /// Calls a `(count, WCHAR*, needed*)` method twice: for the size, then the text.
    fn wide(&self, call: impl Fn(u32, *mut u16, *mut u32) -> HResult, max: u32) -> Option<String> {
        // Asked with no buffer, some builds give the length with an error (.NET 8 and 9's
        // GetObjectStringData): the length counts, else the largest buffer is offered.
        let mut needed = 0u32;
        let _ = call(0, std::ptr::null_mut(), &mut needed);
        let n = if needed == 0 { max } else { needed.min(max) }.max(1);
        let mut buf = vec![0u16; n as usize];
        let hr = call(n, buf.as_mut_ptr(), &mut needed);
        if hr < 0 {
            return None;
        }
        let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
        Some(String::from_utf16_lossy(&buf[..end]))
    }

    /// An exception object's fields.
    pub(crate) fn exception(&self, obj: u64) -> Option<ExceptionData> {
        let sos2 = self.sos2.as_ref()?;
        let mut d = ExceptionData::default();
        let hr = com_call!(
            sos2,
            SOS2_EXCEPTION,
            (u64, *mut ExceptionData),
            (obj, &mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// The GC's mode and heap count.
    pub(crate) fn gc_heap_data(&self) -> Option<GcHeapData> {
        let mut d = GcHeapData::default();
        let hr = com_call!(&self.sos, SOS_GC_HEAP_DATA, (*mut GcHeapData), (&mut d));
        Self::ok(hr).then_some(d)
    }

    /// Every GC heap's details (one for workstation GC, one per heap for server GC).
    pub(crate) fn gc_heaps(&self) -> Vec<GcHeapDetails> {
        let Some(data) = self.gc_heap_data() else {
            return Vec::new();
        };
        if data.server_mode == 0 {
            let mut d = GcHeapDetails::default();
            let hr = com_call!(
                &self.sos,
                SOS_GC_HEAP_STATIC,
                (*mut GcHeapDetails),
                (&mut d)
            );
            return if Self::ok(hr) { vec![d] } else { Vec::new() };
        }
        let n = data.heap_count.min(4096);
        let mut heaps = vec![0u64; n as usize];
        let mut needed = 0u32;
        let hr = com_call!(
            &self.sos,
            SOS_GC_HEAP_LIST,
            (u32, *mut u64, *mut u32),
            (n, heaps.as_mut_ptr(), &mut needed)
        );
        if !Self::ok(hr) {
            return Vec::new();
        }
        heaps
            .into_iter()
            .filter_map(|h| {
                let mut d = GcHeapDetails::default();
                let hr = com_call!(
                    &self.sos,
                    SOS_GC_HEAP_DETAILS,
                    (u64, *mut GcHeapDetails),
                    (h, &mut d)
                );
                Self::ok(hr).then_some(d)
            })
            .collect()
    }

    /// Every generation of `heap` (gen0, gen1, gen2, large objects, pinned objects), where
    /// the library lists them all; else the four of the heap's details.
    pub(crate) fn generations(&self, heap: &GcHeapDetails, server: bool) -> Vec<GenerationData> {
        if let Some(sos8) = &self.sos8 {
            let mut gens = vec![GenerationData::default(); 8];
            let mut needed = 0u32;
            let hr = if server {
                com_call!(
                    sos8,
                    SOS8_GENERATIONS_SVR,
                    (u64, u32, *mut GenerationData, *mut u32),
                    (
                        heap.heap_addr,
                        gens.len() as u32,
                        gens.as_mut_ptr(),
                        &mut needed
                    )
                )
            } else {
                com_call!(
                    sos8,
                    SOS8_GENERATIONS,
                    (u32, *mut GenerationData, *mut u32),
                    (gens.len() as u32, gens.as_mut_ptr(), &mut needed)
                )
            };
            if hr >= 0 && needed > 0 {
                gens.truncate((needed as usize).min(8));
                return gens;
            }
        }
        heap.generations.to_vec()
    }

    /// The allocation context shared by threads that have none of their own (.NET 8+).
    pub(crate) fn global_alloc_context(&self) -> Option<(u64, u64)> {
        let sos12 = self.sos12.as_ref()?;
        let (mut ptr, mut limit) = (0u64, 0u64);
        let hr = com_call!(
            sos12,
            SOS12_GLOBAL_ALLOC_CONTEXT,
            (*mut u64, *mut u64),
            (&mut ptr, &mut limit)
        );
        (hr >= 0 && ptr != 0).then_some((ptr, limit))
    }

    /// A heap segment (or region).
    pub(crate) fn segment(&self, addr: u64) -> Option<HeapSegmentData> {
        let mut d = HeapSegmentData::default();
        let hr = com_call!(
            &self.sos,
            SOS_SEGMENT,
            (u64, *mut HeapSegmentData),
            (addr, &mut d)
        );
        Self::ok(hr).then_some(d)
    }

    /// The managed frames of thread `tid`, innermost first.
    pub(crate) fn stack(&self, tid: u32) -> RawStack {
        let mut stack = RawStack::default();
        let mut task = std::ptr::null_mut();
        let hr = com_call!(
            &self.process,
            PROCESS_TASK_BY_OS_ID,
            (u32, *mut *mut c_void),
            (tid, &mut task)
        );
        let Some(task) = Iface::from_raw(task).filter(|_| hr >= 0) else {
            return stack;
        };
        let mut walk = std::ptr::null_mut();
        let hr = com_call!(
            &task,
            TASK_CREATE_STACK_WALK,
            (u32, *mut *mut c_void),
            (ALL_FRAMES, &mut walk)
        );
        let Some(walk) = Iface::from_raw(walk).filter(|_| hr >= 0) else {
            return stack;
        };
        let mut ctx = vec![0u64; CONTEXT_BYTES / 8];
        // CONTEXT_FULL, and where the instruction and stack pointers sit.
        let (flags, ip_at, sp_at) = match self.machine {
            Machine::X64 => (0x0010_000B, 0xf8, 0x98),
            Machine::Arm64 => (0x0040_0007, 0x108, 0x100),
        };
        loop {
            let mut size = 0u32;
            let hr = com_call!(
                &walk,
                WALK_GET_CONTEXT,
                (u32, u32, *mut u32, *mut u8),
                (
                    flags,
                    CONTEXT_BYTES as u32,
                    &mut size,
                    ctx.as_mut_ptr().cast()
                )
            );
            let (mut simple, mut detailed) = (0u32, 0u32);
            let kind = com_call!(
                &walk,
                WALK_FRAME_TYPE,
                (*mut u32, *mut u32),
                (&mut simple, &mut detailed)
            );
            if hr >= 0 && kind >= 0 && simple & MANAGED_METHOD != 0 {
                let (ip, sp) = (ctx[ip_at / 8], ctx[sp_at / 8]);
                let method = self.method_at(ip).and_then(|md| self.method_name(md));
                if method.is_some() {
                    stack.frames.push(RawFrame { sp, ip, method });
                }
            } else if stack.frames.is_empty() && stack.runtime_top.is_none() {
                let mut frame = 0u64;
                let hr = com_call!(
                    &walk,
                    WALK_REQUEST,
                    (u32, u32, *const u8, u32, *mut u8),
                    (
                        FRAME_DATA,
                        0,
                        std::ptr::null(),
                        8,
                        (&mut frame as *mut u64).cast()
                    )
                );
                if hr >= 0 && frame != 0 {
                    let mut md = 0u64;
                    let hr = com_call!(
                        &self.sos,
                        SOS_MD_FROM_FRAME,
                        (u64, *mut u64),
                        (frame, &mut md)
                    );
                    if hr >= 0 && md != 0 {
                        stack.runtime_top = self.method_name(md);
                    }
                }
            }
            if stack.frames.len() >= MAX_FRAMES {
                break;
            }
            let hr = com_call!(&walk, WALK_NEXT, (), ());
            if hr != S_OK {
                break;
            }
        }
        stack
    }

    /// Every GC handle.
    pub(crate) fn handles(&self) -> Vec<HandleData> {
        let mut out = Vec::new();
        let mut e = std::ptr::null_mut();
        let hr = com_call!(&self.sos, SOS_HANDLE_ENUM, (*mut *mut c_void), (&mut e));
        let Some(e) = Iface::from_raw(e).filter(|_| hr >= 0) else {
            return out;
        };
        let mut chunk = vec![HandleData::default(); 512];
        loop {
            let mut got = 0u32;
            let hr = com_call!(
                &e,
                HANDLES_NEXT,
                (u32, *mut HandleData, *mut u32),
                (chunk.len() as u32, chunk.as_mut_ptr(), &mut got)
            );
            let got = (got as usize).min(chunk.len());
            out.extend_from_slice(&chunk[..got]);
            if hr != S_OK || got < chunk.len() || out.len() > MAX_HANDLES {
                break;
            }
        }
        out
    }

    /// The objects thread `tid`'s stack refers to, with where (innermost first).
    pub(crate) fn stack_refs(&self, tid: u32) -> Vec<StackRefData> {
        let mut refs = Vec::new();
        let mut e = std::ptr::null_mut();
        let hr = com_call!(
            &self.sos,
            SOS_STACK_REFS,
            (u32, *mut *mut c_void),
            (tid, &mut e)
        );
        let Some(e) = Iface::from_raw(e).filter(|_| hr >= 0) else {
            return refs;
        };
        let mut chunk = vec![StackRefData::default(); 256];
        loop {
            let mut got = 0u32;
            let hr = com_call!(
                &e,
                REFS_NEXT,
                (u32, *mut StackRefData, *mut u32),
                (chunk.len() as u32, chunk.as_mut_ptr(), &mut got)
            );
            let got = (got as usize).min(chunk.len());
            refs.extend_from_slice(&chunk[..got]);
            if hr != S_OK || got < chunk.len() || refs.len() > 1_000_000 {
                break;
            }
        }
        refs
    }
}
