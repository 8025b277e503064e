//! The dispatch table of one pass: which models read which (provider, id) or, for
//! self-describing events, (provider, event name), and each metadata row's classification,
//! cached per metadata id.

use clr_events::{known_provider, ViewError};

use crate::event::{Model, ModelKind, Provider, Wanted};
use crate::{model_entry, symbols, Analysis, CLRSPY_PROVIDER, MODELS};

/// Who gets an event: a model, whether it needs the stack, whether the window applies.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Route {
    pub(crate) target: Target,
    pub(crate) stack: bool,
    pub(crate) windowed: bool,
}

/// The models a route can lead to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Symbols,
    Modules,
    Model(ModelKind),
    /// The n-th of [`Analysis::extra`].
    Boxed(usize),
}

/// The routes of one (provider, id).
pub(crate) type Routes = Vec<Route>;

/// How an event's metadata was classified (cached per metadata id).
#[derive(Clone, Debug)]
pub(crate) struct Source {
    /// The metadata row's [`nettrace::Event::metadata_key`]: the same key is the same row.
    key: u64,
    provider_name: String,
    event_id: u32,
    provider: Option<Provider>,
    /// Index into the dispatch table, when some model wants the event.
    routes: Option<usize>,
    /// Why the event's metadata does not fit the definition its models read (clrspy's own
    /// events are self-describing: a trace written with another layout is not misread).
    mismatch: Option<ViewError>,
}

impl Analysis {
    /// One table from (provider, id) — or (provider, event) names for self-describing
    /// events — to the models that read the event; builds the registry's boxed models picked.
    pub(crate) fn build_dispatch(&mut self) {
        let set = self.options.models;
        let add = |a: &mut Analysis, target: Target, wanted: &[Wanted]| {
            for w in wanted {
                let slot = match (w.provider, w.event) {
                    (Provider::Named(p), Some(e)) => a.named.get(&(p, e)).map(|r| r.0),
                    _ => a.dispatch.get(&(w.provider, w.id)).copied(),
                };
                let i = slot.unwrap_or_else(|| {
                    a.routes.push(Vec::new());
                    a.routes.len() - 1
                });
                match (w.provider, w.event) {
                    (Provider::Named(p), Some(e)) => {
                        a.named.insert((p, e), (i, p));
                    }
                    _ => {
                        a.dispatch.insert((w.provider, w.id), i);
                    }
                }
                a.routes[i].push(Route {
                    target,
                    stack: w.stack,
                    windowed: w.windowed,
                });
            }
        };
        add(self, Target::Symbols, symbols::Symbols::EVENTS);
        add(
            self,
            Target::Modules,
            &[Wanted::clrspy(clr_events::clrspy::ids::MODULE_MAP)],
        );
        for (i, entry) in MODELS.iter().enumerate() {
            if !set.contains_index(i) {
                continue;
            }
            let target = match entry.slot {
                model_entry::Slot::Field(kind) => Target::Model(kind),
                model_entry::Slot::Boxed(make) => {
                    let init = model_entry::ModelInit {
                        rows: self.options.rows.as_ref().filter(|r| r.model == entry.name),
                    };
                    let model = make(&init);
                    self.extra.push((i, model));
                    Target::Boxed(self.extra.len() - 1)
                }
            };
            add(self, target, entry.events);
        }
    }

    /// The route of a self-describing event, by its provider's and its own name.
    fn named_route(&self, provider: &str, event: &str) -> Option<(usize, &'static str)> {
        if self.named.is_empty() {
            return None;
        }
        // Keys are &'static str; look up with the event's strings through the map's hasher.
        self.named
            .iter()
            .find(|((p, e), _)| *p == provider && *e == event)
            .or_else(|| {
                self.named
                    .iter()
                    .find(|((p, e), _)| *p == provider && *e == "*")
            })
            .or_else(|| {
                self.named
                    .iter()
                    .find(|((p, e), _)| *p == "*" && *e == event)
            })
            .map(|(_, r)| *r)
    }

    /// The provider and the routes of `ev`'s metadata, classified once per metadata id.
    pub(crate) fn source(&mut self, ev: &nettrace::Event<'_>) -> (Option<Provider>, Option<usize>) {
        let id = ev.metadata.metadata_id;
        let p = ev.provider();
        let event_id = ev.event_id();
        // V6 traces may reuse a metadata id after a flush: check the provider and id too.
        if let Some(s) = self.sources.get(&id) {
            if s.key == ev.metadata_key() || (s.event_id == event_id && s.provider_name == p) {
                let (provider, routes) = (s.provider, s.routes);
                if let (Some(e), Some(pr)) = (s.mismatch.clone(), provider) {
                    self.failed(pr, ev, e);
                    return (provider, None);
                }
                return (provider, routes);
            }
        }
        let mut provider = match known_provider(p) {
            Some(k) => Some(Provider::Known(k)),
            None if p == CLRSPY_PROVIDER => Some(Provider::Clrspy),
            None => None,
        };
        // The kernel's samples, written by clrspy as the runtime's `ThreadSample`: clrspy's
        // `KernelSample` to the models.
        let kernel = is_kernel_sample(ev);
        if kernel {
            provider = Some(Provider::Clrspy);
        }
        let dispatch_id = if kernel {
            clr_events::clrspy::ids::KERNEL_SAMPLE
        } else {
            event_id
        };
        let mut routes = provider.and_then(|pr| self.dispatch.get(&(pr, dispatch_id)).copied());
        if routes.is_none() && provider != Some(Provider::Clrspy) {
            if let Some((r, named)) = self.named_route(p, &ev.metadata.event_name) {
                routes = Some(r);
                provider = Some(Provider::Named(named));
            }
        }
        let mismatch = match (provider, routes) {
            (Some(Provider::Clrspy), Some(_)) if !kernel => {
                clr_events::clrspy::check_metadata(event_id, &ev.metadata.fields).err()
            }
            _ => None,
        };
        self.sources.insert(
            id,
            Source {
                key: ev.metadata_key(),
                provider_name: p.to_string(),
                event_id,
                provider,
                routes,
                mismatch: mismatch.clone(),
            },
        );
        // Events of a mismatched kind count as failures; no model reads them.
        match (mismatch, provider) {
            (Some(e), Some(pr)) => {
                self.failed(pr, ev, e);
                (provider, None)
            }
            _ => (provider, routes),
        }
    }
}

/// True for a CPU sample the kernel took, as clrspy writes it: the SampleProfiler provider's
/// `ThreadSample` under a metadata id of clrspy's.
pub(crate) fn is_kernel_sample(ev: &nettrace::Event<'_>) -> bool {
    ev.metadata.metadata_id >= clr_events::clrspy::FIRST_METADATA_ID
        && ev.provider() == clr_events::SAMPLE_PROFILER_PROVIDER
}
