//! One path of the app as an area declares it: the methods it answers with their handlers
//! (the methods recorded by the same calls that attach the handlers, so the two cannot
//! differ), its time bound and whether it is audited. A leaf: the areas and the app builder
//! both use it.

use std::time::Duration;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::MethodRouter;

use crate::state::AppState;

/// One path of the app: the methods it answers with their handlers, its time bound and
/// whether it is audited.
pub(crate) struct Route {
    pub(super) path: &'static str,
    pub(super) methods: Vec<Method>,
    pub(super) handler: MethodRouter<AppState>,
    pub(super) bound: Option<Duration>,
    pub(super) audited: bool,
}

impl Route {
    /// A path with no method yet, bounded by the request timeout, not audited.
    pub(crate) fn new(path: &'static str) -> Route {
        Route {
            path,
            methods: Vec::new(),
            handler: MethodRouter::new(),
            bound: None,
            audited: false,
        }
    }

    /// Answers GET with `h`.
    pub(crate) fn get<H: Handler<T, AppState>, T: 'static>(mut self, h: H) -> Route {
        self.handler = self.handler.get(h);
        self.methods.push(Method::GET);
        self
    }

    /// Answers POST with `h`.
    pub(crate) fn post<H: Handler<T, AppState>, T: 'static>(mut self, h: H) -> Route {
        self.handler = self.handler.post(h);
        self.methods.push(Method::POST);
        self
    }

    /// Answers DELETE with `h`.
    pub(crate) fn delete<H: Handler<T, AppState>, T: 'static>(mut self, h: H) -> Route {
        self.handler = self.handler.delete(h);
        self.methods.push(Method::DELETE);
        self
    }

    /// Bounded by `d` instead of the request timeout (work that records, dumps or streams
    /// for longer).
    pub(crate) fn bound(mut self, d: Duration) -> Route {
        self.bound = Some(d);
        self
    }

    /// Each request writes a line to the audit log (see [`crate::audit`]).
    pub(crate) fn audited(mut self) -> Route {
        self.audited = true;
        self
    }
}
