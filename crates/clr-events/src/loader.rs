//! Typed views of the runtime's assembly-loading events: the `AssemblyLoader` keyword (0x4,
//! .NET 5+: each load's start and stop with its load context, each resolution stage tried,
//! the resolving handlers that ran, the files probed) and the `Loader` keyword's
//! `Loader/AssemblyLoad` (0x8: every assembly, with its flags). Field order and the value
//! maps (resolution stage and result, probe source) follow the runtime's manifest; each map
//! keeps an `Other` for values this crate does not know.
//!
//! ```
//! use clr_events::loader::{ids, KnownPathProbed, ProbeSource};
//! let mut p = 0u16.to_le_bytes().to_vec();
//! p.extend("/app/a.dll".encode_utf16().flat_map(u16::to_le_bytes));
//! p.extend([0, 0]);
//! p.extend(2u16.to_le_bytes());
//! p.extend(0x8007_0002u32.to_le_bytes());
//! let e = KnownPathProbed::parse(&p, 0, 8).unwrap();
//! assert_eq!(e.path.to_string(), "/app/a.dll");
//! assert_eq!((e.source, e.result), (ProbeSource::AppPaths, 0x8007_0002));
//! assert_eq!(ids::KNOWN_PATH_PROBED, 296);
//! assert!(KnownPathProbed::parse(&p[..4], 0, 8).is_err());
//! ```

use std::fmt;

use crate::view::{Cursor, Utf16Str, ViewError};
use crate::KnownProvider;

/// Event ids of the loading events of `Microsoft-Windows-DotNETRuntime`.
pub mod ids {
    /// Loader/AssemblyLoad (`AssemblyLoad_V1`).
    pub const ASSEMBLY_LOAD: u32 = 154;
    /// AssemblyLoader/Start (`AssemblyLoadStart`).
    pub const ASSEMBLY_LOAD_START: u32 = 290;
    /// AssemblyLoader/Stop (`AssemblyLoadStop`).
    pub const ASSEMBLY_LOAD_STOP: u32 = 291;
    /// AssemblyLoader/ResolutionAttempted.
    pub const RESOLUTION_ATTEMPTED: u32 = 292;
    /// AssemblyLoader/AssemblyLoadContextResolvingHandlerInvoked.
    pub const ALC_RESOLVING_HANDLER_INVOKED: u32 = 293;
    /// AssemblyLoader/AppDomainAssemblyResolveHandlerInvoked.
    pub const APP_DOMAIN_RESOLVE_HANDLER_INVOKED: u32 = 294;
    /// AssemblyLoader/AssemblyLoadFromResolveHandlerInvoked.
    pub const LOAD_FROM_RESOLVE_HANDLER_INVOKED: u32 = 295;
    /// AssemblyLoader/KnownPathProbed.
    pub const KNOWN_PATH_PROBED: u32 = 296;
}

fn rt<'a>(id: u32, version: u8, p: &'a [u8], ptr: u8) -> Result<Cursor<'a>, ViewError> {
    Cursor::for_event(KnownProvider::Runtime, id, version, p, ptr)
}

/// Declares a value map: an enum with the manifest's names, `Other` for the rest.
macro_rules! value_map {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $v:ident = $n:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $v,)*
            /// A value this crate does not know.
            Other(u16),
        }

        impl $name {
            /// The value's meaning.
            pub(crate) fn from_u16(v: u16) -> $name {
                match v {
                    $($n => $name::$v,)*
                    _ => $name::Other(v),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($name::$v => f.write_str(stringify!($v)),)*
                    $name::Other(v) => write!(f, "{v}"),
                }
            }
        }
    };
}

value_map!(
    /// Which stage of resolving an assembly name a `ResolutionAttempted` reports.
    ResolutionStage {
        /// Looked up among the assemblies already in the load context.
        FindInLoadContext = 0,
        /// The context's own `AssemblyLoadContext.Load`.
        AssemblyLoadContextLoad = 1,
        /// The app's assemblies (the trusted platform assemblies and app paths).
        ApplicationAssemblies = 2,
        /// Fell back to the default load context.
        DefaultAssemblyLoadContextFallback = 3,
        /// A satellite (resource) assembly next to its parent.
        ResolveSatelliteAssembly = 4,
        /// An `AssemblyLoadContext.Resolving` handler.
        AssemblyLoadContextResolvingEvent = 5,
        /// An `AppDomain.AssemblyResolve` handler.
        AppDomainAssemblyResolveEvent = 6,
    }
);

value_map!(
    /// What a resolution stage came to.
    ResolutionResult {
        /// Found.
        Success = 0,
        /// Nothing by that name.
        AssemblyNotFound = 1,
        /// Found, at a version lower than asked for.
        IncompatibleVersion = 2,
        /// Found a file whose assembly name is not the one asked for.
        MismatchedAssemblyName = 3,
        /// Failed (see the error message).
        Failure = 4,
        /// A handler threw.
        Exception = 5,
    }
);

value_map!(
    /// Where a probed path came from (`KnownPathProbed`).
    ProbeSource {
        /// The app's assembly list (trusted platform assemblies).
        ApplicationAssemblies = 0,
        /// The app's native image paths.
        AppNativeImagePaths = 1,
        /// The app's paths (`APP_PATHS`).
        AppPaths = 2,
        /// The platform's resource roots.
        PlatformResourceRoots = 3,
        /// A culture's subfolder (satellite assemblies).
        SatelliteSubdirectory = 4,
    }
);

/// `AssemblyLoader/Start`: a load was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblyLoadStart<'a> {
    /// The name asked for.
    pub name: Utf16Str<'a>,
    /// The path asked for (loads by path), else empty.
    pub path: Utf16Str<'a>,
    /// The assembly that asked (empty when unknown).
    pub requesting_assembly: Utf16Str<'a>,
    /// The load context it is loaded into (`Default`, or `"name" Type #N`).
    pub load_context: Utf16Str<'a>,
    /// The requesting assembly's load context.
    pub(crate) requesting_load_context: Utf16Str<'a>,
}

impl<'a> AssemblyLoadStart<'a> {
    /// Parses `AssemblyLoader/Start` (runtime event 290).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::ASSEMBLY_LOAD_START, version, payload, pointer_size)?;
        Ok(AssemblyLoadStart {
            name: c.str("AssemblyName")?,
            path: c.str("AssemblyPath")?,
            requesting_assembly: c.str("RequestingAssembly")?,
            load_context: c.str("AssemblyLoadContext")?,
            requesting_load_context: c.str("RequestingAssemblyLoadContext")?,
        })
    }
}

/// `AssemblyLoader/Stop`: a load ended, loaded or failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblyLoadStop<'a> {
    /// The start's fields.
    pub start: AssemblyLoadStart<'a>,
    /// Loaded.
    pub success: bool,
    /// The loaded assembly's name (empty on failure).
    pub result_name: Utf16Str<'a>,
    /// The file it was loaded from (empty on failure, or loaded from memory).
    pub result_path: Utf16Str<'a>,
    /// The context had it cached.
    pub cached: bool,
}

impl<'a> AssemblyLoadStop<'a> {
    /// Parses `AssemblyLoader/Stop` (runtime event 291).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::ASSEMBLY_LOAD_STOP, version, payload, pointer_size)?;
        Ok(AssemblyLoadStop {
            start: AssemblyLoadStart {
                name: c.str("AssemblyName")?,
                path: c.str("AssemblyPath")?,
                requesting_assembly: c.str("RequestingAssembly")?,
                load_context: c.str("AssemblyLoadContext")?,
                requesting_load_context: c.str("RequestingAssemblyLoadContext")?,
            },
            success: c.u64("Success")? != 0,
            result_name: c.str("ResultAssemblyName")?,
            result_path: c.str("ResultAssemblyPath")?,
            cached: c.u64("Cached")? != 0,
        })
    }
}

/// `AssemblyLoader/ResolutionAttempted`: one stage of resolving a name, and its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolutionAttempted<'a> {
    /// The name being resolved.
    pub name: Utf16Str<'a>,
    /// The stage.
    pub stage: ResolutionStage,
    /// The load context the stage ran in.
    pub load_context: Utf16Str<'a>,
    /// Its result.
    pub result: ResolutionResult,
    /// The assembly it found (empty when none).
    pub result_name: Utf16Str<'a>,
    /// The file it found (empty when none).
    pub result_path: Utf16Str<'a>,
    /// Why it failed (empty on success).
    pub error_message: Utf16Str<'a>,
}

impl<'a> ResolutionAttempted<'a> {
    /// Parses `AssemblyLoader/ResolutionAttempted` (runtime event 292).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::RESOLUTION_ATTEMPTED, version, payload, pointer_size)?;
        let name = c.str("AssemblyName")?;
        let stage = ResolutionStage::from_u16(c.u32("Stage")? as u16);
        let load_context = c.str("AssemblyLoadContext")?;
        let result = ResolutionResult::from_u16(c.u32("Result")? as u16);
        Ok(ResolutionAttempted {
            name,
            stage,
            load_context,
            result,
            result_name: c.str("ResultAssemblyName")?,
            result_path: c.str("ResultAssemblyPath")?,
            error_message: c.str("ErrorMessage")?,
        })
    }
}

/// A resolving handler ran: `AssemblyLoadContextResolvingHandlerInvoked` (an
/// `AssemblyLoadContext.Resolving` handler, with its context) or
/// `AppDomainAssemblyResolveHandlerInvoked` (an `AppDomain.AssemblyResolve` handler, none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResolveHandlerInvoked<'a> {
    /// The name being resolved.
    pub name: Utf16Str<'a>,
    /// The handler's method name.
    pub handler: Utf16Str<'a>,
    /// The load context (empty for an `AppDomain.AssemblyResolve` handler).
    pub load_context: Utf16Str<'a>,
    /// The assembly it returned (empty or `NULL` when none).
    pub result_name: Utf16Str<'a>,
    /// The file of the assembly it returned.
    pub result_path: Utf16Str<'a>,
}

impl<'a> ResolveHandlerInvoked<'a> {
    /// Parses event `id`: 293 (`AssemblyLoadContextResolvingHandlerInvoked`) or 294
    /// (`AppDomainAssemblyResolveHandlerInvoked`).
    pub fn parse(
        id: u32,
        payload: &'a [u8],
        version: u8,
        pointer_size: u8,
    ) -> Result<Self, ViewError> {
        let mut c = rt(id, version, payload, pointer_size)?;
        let name = c.str("AssemblyName")?;
        let handler = c.str("HandlerName")?;
        let load_context = c.opt_str("AssemblyLoadContext")?.unwrap_or_default();
        Ok(ResolveHandlerInvoked {
            name,
            handler,
            load_context,
            result_name: c.str("ResultAssemblyName")?,
            result_path: c.str("ResultAssemblyPath")?,
        })
    }

    /// The handler returned an assembly.
    pub fn resolved(&self) -> bool {
        !self.result_name.is_empty() && !self.result_name.eq_str("NULL")
    }
}

/// `AssemblyLoader/AssemblyLoadFromResolveHandlerInvoked`: the runtime's handler for
/// assemblies loaded with `Assembly.LoadFrom` looked for a dependency next to the requester.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadFromResolveHandlerInvoked<'a> {
    /// The name being resolved.
    pub name: Utf16Str<'a>,
    /// The requester was loaded by `LoadFrom` (else the handler did nothing).
    pub tracked: bool,
    /// The requesting assembly's file.
    pub(crate) requesting_path: Utf16Str<'a>,
    /// The file looked for: the name in the requester's folder.
    pub computed_path: Utf16Str<'a>,
}

impl<'a> LoadFromResolveHandlerInvoked<'a> {
    /// Parses runtime event 295.
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(
            ids::LOAD_FROM_RESOLVE_HANDLER_INVOKED,
            version,
            payload,
            pointer_size,
        )?;
        Ok(LoadFromResolveHandlerInvoked {
            name: c.str("AssemblyName")?,
            tracked: c.u64("IsTrackedLoad")? != 0,
            requesting_path: c.str("RequestingAssemblyPath")?,
            computed_path: c.str("ComputedRequestedAssemblyPath")?,
        })
    }
}

/// `AssemblyLoader/KnownPathProbed`: a file the binder looked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownPathProbed<'a> {
    /// The file.
    pub path: Utf16Str<'a>,
    /// Where the path came from.
    pub source: ProbeSource,
    /// The probe's HRESULT (0: found; 0x80070002: no such file).
    pub result: u32,
}

impl<'a> KnownPathProbed<'a> {
    /// Parses `AssemblyLoader/KnownPathProbed` (runtime event 296).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::KNOWN_PATH_PROBED, version, payload, pointer_size)?;
        let path = c.str("FilePath")?;
        let source = ProbeSource::from_u16(c.u32("Source")? as u16);
        // An HRESULT, declared as a signed 32-bit integer.
        let result = c.u64("Result")? as u32;
        Ok(KnownPathProbed {
            path,
            source,
            result,
        })
    }
}

/// `Loader/AssemblyLoad`: an assembly was loaded (the `Loader` keyword; no load context).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssemblyLoad<'a> {
    /// The assembly's id (the `AssemblyID` of `Loader/ModuleLoad`).
    pub assembly_id: u64,
    /// Flags: 0x2 dynamic, 0x4 native image, 0x8 collectible.
    pub flags: u32,
    /// The assembly's full name.
    pub name: Utf16Str<'a>,
}

impl<'a> AssemblyLoad<'a> {
    /// Flag: a dynamic (emitted) assembly.
    #[cfg(test)]
    pub(crate) const DYNAMIC: u32 = 0x2;
    /// Flag: a collectible assembly (its load context can be unloaded).
    pub const COLLECTIBLE: u32 = 0x8;

    /// Parses `Loader/AssemblyLoad` (runtime event 154, versions 0 and 1).
    pub fn parse(payload: &'a [u8], version: u8, pointer_size: u8) -> Result<Self, ViewError> {
        let mut c = rt(ids::ASSEMBLY_LOAD, version, payload, pointer_size)?;
        let assembly_id = c.u64("AssemblyID")?;
        let flags = c.u32("AssemblyFlags")?;
        Ok(AssemblyLoad {
            assembly_id,
            flags,
            name: c.str("FullyQualifiedAssemblyName")?,
        })
    }
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
