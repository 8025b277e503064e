//! Kestrel's connections as the requests model ties requests to them: a request's related
//! activity is its connection's (or a logging scope's inside it), and a connection's first
//! request waited from the connection's start — Kestrel's `ConnectionStart`, written once a
//! pool thread took the accepted connection — to its own start: the time reading it took,
//! mostly the read's continuation waiting in the pool's queue when the pool is starved (a
//! client that connects and waits before sending adds its wait too). A leaf: it imports
//! nothing of the models. Memory: one entry per open connection and logging scope.

use rustc_hash::FxHashMap;

/// An activity id's 16 bytes.
pub(crate) type Key = [u8; 16];

/// Open connections: which connection each activity belongs to, and when each started.
#[derive(Clone, Debug, Default)]
pub(crate) struct KestrelLinks {
    /// Activity (the connection's, or a logging scope's inside it) → connection id.
    by_activity: FxHashMap<Key, String>,
    /// Connection id → its start, ns, until its first request starts.
    waiting_first: FxHashMap<String, i64>,
}

impl KestrelLinks {
    /// Kestrel's `ConnectionStart` of connection `id` with activity `activity` at `ts_ns`.
    pub(crate) fn start(&mut self, activity: Key, id: String, ts_ns: i64) {
        self.waiting_first.insert(id.clone(), ts_ns);
        self.by_activity.insert(activity, id);
    }

    /// An activity started inside `parent`'s (a logging scope): its events belong to the
    /// same connection.
    pub(crate) fn nest(&mut self, activity: Key, parent: &Key) {
        if let Some(c) = self.by_activity.get(parent).cloned() {
            self.by_activity.insert(activity, c);
        }
    }

    /// The end of a logging scope's `activity`.
    pub(crate) fn stop_scope(&mut self, activity: &Key) {
        self.by_activity.remove(activity);
    }

    /// Kestrel's `ConnectionStop` of the connection with `activity`.
    pub(crate) fn stop_connection(&mut self, activity: &Key) {
        if let Some(c) = self.by_activity.remove(activity) {
            self.waiting_first.remove(&c);
        }
    }

    /// The connection of `activity`.
    pub(crate) fn connection(&self, activity: &Key) -> Option<&String> {
        self.by_activity.get(activity)
    }

    /// A request on connection `id` started at `ts_ns`: when it is the connection's first, the
    /// time from the connection's start, ns.
    pub(crate) fn first_request(&mut self, id: &str, ts_ns: i64) -> Option<i64> {
        let start = self.waiting_first.remove(id)?;
        Some((ts_ns - start).max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connections_first_request_waited_from_its_start() {
        let mut k = KestrelLinks::default();
        let (conn, scope) = ([1u8; 16], [2u8; 16]);
        k.start(conn, "C1".into(), 1_000);
        k.nest(scope, &conn);
        assert_eq!(k.connection(&scope).map(String::as_str), Some("C1"));
        assert_eq!(k.first_request("C1", 839_000), Some(838_000));
        // The next request on it (keep-alive) waited for its client, not for the pool.
        assert_eq!(k.first_request("C1", 900_000), None);
        k.stop_scope(&scope);
        assert_eq!(k.connection(&conn).map(String::as_str), Some("C1"));
        k.stop_connection(&conn);
        assert_eq!(k.connection(&conn), None);
        // A connection that closed before any request leaves nothing behind.
        k.start(conn, "C2".into(), 5);
        k.stop_connection(&conn);
        assert!(k.waiting_first.is_empty() && k.by_activity.is_empty());
    }
}
