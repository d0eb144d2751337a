//! The control socket of a running experiment: accepts connections on a Unix socket and serves
//! each on a thread of its own, so a slow or stuck client holds up nobody else; a request line
//! is read within a time limit and a size limit, parsed (`protocol`), handed to the experiment,
//! and the reply written back. A streaming request's reply is followed on the same connection by
//! its stream (`Stream`: event lines, capture bytes) until the stream ends or the client goes.
//! It knows nothing of workers.

use crate::message::Request;
use crate::run::protocol::{parse_request, Reply, MAX_REQUEST};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a client may take to send its request line, and the server to write the reply.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Clients served at once, streams included; more are told to come back.
pub const MAX_CLIENTS: usize = 32;
/// Streams served at once: half the clients, so that streams never lock out `stats` or `stop`.
pub const MAX_STREAMS: usize = MAX_CLIENTS / 2;
/// How long a stream waits for content before it looks whether its client is still there.
const IDLE_LOOK: Duration = Duration::from_millis(200);

/// What comes next on a stream.
pub(crate) enum Next {
    /// Bytes to write to the client.
    Bytes(Vec<u8>),
    /// Nothing within the wait asked for.
    Idle,
    /// The stream is over (the run stopped): the connection is closed.
    End,
}

/// The content a streaming request writes after its reply. It is pulled by the client's own
/// thread, so what produces it (the run) only ever fills a bounded queue and never waits.
pub(crate) trait Stream: Send {
    /// The next piece, waiting at most `wait` for it.
    fn next(&mut self, wait: Duration) -> Next;
}

/// The answer to one request: its reply line, and the stream that follows it, if any.
pub(crate) struct Response {
    /// The reply line.
    pub reply: Reply,
    /// For a streaming request that was accepted, what follows the reply.
    pub stream: Option<Box<dyn Stream>>,
}

impl From<Reply> for Response {
    fn from(reply: Reply) -> Response {
        Response {
            reply,
            stream: None,
        }
    }
}

/// What serves a request: the experiment's handler.
pub(crate) type Handler = Arc<dyn Fn(Request) -> Response + Send + Sync>;

/// A listening control socket; `stop` (or dropping it) closes it and removes the socket file.
pub(crate) struct Server {
    path: PathBuf,
    /// The listening socket, to shut down at `stop`, which ends the blocking accept.
    listener: UnixListener,
    stopping: Arc<AtomicBool>,
    /// Clients being served, streams included.
    busy: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `path` (replacing a stale socket file) and serves every request with `handler`.
    pub fn start(path: &Path, handler: Handler) -> std::io::Result<Server> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        // Only root talks to an experiment: its requests change a network root made.
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let busy = Arc::new(AtomicUsize::new(0));
        let accepting = listener.try_clone()?;
        let thread = {
            let (stopping, busy) = (stopping.clone(), busy.clone());
            std::thread::Builder::new()
                .name("netloom-control".into())
                .spawn(move || accept(accepting, handler, &stopping, busy))?
        };
        Ok(Server {
            path: path.to_path_buf(),
            listener,
            stopping,
            busy,
            thread: Some(thread),
        })
    }

    /// Stops accepting, waits for the accepting thread and removes the socket file. Clients
    /// being served finish on their own threads (their handler then finds the run stopped).
    pub fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stopping.store(true, Ordering::SeqCst);
            // Ends the blocking accept; it sees `stopping` and returns. Not by connecting to the
            // socket file: with the run's directory removed under it, that found nothing and
            // the run never stopped.
            if netloom_os::shut_down_listener(self.listener.as_fd()).is_err() {
                let _ = UnixStream::connect(&self.path);
            }
            let _ = thread.join();
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Waits, `wait` at most, until every client being served is done: after the run's last
    /// event, so that event streams write it before the process exits.
    pub fn drain(&self, wait: Duration) {
        let give_up = std::time::Instant::now() + wait;
        while self.busy.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept(listener: UnixListener, handler: Handler, stopping: &AtomicBool, busy: Arc<AtomicUsize>) {
    let streams = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(mut conn) = conn else { continue };
        if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
            busy.fetch_sub(1, Ordering::SeqCst);
            let _ = conn.set_write_timeout(Some(CLIENT_TIMEOUT));
            let busy = Reply::error(format!("{MAX_CLIENTS} clients are being served; try again"));
            let _ = writeln!(conn, "{}", busy.to_line());
            continue;
        }
        let (handler, count, streams) = (handler.clone(), busy.clone(), streams.clone());
        let spawned = std::thread::Builder::new()
            .name("netloom-client".into())
            .spawn(move || {
                serve(conn, &handler, &streams);
                count.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Serves one connection: one request line, one reply line, then the stream if there is one.
fn serve(conn: UnixStream, handler: &Handler, streams: &AtomicUsize) {
    if conn.set_read_timeout(Some(CLIENT_TIMEOUT)).is_err()
        || conn.set_write_timeout(Some(CLIENT_TIMEOUT)).is_err()
    {
        return;
    }
    let mut line = String::new();
    let read = BufReader::new((&conn).take(MAX_REQUEST as u64 + 1)).read_line(&mut line);
    let response = match read {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Reply::error(format!("no request line within {CLIENT_TIMEOUT:?}")).into()
        }
        Err(e) => Reply::error(format!("reading the request: {e}")).into(),
        Ok(_) if line.len() > MAX_REQUEST => {
            Reply::error(format!("a request is at most {MAX_REQUEST} bytes")).into()
        }
        Ok(0) => return,
        Ok(_) => match parse_request(&line) {
            Ok(request) => handler(request),
            Err(e) => Reply::error(e.to_string()).into(),
        },
    };
    let Some(stream) = response.stream else {
        let _ = writeln!(&conn, "{}", response.reply.to_line());
        return;
    };
    if streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        streams.fetch_sub(1, Ordering::SeqCst);
        let full = Reply::error(format!("{MAX_STREAMS} streams are being served; try again"));
        let _ = writeln!(&conn, "{}", full.to_line());
        return;
    }
    if writeln!(&conn, "{}", response.reply.to_line()).is_ok() {
        pour(&conn, stream);
    }
    streams.fetch_sub(1, Ordering::SeqCst);
}

/// Writes `stream` to the client until the stream ends, the client closes the connection, or it
/// stops reading for longer than `CLIENT_TIMEOUT` (the stream is then dropped, and what it
/// produces meanwhile is lost to this client alone).
fn pour(conn: &UnixStream, mut stream: Box<dyn Stream>) {
    let mut conn = conn;
    loop {
        match stream.next(IDLE_LOOK) {
            Next::Bytes(bytes) => {
                if conn.write_all(&bytes).is_err() {
                    return;
                }
            }
            Next::Idle if gone(conn) => return,
            Next::Idle => {}
            Next::End => return,
        }
    }
}

/// Whether the client of a stream has closed its side: a client sends nothing after its request,
/// so a read that finds the end of the connection (rather than nothing yet) means it left.
fn gone(conn: &UnixStream) -> bool {
    if conn.set_nonblocking(true).is_err() {
        return true;
    }
    let mut byte = [0u8; 1];
    let read = (&*conn).read(&mut byte);
    let _ = conn.set_nonblocking(false);
    match read {
        Ok(0) => true,
        // Whatever a client sends after its request is ignored.
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::protocol::{call, CallError};
    use std::time::Instant;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("netloom-server-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_request_is_answered_and_a_stuck_client_blocks_no_one() {
        let d = dir("stuck");
        let path = d.join("control.sock");
        let handler: Handler = Arc::new(|request| match request {
            Request::Stats => Reply::ok(serde_json::json!({"up": true})).into(),
            _ => Reply::error("only stats here").into(),
        });
        let mut server = Server::start(&path, handler).unwrap();
        // A client that connects and sends half a line, then nothing.
        let mut stuck = UnixStream::connect(&path).unwrap();
        write!(stuck, "{{\"version\": 1, \"cm").unwrap();
        let t = Instant::now();
        let body = call(&path, &Request::Stats, Duration::from_secs(2)).unwrap();
        assert_eq!(body["up"], true);
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "served beside the stuck client"
        );
        match call(&path, &Request::Stop, Duration::from_secs(2)) {
            Err(CallError::Refused(e)) => assert_eq!(e, "only stats here"),
            other => panic!("{other:?}"),
        }
        // A request line over the limit is refused, not buffered.
        let mut big = UnixStream::connect(&path).unwrap();
        let _ = big.write_all(&vec![b'x'; MAX_REQUEST + 10]);
        let _ = big.write_all(b"\n");
        let mut reply = String::new();
        BufReader::new(&big).read_line(&mut reply).unwrap();
        assert!(reply.contains("at most 65536 bytes"), "{reply}");
        server.stop();
        assert!(!path.exists(), "the socket file is removed");
        drop(stuck);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_server_stops_even_when_its_directory_was_removed_under_it() {
        let d = dir("gone");
        let handler: Handler = Arc::new(|_| Reply::error("nothing here").into());
        let mut server = Server::start(&d.join("control.sock"), handler).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
        let (done, stopped) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            server.stop();
            let _ = done.send(());
        });
        // It used to wake its accepting thread by connecting to the socket file, and hung.
        assert!(
            stopped.recv_timeout(Duration::from_secs(2)).is_ok(),
            "the server stopped"
        );
    }

    /// A stream of `left` numbered lines, then its end; idle in between.
    struct Count {
        next: u32,
        left: u32,
    }

    impl Stream for Count {
        fn next(&mut self, wait: Duration) -> Next {
            if self.left == 0 {
                return Next::End;
            }
            if self.next % 2 == 1 {
                std::thread::sleep(wait);
                self.next += 1;
                return Next::Idle;
            }
            self.next += 1;
            self.left -= 1;
            Next::Bytes(format!("{}\n", self.next).into_bytes())
        }
    }

    #[test]
    fn a_stream_follows_its_reply_ends_cleanly_and_streams_keep_room_for_requests() {
        let d = dir("stream");
        let path = d.join("control.sock");
        let handler: Handler = Arc::new(|request| match request {
            // `events` streams three lines; `info` streams forever.
            Request::Events => Response {
                reply: Reply::ok(serde_json::json!({"streaming": true})),
                stream: Some(Box::new(Count { next: 0, left: 3 })),
            },
            Request::Info => Response {
                reply: Reply::ok(serde_json::json!({"forever": true})),
                stream: Some(Box::new(Count {
                    next: 0,
                    left: u32::MAX,
                })),
            },
            _ => Reply::ok(serde_json::json!({"up": true})).into(),
        });
        let mut server = Server::start(&path, handler).unwrap();
        let wait = Duration::from_secs(5);
        let (body, reader) = crate::run::protocol::open(&path, &Request::Events, wait).unwrap();
        assert_eq!(body["streaming"], true);
        let lines: Vec<String> = reader.lines().map(Result::unwrap).collect();
        assert_eq!(
            lines,
            ["1", "3", "5"],
            "the stream, then the connection's end"
        );

        // Endless streams take half the slots at most; requests are still served beside them.
        let mut endless: Vec<_> = (0..MAX_STREAMS)
            .map(|_| {
                crate::run::protocol::open(&path, &Request::Info, wait)
                    .unwrap()
                    .1
            })
            .collect();
        match crate::run::protocol::open(&path, &Request::Info, wait) {
            Err(CallError::Refused(e)) => assert!(e.contains("16 streams"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(call(&path, &Request::Stats, wait).unwrap()["up"], true);
        // A client that leaves gives its slot back, though its stream never ends.
        let mut first = String::new();
        endless[0].read_line(&mut first).unwrap();
        assert_eq!(first, "1\n");
        drop(endless.remove(0));
        let t = Instant::now();
        let again = loop {
            match crate::run::protocol::open(&path, &Request::Info, wait) {
                Ok((body, _)) => break body,
                Err(_) if t.elapsed() < Duration::from_secs(5) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("the slot was not given back: {e}"),
            }
        };
        assert_eq!(again["forever"], true);
        drop(endless);
        server.stop();
        let _ = std::fs::remove_dir_all(&d);
    }
}
