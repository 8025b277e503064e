//! The little of COM the data access library needs: GUIDs, HRESULTs, and calling a method of
//! an interface pointer by its vtable slot.

use std::ffi::c_void;

/// A COM result code.
pub(crate) type HResult = i32;
pub(crate) const S_OK: HResult = 0;
pub(crate) const E_NOTIMPL: HResult = 0x8000_4001_u32 as i32;
pub(crate) const E_NOINTERFACE: HResult = 0x8000_4002_u32 as i32;
pub(crate) const E_FAIL: HResult = 0x8000_4005_u32 as i32;

/// A GUID as COM lays it out.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Guid {
    d1: u32,
    d2: u16,
    d3: u16,
    d4: [u8; 8],
}

impl Guid {
    pub(crate) const fn new(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> Guid {
        Guid { d1, d2, d3, d4 }
    }
}

/// An interface pointer the library gave; released when dropped.
pub(crate) struct Iface(*mut c_void);

impl Iface {
    /// Takes ownership of a pointer the library returned (None for null).
    pub(crate) fn from_raw(p: *mut c_void) -> Option<Iface> {
        (!p.is_null()).then(|| Iface(p))
    }

    /// The raw pointer, for passing as `this`.
    pub(crate) fn raw(&self) -> *mut c_void {
        self.0
    }

    /// The function in vtable slot `i`.
    ///
    /// # Safety
    /// The interface's vtable has more than `i` slots.
    pub(crate) unsafe fn slot(&self, i: usize) -> *const c_void {
        // SAFETY: a COM object starts with its vtable pointer; the caller names a real slot.
        unsafe {
            let vtbl = *(self.0 as *const *const *const c_void);
            *vtbl.add(i)
        }
    }

    /// `QueryInterface` for `iid`.
    pub(crate) fn query(&self, iid: &Guid) -> Option<Iface> {
        type Qi = unsafe extern "C" fn(*mut c_void, *const Guid, *mut *mut c_void) -> HResult;
        let mut out = std::ptr::null_mut();
        // SAFETY: slot 0 of every COM interface is QueryInterface.
        let hr = unsafe {
            let f: Qi = std::mem::transmute(self.slot(0));
            f(self.0, iid, &mut out)
        };
        if hr < 0 {
            return None;
        }
        Iface::from_raw(out)
    }
}

impl Drop for Iface {
    fn drop(&mut self) {
        type Release = unsafe extern "C" fn(*mut c_void) -> u32;
        // SAFETY: slot 2 of every COM interface is Release; we own one reference.
        unsafe {
            let f: Release = std::mem::transmute(self.slot(2));
            f(self.0);
        }
    }
}

/// Calls slot `$slot` of `$iface` with `fn(this, args...) -> HResult` of the given argument
/// types.
macro_rules! com_call {
    ($iface:expr, $slot:expr, ($($ty:ty),*), ($($arg:expr),*)) => {{
        type F = unsafe extern "C" fn(*mut std::ffi::c_void $(, $ty)*) -> $crate::dac::com::HResult;
        let iface: &$crate::dac::com::Iface = $iface;
        // SAFETY: the slot and its signature are the interface's, as the runtime's IDL lists
        // them; the arguments are valid for the call.
        unsafe {
            let f: F = std::mem::transmute(iface.slot($slot));
            f(iface.raw() $(, $arg)*)
        }
    }};
}
pub(crate) use com_call;
