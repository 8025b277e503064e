//! Models added to the registry since the first six: mostly of self-describing (EventSource)
//! providers, read by provider and event name and decoded by their metadata's field layout —
//! ASP.NET Core requests, Kestrel connections, outgoing HTTP requests, counters and metrics,
//! logs, socket connects, name resolutions and TLS handshakes. A model is a file here (its
//! struct, `impl Model`, and a `pub const ENTRY`) and its name in the `models!` list below,
//! which declares the module and registers the entry; what the model files share is in
//! `shared` (a leaf: the files import it, never this module), and the kernel sampler's
//! events a model holds for late lookups in `kernel_bits` (a leaf too), and the Kestrel
//! connections the requests model ties requests to in `kestrel_links` (a leaf).

use crate::model_entry::ModelEntry;

/// Declares each model's module and lists their entries, in order.
macro_rules! models {
    ($($m:ident),* $(,)?) => {
        $(pub mod $m;)*
        /// The entries of the models in this folder, in the registry's order.
        pub(crate) const ENTRIES: [ModelEntry; [$(stringify!($m)),*].len()] = [$($m::ENTRY),*];
    };
}

#[rustfmt::skip]
models!(
    requests,
    connections,
    counters,
    logs,
    net,
    http,
    loader,
    hangs,
    lines,
);

mod kernel_bits;
mod kestrel_links;
mod shared;

#[cfg(test)]
mod tests;
