//! What `clrspy --version` says of the build (set by `build.rs`).

/// `clrspy -V`: the version and the commit.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CLRSPY_BUILD_COMMIT"),
    " ",
    env!("CLRSPY_BUILD_DATE"),
    ")"
);

/// `clrspy --version`: the version, the commit, the date, the target and what was built in.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit:   ",
    env!("CLRSPY_BUILD_COMMIT"),
    "\nbuilt:    ",
    env!("CLRSPY_BUILD_DATE"),
    " (",
    env!("CLRSPY_BUILD_PROFILE"),
    ")\ntarget:   ",
    env!("CLRSPY_BUILD_TARGET"),
    "\nfeatures: kernel sampler (perf_event_open), dump analysis (the runtime's libmscordaccore.so), agent (HTTPS, JWT)",
    "\nneeds:    Linux x86_64/arm64, ",
    env!("CLRSPY_GLIBC")
);
