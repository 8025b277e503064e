//! The data target clrspy hands the data access library: a COM object (`ICLRDataTarget`, with
//! `ICLRRuntimeLocator` beside it) whose methods answer from the core — memory, thread
//! registers in the runtime's `CONTEXT` layout, where `libcoreclr.so` was mapped. Its methods
//! are called by the library on this thread only; none may unwind (every body is total).

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

use super::com::{Guid, HResult, E_FAIL, E_NOINTERFACE, E_NOTIMPL, S_OK};
use crate::elf::{Core, Machine};

/// `ICLRDataTarget`'s IID.
const IID_DATA_TARGET: Guid = Guid::new(
    0x3E11_CCEE,
    0xD08B,
    0x43e5,
    [0xAF, 0x01, 0x32, 0x71, 0x7A, 0x64, 0xDA, 0x03],
);
/// `IUnknown`'s IID.
const IID_UNKNOWN: Guid = Guid::new(0, 0, 0, [0xC0, 0, 0, 0, 0, 0, 0, 0x46]);
/// `ICLRRuntimeLocator`'s IID.
const IID_RUNTIME_LOCATOR: Guid = Guid::new(
    0xb760_bf44,
    0x9377,
    0x4597,
    [0x8b, 0xe7, 0x58, 0x08, 0x3b, 0xdc, 0x51, 0x46],
);

/// `IMAGE_FILE_MACHINE_AMD64` and `_ARM64`.
const MACHINE_AMD64: u32 = 0x8664;
const MACHINE_ARM64: u32 = 0xAA64;

#[repr(C)]
struct TargetVtbl {
    query_interface: unsafe extern "C" fn(*mut Target, *const Guid, *mut *mut c_void) -> HResult,
    add_ref: unsafe extern "C" fn(*mut Target) -> u32,
    release: unsafe extern "C" fn(*mut Target) -> u32,
    get_machine_type: unsafe extern "C" fn(*mut Target, *mut u32) -> HResult,
    get_pointer_size: unsafe extern "C" fn(*mut Target, *mut u32) -> HResult,
    get_image_base: unsafe extern "C" fn(*mut Target, *const u16, *mut u64) -> HResult,
    read_virtual: unsafe extern "C" fn(*mut Target, u64, *mut u8, u32, *mut u32) -> HResult,
    write_virtual: unsafe extern "C" fn(*mut Target, u64, *const u8, u32, *mut u32) -> HResult,
    get_tls_value: unsafe extern "C" fn(*mut Target, u32, u32, *mut u64) -> HResult,
    set_tls_value: unsafe extern "C" fn(*mut Target, u32, u32, u64) -> HResult,
    get_current_thread_id: unsafe extern "C" fn(*mut Target, *mut u32) -> HResult,
    get_thread_context: unsafe extern "C" fn(*mut Target, u32, u32, u32, *mut u8) -> HResult,
    set_thread_context: unsafe extern "C" fn(*mut Target, u32, u32, *const u8) -> HResult,
    request: unsafe extern "C" fn(*mut Target, u32, u32, *const u8, u32, *mut u8) -> HResult,
}

#[repr(C)]
struct LocatorVtbl {
    query_interface: unsafe extern "C" fn(*mut Locator, *const Guid, *mut *mut c_void) -> HResult,
    add_ref: unsafe extern "C" fn(*mut Locator) -> u32,
    release: unsafe extern "C" fn(*mut Locator) -> u32,
    get_runtime_base: unsafe extern "C" fn(*mut Locator, *mut u64) -> HResult,
}

/// The `ICLRRuntimeLocator` face of the target: its own vtable, and the way back.
#[repr(C)]
struct Locator {
    vtbl: *const LocatorVtbl,
    target: *mut Target,
}

/// The data target. Boxed and never moved while the library holds it: [`DataTarget`] owns it
/// and outlives every interface the library gave out.
#[repr(C)]
pub(crate) struct Target {
    vtbl: *const TargetVtbl,
    locator: Locator,
    refs: AtomicU32,
    core: *const Core,
    runtime_base: u64,
}

static TARGET_VTBL: TargetVtbl = TargetVtbl {
    query_interface: t_query_interface,
    add_ref: t_add_ref,
    release: t_release,
    get_machine_type: t_machine_type,
    get_pointer_size: t_pointer_size,
    get_image_base: t_image_base,
    read_virtual: t_read_virtual,
    write_virtual: t_write_virtual,
    get_tls_value: t_get_tls,
    set_tls_value: t_set_tls,
    get_current_thread_id: t_current_thread,
    get_thread_context: t_thread_context,
    set_thread_context: t_set_thread_context,
    request: t_request,
};

static LOCATOR_VTBL: LocatorVtbl = LocatorVtbl {
    query_interface: l_query_interface,
    add_ref: l_add_ref,
    release: l_release,
    get_runtime_base: l_runtime_base,
};

/// Owns the target object; the core must outlive it (the caller keeps both together).
pub(crate) struct DataTarget {
    target: Box<Target>,
}

impl DataTarget {
    /// A target over `core`, whose runtime is mapped at `runtime_base`.
    pub(crate) fn new(core: &Core, runtime_base: u64) -> DataTarget {
        let mut target = Box::new(Target {
            vtbl: &TARGET_VTBL,
            locator: Locator {
                vtbl: &LOCATOR_VTBL,
                target: std::ptr::null_mut(),
            },
            refs: AtomicU32::new(1),
            core,
            runtime_base,
        });
        let back: *mut Target = &mut *target;
        target.locator.target = back;
        DataTarget { target }
    }

    /// The pointer the library takes as its `ICLRDataTarget*`.
    pub(crate) fn as_ptr(&mut self) -> *mut c_void {
        let p: *mut Target = &mut *self.target;
        p.cast()
    }
}

/// # Safety
/// `t` is a live [`Target`] (the library only calls with the pointer it was given).
unsafe fn core<'a>(t: *mut Target) -> &'a Core {
    // SAFETY: the target points at a core its owner keeps alive for the library's lifetime.
    unsafe { &*(*t).core }
}

unsafe extern "C" fn t_query_interface(
    t: *mut Target,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HResult {
    if iid.is_null() || out.is_null() {
        return E_FAIL;
    }
    // SAFETY: non-null pointers from the library, valid for the call.
    unsafe {
        let iid = &*iid;
        if *iid == IID_DATA_TARGET || *iid == IID_UNKNOWN {
            t_add_ref(t);
            *out = t.cast();
            S_OK
        } else if *iid == IID_RUNTIME_LOCATOR {
            t_add_ref(t);
            *out = std::ptr::addr_of_mut!((*t).locator).cast();
            S_OK
        } else {
            *out = std::ptr::null_mut();
            E_NOINTERFACE
        }
    }
}

unsafe extern "C" fn t_add_ref(t: *mut Target) -> u32 {
    // SAFETY: a live target.
    unsafe { (*t).refs.fetch_add(1, Ordering::Relaxed) + 1 }
}

unsafe extern "C" fn t_release(t: *mut Target) -> u32 {
    // The owner frees the target; the count is only reported.
    // SAFETY: a live target.
    unsafe { (*t).refs.fetch_sub(1, Ordering::Relaxed).saturating_sub(1) }
}

unsafe extern "C" fn t_machine_type(t: *mut Target, out: *mut u32) -> HResult {
    if out.is_null() {
        return E_FAIL;
    }
    // SAFETY: live target, non-null out.
    unsafe {
        *out = match core(t).machine {
            Machine::X64 => MACHINE_AMD64,
            Machine::Arm64 => MACHINE_ARM64,
        };
    }
    S_OK
}

unsafe extern "C" fn t_pointer_size(_t: *mut Target, out: *mut u32) -> HResult {
    if out.is_null() {
        return E_FAIL;
    }
    // SAFETY: non-null out.
    unsafe { *out = 8 };
    S_OK
}

unsafe extern "C" fn t_image_base(t: *mut Target, name: *const u16, out: *mut u64) -> HResult {
    if name.is_null() || out.is_null() {
        return E_FAIL;
    }
    // SAFETY: a NUL-terminated UTF-16 string from the library; bounded at 4096 units.
    let name = unsafe {
        let mut n = 0;
        while n < 4096 && *name.add(n) != 0 {
            n += 1;
        }
        String::from_utf16_lossy(std::slice::from_raw_parts(name, n))
    };
    // SAFETY: live target, non-null out.
    unsafe {
        match core(t).image_base(&name) {
            Some(base) => {
                *out = base;
                S_OK
            }
            None => E_FAIL,
        }
    }
}

unsafe extern "C" fn t_read_virtual(
    t: *mut Target,
    addr: u64,
    buf: *mut u8,
    want: u32,
    got: *mut u32,
) -> HResult {
    if buf.is_null() {
        return E_FAIL;
    }
    // SAFETY: the library gives a buffer of `want` bytes.
    let n = unsafe {
        let buf = std::slice::from_raw_parts_mut(buf, want as usize);
        core(t).read_virtual(addr, buf)
    };
    if !got.is_null() {
        // SAFETY: non-null out.
        unsafe { *got = n as u32 };
    }
    if n == 0 && want > 0 {
        E_FAIL
    } else {
        S_OK
    }
}

unsafe extern "C" fn t_write_virtual(
    _t: *mut Target,
    _addr: u64,
    _buf: *const u8,
    _n: u32,
    _done: *mut u32,
) -> HResult {
    E_NOTIMPL
}

unsafe extern "C" fn t_get_tls(_t: *mut Target, _tid: u32, _i: u32, _out: *mut u64) -> HResult {
    E_NOTIMPL
}

unsafe extern "C" fn t_set_tls(_t: *mut Target, _tid: u32, _i: u32, _v: u64) -> HResult {
    E_NOTIMPL
}

unsafe extern "C" fn t_current_thread(t: *mut Target, out: *mut u32) -> HResult {
    if out.is_null() {
        return E_FAIL;
    }
    // SAFETY: live target, non-null out.
    unsafe {
        match core(t).threads.first() {
            Some(th) => {
                *out = th.tid;
                S_OK
            }
            None => E_FAIL,
        }
    }
}

unsafe extern "C" fn t_thread_context(
    t: *mut Target,
    tid: u32,
    flags: u32,
    size: u32,
    out: *mut u8,
) -> HResult {
    if out.is_null() {
        return E_FAIL;
    }
    // SAFETY: live target; the library gives `size` writable bytes.
    unsafe {
        let core = core(t);
        let Some(th) = core.threads.iter().find(|th| th.tid == tid) else {
            return E_FAIL;
        };
        let buf = std::slice::from_raw_parts_mut(out, size as usize);
        if fill_context(core.machine, &th.regs, flags, buf) {
            S_OK
        } else {
            E_FAIL
        }
    }
}

/// Writes `regs` (the kernel's order) into `buf` in the runtime's `CONTEXT` layout; false when
/// `buf` is too small for the registers.
pub(crate) fn fill_context(machine: Machine, regs: &[u64], flags: u32, buf: &mut [u8]) -> bool {
    let reg = |i: usize| regs.get(i).copied().unwrap_or(0);
    let put = |buf: &mut [u8], at: usize, v: &[u8]| -> bool {
        match buf.get_mut(at..at + v.len()) {
            Some(s) => {
                s.copy_from_slice(v);
                true
            }
            None => false,
        }
    };
    buf.fill(0);
    match machine {
        Machine::X64 => {
            // user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
            // orig_rax rip cs eflags rsp ss ...
            let places: [(usize, usize); 17] = [
                (0x78, 10),
                (0x80, 11),
                (0x88, 12),
                (0x90, 5),
                (0x98, 19),
                (0xa0, 4),
                (0xa8, 13),
                (0xb0, 14),
                (0xb8, 9),
                (0xc0, 8),
                (0xc8, 7),
                (0xd0, 6),
                (0xd8, 3),
                (0xe0, 2),
                (0xe8, 1),
                (0xf0, 0),
                (0xf8, 16),
            ];
            let mut ok = put(buf, 0x30, &(flags | 0x0010_0000).to_le_bytes());
            ok &= put(buf, 0x38, &(reg(17) as u16).to_le_bytes());
            ok &= put(buf, 0x42, &(reg(20) as u16).to_le_bytes());
            ok &= put(buf, 0x44, &(reg(18) as u32).to_le_bytes());
            for (at, i) in places {
                ok &= put(buf, at, &reg(i).to_le_bytes());
            }
            ok
        }
        Machine::Arm64 => {
            // x0..x30, sp, pc, pstate.
            let mut ok = put(buf, 0, &(flags | 0x0040_0000).to_le_bytes());
            ok &= put(buf, 4, &(reg(33) as u32).to_le_bytes());
            for i in 0..31 {
                ok &= put(buf, 8 + 8 * i, &reg(i).to_le_bytes());
            }
            ok &= put(buf, 0x100, &reg(31).to_le_bytes());
            ok &= put(buf, 0x108, &reg(32).to_le_bytes());
            ok
        }
    }
}

unsafe extern "C" fn t_set_thread_context(
    _t: *mut Target,
    _tid: u32,
    _size: u32,
    _ctx: *const u8,
) -> HResult {
    E_NOTIMPL
}

unsafe extern "C" fn t_request(
    _t: *mut Target,
    _code: u32,
    _in_size: u32,
    _input: *const u8,
    _out_size: u32,
    _out: *mut u8,
) -> HResult {
    E_NOTIMPL
}

unsafe extern "C" fn l_query_interface(
    l: *mut Locator,
    iid: *const Guid,
    out: *mut *mut c_void,
) -> HResult {
    // SAFETY: a live locator inside a live target.
    unsafe { t_query_interface((*l).target, iid, out) }
}

unsafe extern "C" fn l_add_ref(l: *mut Locator) -> u32 {
    // SAFETY: as above.
    unsafe { t_add_ref((*l).target) }
}

unsafe extern "C" fn l_release(l: *mut Locator) -> u32 {
    // SAFETY: as above.
    unsafe { t_release((*l).target) }
}

unsafe extern "C" fn l_runtime_base(l: *mut Locator, out: *mut u64) -> HResult {
    if out.is_null() {
        return E_FAIL;
    }
    // SAFETY: as above; non-null out.
    unsafe {
        *out = (*(*l).target).runtime_base;
    }
    S_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_land_where_the_runtime_reads_them() {
        let regs: Vec<u64> = (0..27).map(|i| 0x100 + i).collect();
        let mut buf = vec![0u8; 0xC20];
        assert!(fill_context(Machine::X64, &regs, 0xB, &mut buf));
        let at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().unwrap());
        assert_eq!(at(0xf8), 0x100 + 16, "rip");
        assert_eq!(at(0x98), 0x100 + 19, "rsp");
        assert_eq!(at(0xa0), 0x100 + 4, "rbp");
        assert_eq!(
            u32::from_le_bytes(buf[0x30..0x34].try_into().unwrap()),
            0x10_000B
        );
        let mut small = vec![0u8; 0x40];
        assert!(!fill_context(Machine::X64, &regs, 0xB, &mut small));
        let regs: Vec<u64> = (0..34).map(|i| 0x200 + i).collect();
        let mut buf = vec![0u8; 0x3E0];
        assert!(fill_context(Machine::Arm64, &regs, 7, &mut buf));
        let at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().unwrap());
        assert_eq!(
            (at(0x108), at(0x100), at(0xf0)),
            (0x200 + 32, 0x200 + 31, 0x200 + 29)
        );
    }
}
