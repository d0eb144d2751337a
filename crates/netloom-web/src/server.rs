//! The HTTP server of a live run: binds first (so a port in use is refused before the run
//! starts), then serves from a fixed set of threads, whatever the clients do: one poll loop
//! (`listen`) that holds the connections, and a few handlers that answer whole requests
//! (`routes`) after the Host check (`host`). Its threads run at normal priority and off the
//! CPUs the workers are pinned to, so a scrape is never on the engine's CPU; the run is read
//! through a `netloom_live::RunView` (share one `Snapshots` between servers so readers share snapshots).

use crate::counters::{Count, Counters};
use crate::http::{Response, WRITE_TIMEOUT};
use crate::listen::{Job, Limits, Loop};
use crate::routes::{respond, Routes};
use netloom_live::SharedView;
use netloom_time::SystemClock;
use std::io::Read;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The address is not one.
    #[error("{addr:?} is not an address to listen on: write HOST:PORT (127.0.0.1:8080) or a port alone (8080, on localhost)")]
    Address {
        /// As given.
        addr: String,
    },
    /// The address could not be bound (in use, not this machine's, no permission).
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        reason: String,
    },
}

/// A bound listener, not serving yet.
pub struct Bound {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Bound {
    /// Binds `addr` ("HOST:PORT", or a port alone for localhost).
    pub fn bind(addr: &str) -> Result<Bound, WebError> {
        let bad = || WebError::Address { addr: addr.into() };
        let text = match addr.parse::<u16>() {
            Ok(port) => format!("127.0.0.1:{port}"),
            Err(_) => addr.to_string(),
        };
        let addr: SocketAddr = text
            .to_socket_addrs()
            .map_err(|_| bad())?
            .next()
            .ok_or_else(bad)?;
        let listener = TcpListener::bind(addr).map_err(|e| WebError::Bind {
            addr,
            reason: e.to_string(),
        })?;
        let addr = listener.local_addr().unwrap_or(addr);
        Ok(Bound { listener, addr })
    }

    /// The address bound (with the port the system chose, for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `routes` from `source` with the default limits, its threads kept off `off_cpus`
    /// (the CPUs the workers are pinned to), until the server is dropped.
    pub fn serve(
        self,
        source: SharedView,
        routes: Routes,
        off_cpus: &[usize],
    ) -> std::io::Result<WebServer> {
        self.serve_within(source, routes, off_cpus, Limits::default())
    }

    /// `serve` within `limits`.
    pub fn serve_within(
        self,
        source: SharedView,
        routes: Routes,
        off_cpus: &[usize],
        limits: Limits,
    ) -> std::io::Result<WebServer> {
        let cpus = cpus_off(off_cpus);
        let counters = Arc::new(Counters::default());
        let stopping = Arc::new(AtomicBool::new(false));
        let (jobs, queue) = std::sync::mpsc::sync_channel(limits.queue);
        let poll = Loop::new(
            self.listener,
            limits,
            counters.clone(),
            jobs,
            SystemClock::start(),
        )?;
        let queue = Arc::new(Mutex::new(queue));
        let mut threads = Vec::new();
        for n in 0..limits.handlers.max(1) {
            let handler = Handler {
                queue: queue.clone(),
                source: source.clone(),
                routes: routes.clone(),
                counters: counters.clone(),
                addr: self.addr,
            };
            let cpus = cpus.clone();
            threads.push(
                std::thread::Builder::new()
                    // Named by port (at most 15 bytes): `top -H` tells the servers apart.
                    .name(format!("http:{}/{n}", self.addr.port()))
                    .spawn(move || {
                        place(&cpus);
                        handler.run()
                    })?,
            );
        }
        let poll = {
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name(format!("http:{}", self.addr.port()))
                .spawn(move || {
                    place(&cpus);
                    poll.run(&stopping)
                })?
        };
        // The poll loop first: when it ends, the queue's sender goes and the handlers end.
        threads.insert(0, poll);
        Ok(WebServer {
            addr: self.addr,
            counters,
            stopping,
            threads,
        })
    }
}

/// This thread's CPUs but `off` (none if that leaves none: then anywhere).
fn cpus_off(off: &[usize]) -> Vec<usize> {
    let allowed = netloom_os::allowed_cpus().unwrap_or_default();
    let left: Vec<usize> = allowed.into_iter().filter(|c| !off.contains(c)).collect();
    match off.is_empty() {
        true => Vec::new(),
        false => left,
    }
}

/// Puts the calling server thread at normal priority (it may have been started from a
/// real-time thread) and on `cpus` (if any): a request is never served ahead of, or on the CPU
/// of, a worker. Failing either only means the scheduler places it, so it is not an error.
fn place(cpus: &[usize]) {
    let _ = netloom_os::set_normal_priority();
    if !cpus.is_empty() {
        let _ = netloom_os::pin_current_thread_to(cpus);
    }
}

/// One of the threads that answer requests.
struct Handler {
    queue: Arc<Mutex<Receiver<Job>>>,
    source: SharedView,
    routes: Routes,
    counters: Arc<Counters>,
    addr: SocketAddr,
}

impl Handler {
    fn run(self) {
        loop {
            // The lock is held only to take a job, so the handlers answer in parallel.
            let job = match self.queue.lock() {
                Ok(queue) => queue.recv(),
                Err(_) => return,
            };
            let Ok(job) = job else {
                return;
            };
            let (conn, minor, response) = match job {
                Job::Refuse(conn, response) => (conn, 1, response),
                Job::Serve(conn, request) => {
                    let response = match crate::host::check(
                        request.host.as_deref(),
                        request.minor_version,
                        self.addr,
                    ) {
                        Ok(()) => {
                            Counters::add(&self.counters.served);
                            respond(&request, self.source.as_ref(), &self.routes, &self.counters)
                        }
                        Err(refusal) => {
                            Counters::add(&self.counters.misdirected);
                            Response::new(refusal.status, "text/plain; charset=utf-8", refusal.why)
                        }
                    };
                    (conn, request.minor_version, response)
                }
            };
            response.send(conn, minor, Instant::now() + WRITE_TIMEOUT);
        }
    }
}

/// A serving HTTP server; dropping it stops it.
pub struct WebServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stopping: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl WebServer {
    /// The address it serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it did with its connections so far.
    pub fn count(&self) -> Count {
        self.counters.count()
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A new token for changes: 128 random bits from the system, in hex.
pub fn token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_live::{ControlError, Direction, LinkChange, Report};
    use netloom_live::{RunError, RunView, Subscription};
    use netloom_time::Duration;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;

    /// A change as the fake run received it: the ends and the parameters.
    type Received = (String, String, serde_json::Map<String, serde_json::Value>);

    /// A run in memory: the figures of `metrics::tests::report`, and the changes asked for.
    #[derive(Default)]
    struct Fake {
        changes: Mutex<Vec<Received>>,
    }

    impl RunView for Fake {
        fn info(&self) -> Result<netloom_live::RunInfo, RunError> {
            Err(RunError::NoRun)
        }

        fn stats(&self) -> Result<Report, RunError> {
            Ok(crate::metrics::tests::report())
        }

        fn link_set(
            &self,
            a: &str,
            b: &str,
            direction: Direction,
            set: &serde_json::Map<String, serde_json::Value>,
        ) -> Result<LinkChange, RunError> {
            if a == "nowhere" {
                let unknown = ControlError::UnknownNode {
                    name: a.into(),
                    hint: String::new(),
                };
                return Err(RunError::Live(unknown.into()));
            }
            self.changes
                .lock()
                .unwrap()
                .push((a.into(), b.into(), set.clone()));
            Ok(LinkChange {
                link: format!("{a}-{b}"),
                direction,
                set: set.clone(),
                up: None,
                at_ns: 42,
            })
        }

        fn link_state(&self, a: &str, _: &str, _: bool) -> Result<LinkChange, RunError> {
            Err(RunError::Live(
                ControlError::UnknownNode {
                    name: a.into(),
                    hint: String::new(),
                }
                .into(),
            ))
        }

        fn subscribe(&self) -> Result<Subscription, RunError> {
            Err(RunError::NoRun)
        }
    }

    /// One HTTP/1.0 exchange: the status code and the body.
    fn http(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
        http_as(addr, head, "", body)
    }

    /// One HTTP/1.0 exchange with the `Authorization` header `auth` (none if empty).
    fn http_as(addr: SocketAddr, head: &str, auth: &str, body: &str) -> (u16, String) {
        let mut conn = TcpStream::connect(addr).unwrap();
        let auth = match auth {
            "" => String::new(),
            auth => format!("Authorization: {auth}\r\n"),
        };
        write!(
            conn,
            "{head} HTTP/1.0\r\n{auth}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reader = BufReader::new(conn);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut reader, &mut rest).unwrap();
        let body = rest
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_string();
        (status.split(' ').nth(1).unwrap().parse().unwrap(), body)
    }

    fn serve(routes: Routes) -> (WebServer, Arc<Fake>) {
        let fake = Arc::new(Fake::default());
        let server = Bound::bind("127.0.0.1:0")
            .unwrap()
            .serve(fake.clone(), routes, &[])
            .unwrap();
        (server, fake)
    }

    #[test]
    fn changes_need_the_token_and_reach_the_source() {
        let routes = Routes {
            web: Some("secret".into()),
            ..Routes::default()
        };
        let (server, fake) = serve(routes);
        let change = r#"{"a": "h1", "b": "r1", "set": {"delay": "7ms"}}"#;
        let (status, body) = http(server.addr(), "POST /api/link", change);
        assert_eq!(status, 403, "{body}");
        let (status, _) = http_as(server.addr(), "POST /api/link", "Bearer nope", change);
        assert_eq!(status, 403);
        assert!(fake.changes.lock().unwrap().is_empty());
        let (status, reply) = http_as(server.addr(), "POST /api/link", "Bearer secret", change);
        assert_eq!(status, 200, "{reply}");
        assert!(reply.contains("\"at_ns\":42"), "{reply}");
        let (status, reply) = http_as(
            server.addr(),
            "POST /api/link",
            "Bearer secret",
            r#"{"a": "nowhere", "b": "r1", "set": {}}"#,
        );
        assert!(
            status == 400 && reply.contains("no node is named"),
            "{reply}"
        );
        let changes = fake.changes.lock().unwrap().clone();
        assert_eq!(changes.len(), 1);
        assert_eq!((changes[0].0.as_str(), changes[0].1.as_str()), ("h1", "r1"));
        assert_eq!(changes[0].2["delay"], "7ms");
    }

    #[test]
    fn routes_serve_only_what_was_asked_for() {
        let (metrics_only, _) = serve(Routes {
            metrics: true,
            ..Routes::default()
        });
        let (status, body) = http(metrics_only.addr(), "GET /metrics", "");
        assert_eq!(status, 200);
        assert!(body.contains("# TYPE netloom_pipe_drops_total counter"));
        assert_eq!(http(metrics_only.addr(), "GET /", "").0, 404);
        assert_eq!(http(metrics_only.addr(), "GET /api/stats", "").0, 404);
        let (web, _) = serve(Routes {
            web: Some("t".into()),
            ..Routes::default()
        });
        assert_eq!(http(web.addr(), "GET /metrics", "").0, 404);
        let (status, page) = http(web.addr(), "GET /", "");
        assert!(status == 200 && page.contains("/app.js"), "{page}");
        let (status, stats) = http(web.addr(), "GET /api/stats", "");
        assert_eq!(status, 200);
        let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
        assert_eq!(stats["pipes"][2]["direction"], "shared");
        assert_eq!(http(web.addr(), "GET /api/report", "").0, 404);
        let (viewer, _) = serve(Routes {
            report: Some("{\"flows\": []}".into()),
            ..Routes::default()
        });
        assert_eq!(
            http(viewer.addr(), "GET /api/report", "").1,
            "{\"flows\": []}"
        );
        assert_eq!(http(viewer.addr(), "GET /app.js", "").0, 200);
        assert_eq!(http(viewer.addr(), "GET /api/stats", "").0, 404);
    }

    #[test]
    fn a_port_in_use_or_a_bad_address_is_one_clear_error() {
        let taken = Bound::bind("127.0.0.1:0").unwrap();
        let addr = taken.addr().to_string();
        match Bound::bind(&addr) {
            Err(e @ WebError::Bind { .. }) => {
                let text = e.to_string();
                assert!(
                    text.starts_with(&format!("cannot listen on {addr}: ")),
                    "{text}"
                );
            }
            other => panic!("{:?}", other.map(|b| b.addr())),
        }
        for bad in ["localhost:port", "nowhere.invalid:80", ""] {
            match Bound::bind(bad) {
                Err(e @ WebError::Address { .. }) => {
                    assert!(e.to_string().contains("HOST:PORT"), "{e}")
                }
                other => panic!("{bad}: {:?}", other.map(|b| b.addr())),
            }
        }
        // A port alone means localhost.
        let port = Bound::bind("0").unwrap();
        assert!(port.addr().ip().is_loopback());
    }

    /// One exchange of `raw` bytes: the status code and the body.
    fn exchange(addr: SocketAddr, raw: &str) -> (u16, String) {
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        conn.write_all(raw.as_bytes()).unwrap();
        let mut reply = String::new();
        conn.read_to_string(&mut reply).unwrap();
        let status = reply.split(' ').nth(1).and_then(|s| s.parse().ok());
        let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status.unwrap_or(0), body.to_string())
    }

    #[test]
    fn a_request_addressed_to_another_host_is_refused_and_says_why() {
        let (server, _) = serve(Routes {
            metrics: true,
            ..Routes::default()
        });
        let addr = server.addr();
        let port = addr.port();
        let (status, body) = exchange(
            addr,
            &format!("GET /metrics HTTP/1.1\r\nHost: rebound.example:{port}\r\n\r\n"),
        );
        assert_eq!(status, 421, "{body}");
        assert!(body.contains("DNS rebinding"), "{body}");
        assert!(!body.contains("netloom_pipe"), "{body}");
        for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
            let (status, body) = exchange(
                addr,
                &format!("GET /metrics HTTP/1.1\r\nHost: {host}\r\n\r\n"),
            );
            assert_eq!(status, 200, "{host}: {body}");
            assert!(
                body.contains("netloom_http_closed_total{cause=\"host\"} 1"),
                "{body}"
            );
        }
        assert_eq!(server.count().misdirected, 1);
    }

    /// Whether the server closed `conn` (end of file or reset) within a second.
    fn closed(conn: &mut TcpStream) -> bool {
        conn.set_read_timeout(Some(std::time::Duration::from_secs(1)))
            .unwrap();
        let mut byte = [0u8; 1];
        match conn.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }

    #[test]
    fn past_the_cap_a_connection_is_closed_at_once_the_oldest_gives_way_and_silence_times_out() {
        let limits = Limits {
            connections: 4,
            request_timeout: Duration::from_millis(1500),
            grace: Duration::from_millis(300),
            handlers: 1,
            queue: 4,
        };
        let server = Bound::bind("127.0.0.1:0")
            .unwrap()
            .serve_within(
                Arc::new(Fake::default()),
                Routes {
                    metrics: true,
                    ..Routes::default()
                },
                &[],
                limits,
            )
            .unwrap();
        let addr = server.addr();
        let mut silent: Vec<TcpStream> =
            (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Every place taken, none past its grace: the fifth is closed at once.
        let mut fifth = TcpStream::connect(addr).unwrap();
        assert!(closed(&mut fifth), "the fifth connection is closed");
        assert_eq!(server.count().refused, 1);
        // Past the grace, a new client takes the oldest one's place and is served.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (status, _) = exchange(addr, "GET /metrics HTTP/1.0\r\n\r\n");
        assert_eq!(status, 200);
        assert_eq!(server.count().evicted, 1);
        assert!(closed(&mut silent[0]), "the oldest made room");
        // The others never sent a request: closed when their time is up.
        std::thread::sleep(std::time::Duration::from_millis(1300));
        for conn in &mut silent[1..] {
            assert!(closed(conn), "a silent connection times out");
        }
        let count = server.count();
        assert_eq!(
            (count.timed_out, count.accepted, count.served),
            (3, 6, 1),
            "{count:?}"
        );
        assert!(count
            .sentence()
            .unwrap()
            .contains("1 refused at the connection cap"));
    }

    /// The CPUs each thread of this process named `http:PORT` or `http:PORT/N` may run on.
    fn server_threads_cpus(port: u16) -> Vec<(String, Vec<usize>)> {
        let mine = |name: &str| {
            name == format!("http:{port}") || name.starts_with(&format!("http:{port}/"))
        };
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .flatten()
            .filter_map(|task| {
                let name = std::fs::read_to_string(task.path().join("comm")).ok()?;
                let name = name.trim().to_string();
                let status = std::fs::read_to_string(task.path().join("status")).ok()?;
                let list = status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
                mine(&name).then(|| (name, netloom_os::parse_cpu_list(list).unwrap()))
            })
            .collect()
    }

    #[test]
    fn the_servers_threads_keep_off_the_workers_cpus() {
        let allowed = netloom_os::allowed_cpus().unwrap();
        if allowed.len() < 2 {
            eprintln!("SKIPPED: one CPU: nothing to keep off");
            return;
        }
        let worker = allowed[0];
        let server = Bound::bind("127.0.0.1:0")
            .unwrap()
            .serve(Arc::new(Fake::default()), Routes::default(), &[worker])
            .unwrap();
        // The threads place themselves as they start.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let threads = server_threads_cpus(server.addr().port());
        assert_eq!(
            threads.len(),
            3,
            "a poll loop and two handlers: {threads:?}"
        );
        for (name, cpus) in &threads {
            assert_eq!(cpus, &allowed[1..], "{name}");
        }
    }
}
