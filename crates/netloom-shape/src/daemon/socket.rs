//! The control socket: callers' request lines read off the packet path and posted to the loop.

use super::{DaemonError, Reply, Request};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc;

/// A request read off the socket, for the packet loop to answer.
pub(super) struct Asked {
    /// The caller, by the socket's peer credentials.
    pub(super) uid: u32,
    /// The request, or why its line did not parse.
    pub(super) request: Result<Request, serde_json::Error>,
    /// Where the packet loop puts the reply.
    pub(super) answer: mpsc::Sender<Reply>,
}

/// How long a caller has to send its line and read its reply.
pub(super) const CALLER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
/// The longest request line read; a longer one is refused.
pub(super) const MAX_REQUEST: u64 = 64 * 1024;

/// Starts the thread that accepts callers and reads their lines, so that a caller who connects
/// and sends nothing (or reads nothing) delays only other callers, never a held packet: the
/// packet loop gets whole requests through the channel, woken by a byte on the returned
/// socket. The thread ends with the process.
pub(super) fn reader(
    listener: UnixListener,
) -> Result<(UnixStream, mpsc::Receiver<Asked>), DaemonError> {
    let (waker, woken) = UnixStream::pair().map_err(|e| DaemonError::Io(e.to_string()))?;
    woken
        .set_nonblocking(true)
        .map_err(|e| DaemonError::Io(e.to_string()))?;
    let (post, requests) = mpsc::channel();
    std::thread::Builder::new()
        .name("shape-requests".to_string())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let Some((uid, request)) = read_request(&stream) else {
                    continue;
                };
                let (answer, reply) = mpsc::channel();
                if post
                    .send(Asked {
                        uid,
                        request,
                        answer,
                    })
                    .is_err()
                {
                    return; // the packet loop has ended
                }
                let _ = (&waker).write_all(&[1]);
                if let Ok(reply) = reply.recv() {
                    let mut text = serde_json::to_string(&reply).expect("a reply serializes");
                    text.push('\n');
                    let _ = (&stream).write_all(text.as_bytes());
                }
            }
        })
        .map_err(|e| DaemonError::Io(format!("start the request thread: {e}")))?;
    Ok((woken, requests))
}

/// The caller's uid and request line, or None when the caller cannot be known or sent no
/// line in time (it is dropped without an answer).
pub(super) fn read_request(
    stream: &UnixStream,
) -> Option<(u32, Result<Request, serde_json::Error>)> {
    let caller = netloom_os::peer_credentials(stream.as_fd()).ok()?;
    stream.set_read_timeout(Some(CALLER_PATIENCE)).ok()?;
    stream.set_write_timeout(Some(CALLER_PATIENCE)).ok()?;
    let mut line = String::new();
    BufReader::new(stream.take(MAX_REQUEST))
        .read_line(&mut line)
        .ok()?;
    let request = serde_json::from_str::<Request>(&line);
    Some((caller.uid, request))
}
