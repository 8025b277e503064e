//! Native frames by what they are (`--native group|show|fold`): the kernel's sampler walks
//! through the runtime, the JIT, libc and native libraries, and their stripped functions
//! (`libclrjit.so!+0x3a1f0`, a hundred rows of 1 % each) say nothing to a .NET developer. By
//! default each run of native frames between managed ones is one frame named by the role
//! of the module that did the work: `[JIT compiler: libclrjit.so]`, a native library's own
//! function when its symbols name it (`libcrypto.so.3!SHA256_Update`, else `[native:
//! libfoo.so]`), `[vdso: clock_gettime]`, `[runtime: libcoreclr.so]`, `[libc: send]`.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::symbols::{FrameId, FrameKind, Symbols, RUNTIME_STUBS, UNNAMED_JIT_CODE};

/// The group of code at addresses no module or method covers.
const UNKNOWN_CODE: &str = "[unknown code]";

/// How native frames are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NativeView {
    /// Each run of native frames as one frame named by its role (the default).
    #[default]
    Group,
    /// Every native frame as it is.
    Show,
    /// Runs of native frames called from managed (or unnamed) code left out: their time is
    /// the caller's. A run nothing called (a thread's start, a native thread) stays grouped.
    Fold,
}

impl NativeView {
    /// The view a `--native` value names (`group`, `show`, `fold`).
    pub fn from_name(name: &str) -> Option<NativeView> {
        match name {
            "group" => Some(NativeView::Group),
            "show" => Some(NativeView::Show),
            "fold" => Some(NativeView::Fold),
            _ => None,
        }
    }
}

/// What a native module is to the reader, from the one that names a run least (`Bare`) to
/// the one that names it most (`Jit`): a run is named by its highest role, a frame with a
/// function's name over one without on a tie, then the leaf-most.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// Frames without a module (`[native]` in traces without module maps, code at an
    /// address no module covers).
    Bare,
    /// The C library and its family (libc, libpthread, libm, the loader, libstdc++, libgcc).
    Libc,
    /// The runtime: libcoreclr, the GC, the host, the framework's native shims
    /// (`libSystem.*.so`).
    Runtime,
    /// The kernel's virtual library (`clock_gettime`, `gettimeofday`): reading the clock,
    /// whoever asked (`Stopwatch`, through libSystem.Native and libc).
    Vdso,
    /// Any other native library: the app's own, OpenSSL, ICU, zlib.
    Library,
    /// The JIT compiler.
    Jit,
}

/// The module and function of a native frame's name (`libc.so.6!read`, `libclrjit.so!+0x10`):
/// the function is None where only an offset is known.
fn split(name: &str) -> Option<(&str, Option<&str>)> {
    let (module, func) = name.split_once('!')?;
    let named = !func.is_empty() && !func.starts_with("+0x");
    // `GetCLRRuntimeHost+0x36920`: the nearest exported symbol of a stripped library is
    // not the function's name.
    let named = named && !func.contains("+0x");
    Some((module, named.then_some(func)))
}

/// A C library function without the glibc's internal prefixes (`__libc_send` is `send`,
/// `__GI___lll_lock_wait` is `lll_lock_wait`).
fn libc_name(f: &str) -> &str {
    let f = f.strip_prefix("__GI_").unwrap_or(f);
    let f = f.strip_prefix("__libc_").unwrap_or(f);
    let f = f.trim_start_matches('_');
    if f.is_empty() {
        "?"
    } else {
        f
    }
}

/// A managed assembly's file (`.dll`, `.exe`): its code is precompiled managed code.
fn is_managed_image(module: &str) -> bool {
    let m = module.to_ascii_lowercase();
    m.ends_with(".dll") || m.ends_with(".exe")
}

fn role(module: &str) -> Role {
    let m = module;
    if m == "libclrjit.so" || (m.starts_with("libclrjit") && m.ends_with(".so")) {
        return Role::Jit;
    }
    if m == "[vdso]" || m.starts_with("linux-vdso") {
        return Role::Vdso;
    }
    const LIBC: &[&str] = &[
        "libc.so",
        "libc-",
        "libpthread",
        "libm.so",
        "libm-",
        "libdl",
        "librt",
        "ld-linux",
        "ld-musl",
        "libc.musl",
        "libstdc++",
        "libgcc_s",
    ];
    if LIBC.iter().any(|p| m.starts_with(p)) {
        return Role::Libc;
    }
    const RUNTIME: &[&str] = &[
        "libcoreclr",
        "libclrgc",
        "libhostfxr",
        "libhostpolicy",
        "libmscordaccore",
        "libmscordbi",
        "libSystem.",
        "libcoreclrtraceptprovider",
    ];
    // The host that started the runtime (`dotnet`, an app's own apphost is its name).
    if m == "dotnet" || m == "createdump" || RUNTIME.iter().any(|p| m.starts_with(p)) {
        return Role::Runtime;
    }
    Role::Library
}

/// Each native frame's role and the frame its run is named by when that role wins the run.
#[derive(Clone, Debug, Default)]
pub(crate) struct NativeGroups {
    /// By frame id: the role and the group frame, for the native frames known when built.
    by_frame: Vec<Option<(Role, bool, FrameId)>>,
    /// The frames a run of native work is shown as (groups, a library's own functions) and
    /// the runtime's unnamed code: where a report says which managed method paid.
    work: FxHashSet<FrameId>,
    /// The C library's wrappers of the vDSO's functions (`clock_gettime`): the vDSO group
    /// of the same name, for a run whose vDSO frame is one of its unexported helpers.
    vdso_callers: FxHashMap<FrameId, FrameId>,
}

/// The functions the vDSO exports, as the C library's wrappers of them are named.
const VDSO_FUNCTIONS: &[&str] = &[
    "clock_gettime",
    "gettimeofday",
    "time",
    "clock_getres",
    "getcpu",
    "sched_getcpu",
    "getrandom",
];

/// The vDSO function a C library function wraps (`__clock_gettime_2` → `clock_gettime`).
fn vdso_wrapped(libc_function: &str) -> Option<&'static str> {
    let f = libc_name(libc_function);
    let f = f.strip_suffix("_2").unwrap_or(f);
    VDSO_FUNCTIONS.iter().copied().find(|v| *v == f)
}

impl NativeGroups {
    /// Interns the group frames of every native frame `symbols` holds (after every stack's
    /// addresses were resolved).
    pub(crate) fn build(symbols: &mut Symbols) -> NativeGroups {
        let n = symbols.frame_count();
        let mut by_frame = vec![None; n];
        let mut work = FxHashSet::default();
        let mut vdso_callers = FxHashMap::default();
        for (i, slot) in by_frame.iter_mut().enumerate() {
            let id = FrameId(i as u32);
            let frame = symbols.frame(id);
            if frame.name == RUNTIME_STUBS || frame.name == UNNAMED_JIT_CODE {
                work.insert(id);
            }
            // Code at addresses no module or method covers (stubs the runtime mapped after
            // the recording read the process's maps): one frame, not one per address.
            if frame.kind == FrameKind::Unknown && frame.name.starts_with("[unknown 0x") {
                let group = symbols.synthetic(UNKNOWN_CODE);
                work.insert(group);
                *slot = Some((Role::Bare, false, group));
                continue;
            }
            if frame.kind != FrameKind::Native {
                continue;
            }
            let Some((module, func)) = split(&frame.name) else {
                // A synthetic frame (`[native]`, `[runtime: tiered JIT]`): itself.
                *slot = Some((Role::Bare, false, id));
                continue;
            };
            // Precompiled managed code no name was found for (`System.Private.CoreLib.dll!+0x…`)
            // is managed code, no native work: shown as it is, between runs.
            if is_managed_image(module) {
                continue;
            }
            let r = role(module);
            let named = func.is_some();
            let wraps_vdso = func.filter(|_| r == Role::Libc).and_then(vdso_wrapped);
            let name = match (r, func) {
                (Role::Jit, _) => format!("[JIT compiler: {module}]"),
                (Role::Runtime, _) => format!("[runtime: {module}]"),
                // The C library's function is the system call a thread made (send, accept4,
                // epoll_ctl, a futex wait): the one thing its row can tell.
                (Role::Libc, Some(f)) => format!("[libc: {}]", libc_name(f)),
                (Role::Libc, None) => "[libc]".to_string(),
                (Role::Vdso, Some(f)) => {
                    format!("[vdso: {}]", f.strip_prefix("__vdso_").unwrap_or(f))
                }
                (Role::Vdso, None) => "[vdso]".to_string(),
                (Role::Library, Some(_)) => {
                    *slot = Some((r, true, id));
                    work.insert(id);
                    continue;
                }
                (Role::Library, None) | (Role::Bare, _) => format!("[native: {module}]"),
            };
            let group = symbols.synthetic(&name);
            work.insert(group);
            *slot = Some((r, named, group));
            if let Some(v) = wraps_vdso {
                let vdso = symbols.synthetic(&format!("[vdso: {v}]"));
                work.insert(vdso);
                vdso_callers.insert(id, vdso);
            }
        }
        NativeGroups {
            by_frame,
            work,
            vdso_callers,
        }
    }

    /// True for a frame that stands for native work or the runtime's unnamed code (a group,
    /// a library's function, `[runtime stubs and helpers]`), not for a thread's role or an
    /// idle wait.
    pub(crate) fn is_work(&self, f: FrameId) -> bool {
        self.work.contains(&f)
    }

    fn of(&self, f: FrameId, symbols: &Symbols) -> Option<(Role, bool, FrameId)> {
        match self.by_frame.get(f.0 as usize) {
            Some(known) => *known,
            // A frame named after the groups were built: shown as it is.
            None => (symbols.frame(f).kind == FrameKind::Native).then_some((Role::Bare, false, f)),
        }
    }

    /// `frames` (leaf first) as `view` shows them.
    pub(crate) fn apply(
        &self,
        frames: Vec<FrameId>,
        symbols: &Symbols,
        view: NativeView,
    ) -> Vec<FrameId> {
        if view == NativeView::Show {
            return frames;
        }
        let mut out = Vec::with_capacity(frames.len());
        let mut i = 0;
        while i < frames.len() {
            let Some(first) = self.of(frames[i], symbols) else {
                out.push(frames[i]);
                i += 1;
                continue;
            };
            // The run from i: its best role, the leaf-most frame of it on a tie.
            let mut best = first;
            let mut j = i + 1;
            while let Some(g) = frames.get(j).and_then(|&f| self.of(f, symbols)) {
                if (g.0, g.1) > (best.0, best.1) {
                    best = g;
                }
                j += 1;
            }
            // The vDSO's unexported helpers (its clock read) are named by the C library's
            // function that called into it.
            if best.0 == Role::Vdso && !best.1 {
                if let Some(&g) = frames[i..j].iter().find_map(|f| self.vdso_callers.get(f)) {
                    best.2 = g;
                }
            }
            let called = j < frames.len();
            if !(view == NativeView::Fold && called) {
                out.push(best.2);
            }
            i = j;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_have_their_roles() {
        assert_eq!(role("libclrjit.so"), Role::Jit);
        assert_eq!(role("libcoreclr.so"), Role::Runtime);
        assert_eq!(role("libSystem.Native.so"), Role::Runtime);
        assert_eq!(role("dotnet"), Role::Runtime);
        assert_eq!(role("libc.so.6"), Role::Libc);
        assert_eq!(role("ld-linux-x86-64.so.2"), Role::Libc);
        assert_eq!(role("libstdc++.so.6"), Role::Libc);
        assert_eq!(role("[vdso]"), Role::Vdso);
        assert_eq!(role("libcrypto.so.3"), Role::Library);
        assert_eq!(role("libSkiaSharp.so"), Role::Library);
        assert_eq!(role("dotnet-foo.so"), Role::Library);
        assert!(Role::Jit > Role::Library && Role::Library > Role::Vdso);
        assert!(Role::Vdso > Role::Runtime && Role::Runtime > Role::Libc);
        assert!(is_managed_image("System.Private.CoreLib.dll") && !is_managed_image("libc.so.6"));
    }

    /// Leaf first: the clock read through libSystem.Native and libc (the vDSO's function and
    /// an unnamed one inside it), a managed frame, the runtime calling the JIT, a managed frame,
    /// and libc at the thread's root.
    #[test]
    fn a_run_is_named_by_its_highest_role() {
        let mut s = Symbols::new();
        let mut f = |n: &str| s.synthetic(n);
        let stack = vec![
            f("[vdso]!+0x7a0"),
            f("[vdso]!__vdso_clock_gettime"),
            f("libc.so.6!clock_gettime"),
            f("libSystem.Native.so!SystemNative_GetTimestamp"),
            FrameId(u32::MAX),
            f("libcoreclr.so!GetCLRRuntimeHost+0x20"),
            f("libclrjit.so!+0x10"),
            f("libcoreclr.so!GetCLRRuntimeHost+0x90"),
            FrameId(u32::MAX),
            f("libc.so.6!start_thread"),
        ];
        let g = NativeGroups::build(&mut s);
        let names = |v: Vec<FrameId>| -> Vec<String> {
            v.iter().map(|&f| s.frame(f).name.clone()).collect()
        };
        assert_eq!(
            names(g.apply(stack.clone(), &s, NativeView::Group)),
            [
                "[vdso: clock_gettime]",
                "",
                "[JIT compiler: libclrjit.so]",
                "",
                "[libc: start_thread]"
            ]
        );
        // Folded, a run something calls is its caller's; the thread's root stays.
        assert_eq!(
            names(g.apply(stack.clone(), &s, NativeView::Fold)),
            ["", "", "[libc: start_thread]"]
        );
        assert_eq!(g.apply(stack.clone(), &s, NativeView::Show), stack);
        assert!(g.is_work(g.apply(stack, &s, NativeView::Group)[0]));
    }

    /// The vDSO's clock read is an unexported helper when the kernel's walk lands in it: the
    /// run is named by the C library's function that called into the vDSO, as the vDSO's.
    #[test]
    fn an_unnamed_vdso_helper_is_named_by_its_libc_caller() {
        let mut s = Symbols::new();
        let mut f = |n: &str| s.synthetic(n);
        let helper = vec![
            f("[vdso]!+0x7a0"),
            f("libc.so.6!__clock_gettime_2"),
            FrameId(u32::MAX),
        ];
        let alone = vec![f("[vdso]!+0x7a0"), FrameId(u32::MAX)];
        let g = NativeGroups::build(&mut s);
        let name = |v: Vec<FrameId>| s.frame(v[0]).name.clone();
        assert_eq!(
            name(g.apply(helper, &s, NativeView::Group)),
            "[vdso: clock_gettime]"
        );
        assert_eq!(name(g.apply(alone, &s, NativeView::Group)), "[vdso]");
        assert_eq!(vdso_wrapped("__GI___clock_gettime"), Some("clock_gettime"));
        assert_eq!(vdso_wrapped("send"), None);
    }

    #[test]
    fn libc_functions_lose_glibcs_prefixes() {
        assert_eq!(libc_name("__libc_send"), "send");
        assert_eq!(libc_name("__GI___lll_lock_wait"), "lll_lock_wait");
        assert_eq!(libc_name("__GI_shutdown"), "shutdown");
        assert_eq!(libc_name("accept4"), "accept4");
        assert_eq!(libc_name("__"), "?");
    }

    #[test]
    fn names_split_into_module_and_function() {
        assert_eq!(split("libc.so.6!read"), Some(("libc.so.6", Some("read"))));
        assert_eq!(split("libclrjit.so!+0x1f"), Some(("libclrjit.so", None)));
        assert_eq!(
            split("libcoreclr.so!GetCLRRuntimeHost+0x36920"),
            Some(("libcoreclr.so", None))
        );
        assert_eq!(split("[native]"), None);
    }
}
