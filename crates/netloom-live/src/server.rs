//! The control socket of a running experiment: accepts connections on a Unix socket and serves
//! each on a thread of its own, so a slow or stuck client holds up nobody else; a request line
//! is read within a time limit and a size limit, parsed (`protocol`), handed to the experiment,
//! and the reply written back. It knows nothing of workers.

use crate::message::Request;
use crate::protocol::{parse_request, Reply, MAX_REQUEST};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a client may take to send its request line, and the server to write the reply.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Clients served at once; more are told to come back.
pub const MAX_CLIENTS: usize = 32;

/// What serves a request: the experiment's handler.
pub(crate) type Handler = Arc<dyn Fn(Request) -> Reply + Send + Sync>;

/// A listening control socket; `stop` (or dropping it) closes it and removes the socket file.
pub(crate) struct Server {
    path: PathBuf,
    stopping: Arc<AtomicBool>,
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
        let thread = {
            let stopping = stopping.clone();
            std::thread::Builder::new()
                .name("netloom-control".into())
                .spawn(move || accept(listener, handler, &stopping, busy))?
        };
        Ok(Server {
            path: path.to_path_buf(),
            stopping,
            thread: Some(thread),
        })
    }

    /// Stops accepting, waits for the accepting thread and removes the socket file. Clients
    /// being served finish on their own threads (their handler then finds the run stopped).
    pub fn stop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.stopping.store(true, Ordering::SeqCst);
            // Wakes the blocking accept; it sees `stopping` and ends.
            let _ = UnixStream::connect(&self.path);
            let _ = thread.join();
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept(listener: UnixListener, handler: Handler, stopping: &AtomicBool, busy: Arc<AtomicUsize>) {
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
        let (handler, count) = (handler.clone(), busy.clone());
        let spawned = std::thread::Builder::new()
            .name("netloom-client".into())
            .spawn(move || {
                serve(conn, &handler);
                count.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Serves one connection: one request line, one reply line.
fn serve(conn: UnixStream, handler: &Handler) {
    if conn.set_read_timeout(Some(CLIENT_TIMEOUT)).is_err()
        || conn.set_write_timeout(Some(CLIENT_TIMEOUT)).is_err()
    {
        return;
    }
    let mut line = String::new();
    let read = BufReader::new((&conn).take(MAX_REQUEST as u64 + 1)).read_line(&mut line);
    let reply = match read {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Reply::error(format!("no request line within {CLIENT_TIMEOUT:?}"))
        }
        Err(e) => Reply::error(format!("reading the request: {e}")),
        Ok(_) if line.len() > MAX_REQUEST => {
            Reply::error(format!("a request is at most {MAX_REQUEST} bytes"))
        }
        Ok(0) => return,
        Ok(_) => match parse_request(&line) {
            Ok(request) => handler(request),
            Err(e) => Reply::error(e),
        },
    };
    let mut conn = &conn;
    let _ = writeln!(conn, "{}", reply.to_line());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{call, CallError};
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
            Request::Stats => Reply::ok(serde_json::json!({"up": true})),
            _ => Reply::error("only stats here"),
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
}
