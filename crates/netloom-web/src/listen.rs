//! The server's one poll loop: accepts connections up to a cap, reads each request without
//! blocking (epoll, so a thousand idle connections cost a thousand sockets and no thread), closes
//! those whose request does not arrive in time, and hands every whole request to the handlers'
//! bounded queue. It never writes a response and never reads the run.

use crate::counters::Counters;
use crate::http::{parse, Parsed, Request, Response};
use netloom_os::Poller;
use netloom_time::{Clock, Duration, Instant};
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

/// How often the loop looks at its deadlines and whether it must stop.
const TICK: std::time::Duration = std::time::Duration::from_millis(50);
/// Connections accepted in one turn, so a flood of them cannot hold up reading.
const ACCEPTS_PER_TURN: usize = 64;
/// The listener's token; connections have their slot's index.
const LISTENER: u32 = u32::MAX;

/// The server's bounds on connections.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections held open at once while their request arrives.
    pub connections: usize,
    /// How long a connection has to send its whole request.
    pub request_timeout: Duration,
    /// How long a connection keeps its place at the cap: a newer one takes the place of the
    /// oldest only once that one has waited this long.
    pub grace: Duration,
    /// Threads that answer requests.
    pub handlers: usize,
    /// Whole requests waiting for a handler; more are dropped.
    pub queue: usize,
}

impl Default for Limits {
    /// 256 connections (far below the 1,024 descriptors a process has by default, which the run
    /// needs for its own), 5 s to send a request (the control socket's), 1 s of grace (a client
    /// sends its request within a round trip of connecting), two handlers and 32 queued requests.
    fn default() -> Limits {
        Limits {
            connections: 256,
            request_timeout: Duration::from_secs(5),
            grace: Duration::from_secs(1),
            handlers: 2,
            queue: 32,
        }
    }
}

/// What a handler is given: a request to answer, or a refusal to write.
pub enum Job {
    /// A whole request, read from this connection.
    Serve(TcpStream, Request),
    /// A request refused before any route: this response, then close.
    Refuse(TcpStream, Response),
}

/// A connection whose request is still arriving.
struct Conn {
    stream: TcpStream,
    bytes: Vec<u8>,
    opened: Instant,
}

/// The loop's state.
pub struct Loop<C: Clock> {
    listener: TcpListener,
    poller: Poller,
    conns: Vec<Option<Conn>>,
    limits: Limits,
    counters: Arc<Counters>,
    jobs: SyncSender<Job>,
    clock: C,
}

impl<C: Clock> Loop<C> {
    /// A loop over `listener` (made non-blocking here), queueing to `jobs`.
    pub fn new(
        listener: TcpListener,
        limits: Limits,
        counters: Arc<Counters>,
        jobs: SyncSender<Job>,
        clock: C,
    ) -> std::io::Result<Loop<C>> {
        listener.set_nonblocking(true)?;
        let mut poller = Poller::new().map_err(std::io::Error::other)?;
        poller
            .add(listener.as_fd(), LISTENER)
            .map_err(std::io::Error::other)?;
        Ok(Loop {
            listener,
            poller,
            conns: (0..limits.connections).map(|_| None).collect(),
            limits,
            counters,
            jobs,
            clock,
        })
    }

    /// Runs until `stopping` is set.
    pub fn run(mut self, stopping: &AtomicBool) {
        let mut ready = Vec::new();
        while !stopping.load(Ordering::Relaxed) {
            if self.poller.wait(Some(TICK), &mut ready).is_err() {
                // epoll itself failed: nothing more can be served; the run goes on.
                return;
            }
            for &token in &ready {
                match token {
                    LISTENER => self.accept(),
                    slot => self.read(slot as usize),
                }
            }
            self.expire();
        }
    }

    fn accept(&mut self) {
        for _ in 0..ACCEPTS_PER_TURN {
            match self.listener.accept() {
                Ok((stream, _)) => self.admit(stream),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(_) => {
                    // Out of descriptors or memory: wait a moment rather than spin on a
                    // listener that stays readable.
                    std::thread::sleep(TICK);
                    return;
                }
            }
        }
    }

    /// Gives `stream` a slot: a free one, else the oldest waiting connection's if it has had its
    /// grace; otherwise it is closed at once.
    fn admit(&mut self, stream: TcpStream) {
        Counters::add(&self.counters.accepted);
        let now = self.clock.now();
        let slot = match self.conns.iter().position(Option::is_none) {
            Some(free) => free,
            None => {
                let (oldest, opened) = self
                    .conns
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| Some((i, c.as_ref()?.opened)))
                    .min_by_key(|&(_, opened)| opened)
                    .expect("every slot is taken");
                if now.saturating_since(opened) < self.limits.grace {
                    Counters::add(&self.counters.refused);
                    return;
                }
                self.close(oldest);
                Counters::add(&self.counters.evicted);
                oldest
            }
        };
        if stream.set_nonblocking(true).is_err()
            || self.poller.add(stream.as_fd(), slot as u32).is_err()
        {
            return;
        }
        self.conns[slot] = Some(Conn {
            stream,
            bytes: Vec::new(),
            opened: now,
        });
    }

    /// Reads what `slot`'s client sent and, once the request is whole, queues it.
    fn read(&mut self, slot: usize) {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let mut chunk = [0u8; 4096];
        match conn.stream.read(&mut chunk) {
            Ok(0) => return self.close(slot),
            Ok(n) => conn.bytes.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => return,
            Err(_) => return self.close(slot),
        }
        let job = match parse(&conn.bytes) {
            Parsed::Partial => return,
            Parsed::Complete(request) => Job::Serve(self.take(slot), request),
            Parsed::Refused { status, why } => {
                Counters::add(&self.counters.malformed);
                Job::Refuse(self.take(slot), crate::routes::refusal(status, why))
            }
        };
        self.queue(job);
    }

    /// Takes `slot`'s connection out of the loop, to hand it on (blocking again: a handler
    /// writes with a deadline of its own).
    fn take(&mut self, slot: usize) -> TcpStream {
        let conn = self.conns[slot].take().expect("taken from a live slot");
        let _ = self.poller.remove(conn.stream.as_fd());
        let _ = conn.stream.set_nonblocking(false);
        conn.stream
    }

    fn queue(&mut self, job: Job) {
        if let Err(TrySendError::Full(_)) = self.jobs.try_send(job) {
            Counters::add(&self.counters.busy);
        }
    }

    /// Closes `slot`'s connection unserved.
    fn close(&mut self, slot: usize) {
        if self.conns[slot].is_some() {
            drop(self.take(slot));
        }
    }

    /// Closes every connection whose request did not arrive in time.
    fn expire(&mut self) {
        let now = self.clock.now();
        for slot in 0..self.conns.len() {
            let late = self.conns[slot]
                .as_ref()
                .is_some_and(|c| now.saturating_since(c.opened) >= self.limits.request_timeout);
            if late {
                self.close(slot);
                Counters::add(&self.counters.timed_out);
            }
        }
    }
}
