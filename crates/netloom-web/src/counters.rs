//! What the server did with its connections, counted: those served, and every one it closed
//! without serving and why (the cap, a request too slow to arrive, a malformed request, a Host
//! that is not its own, its queue full). Shown on `/metrics` and when the server stops.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// The server's counters, shared by its threads.
#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) accepted: AtomicU64,
    pub(crate) served: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) evicted: AtomicU64,
    pub(crate) timed_out: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) misdirected: AtomicU64,
    pub(crate) busy: AtomicU64,
}

/// The counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// Connections accepted (refused ones included).
    pub accepted: u64,
    /// Requests answered by a route (any status).
    pub served: u64,
    /// New connections closed at once: the cap was reached and no connection was old enough
    /// to make room.
    pub refused: u64,
    /// Connections closed to make room for a new one: the oldest still waiting for its request.
    pub evicted: u64,
    /// Connections closed because their request did not arrive in time.
    pub timed_out: u64,
    /// Requests refused as malformed or too large (400, 411, 413, 431).
    pub malformed: u64,
    /// Requests refused for their Host header (421, 400): DNS rebinding.
    pub misdirected: u64,
    /// Requests dropped because every handler was busy and the queue full.
    pub busy: u64,
}

impl Count {
    /// The one line said when the server stops, if it closed any connection unserved.
    pub fn sentence(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.refused, "refused at the connection cap"),
            (self.evicted, "closed to make room"),
            (self.timed_out, "timed out before their request"),
            (self.malformed, "malformed"),
            (self.misdirected, "addressed to another host"),
            (self.busy, "dropped with every handler busy"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "{} connections, {} requests served; {}",
                self.accepted,
                self.served,
                parts.join(", ")
            )
        })
    }
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn count(&self) -> Count {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Count {
            accepted: get(&self.accepted),
            served: get(&self.served),
            refused: get(&self.refused),
            evicted: get(&self.evicted),
            timed_out: get(&self.timed_out),
            malformed: get(&self.malformed),
            misdirected: get(&self.misdirected),
            busy: get(&self.busy),
        }
    }

    /// Appends the counters to a Prometheus exposition.
    pub fn exposition(&self, out: &mut String) {
        let c = self.count();
        let _ = writeln!(
            out,
            "# HELP netloom_http_connections_total Connections the metrics server accepted.\n\
             # TYPE netloom_http_connections_total counter\n\
             netloom_http_connections_total {}",
            c.accepted
        );
        let _ = writeln!(
            out,
            "# HELP netloom_http_requests_total Requests the metrics server answered.\n\
             # TYPE netloom_http_requests_total counter\n\
             netloom_http_requests_total {}",
            c.served
        );
        let _ = writeln!(
            out,
            "# HELP netloom_http_closed_total Connections the metrics server closed unserved, by cause.\n\
             # TYPE netloom_http_closed_total counter"
        );
        for (cause, n) in [
            ("cap", c.refused),
            ("evicted", c.evicted),
            ("timeout", c.timed_out),
            ("malformed", c.malformed),
            ("host", c.misdirected),
            ("busy", c.busy),
        ] {
            let _ = writeln!(out, "netloom_http_closed_total{{cause=\"{cause}\"}} {n}");
        }
    }
}
