//! The control socket: each caller on a thread of its own, within a time limit, a size limit
//! and a cap per user and in all, as the run's control socket does (netloom-live's server.rs);
//! whole requests are posted to the packet loop, which answers them between its turns.

use super::{DaemonError, Reply, Request};
use crate::classifier::ROOT;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::{mpsc, Arc, Condvar, Mutex};

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
/// Callers served at once, root's included; past it a caller is told to come back.
pub(super) const MAX_CALLERS: usize = 32;
/// Callers of one user served at once: a user's silent connections hold at most this many
/// places, so they delay no one else.
pub(super) const MAX_CALLERS_PER_USER: usize = 4;
/// Places only root takes: users together hold at most `MAX_CALLERS - ROOT_PLACES`, so root
/// can always reach the daemon (to `show` or `stop` it).
pub(super) const ROOT_PLACES: usize = 4;

/// The callers being served, in all and per user.
#[derive(Default)]
struct Callers {
    all: usize,
    per_user: HashMap<u32, usize>,
}

impl Callers {
    /// Takes a place for a caller of `uid`, or says why there is none.
    fn enter(&mut self, uid: u32) -> Result<(), String> {
        let mine = self.per_user.get(&uid).copied().unwrap_or(0);
        if uid != ROOT && mine >= MAX_CALLERS_PER_USER {
            return Err(format!(
                "uid {uid} has {MAX_CALLERS_PER_USER} requests being served already; try again"
            ));
        }
        let room = match uid {
            ROOT => MAX_CALLERS,
            _ => MAX_CALLERS - ROOT_PLACES,
        };
        if self.all >= room {
            return Err(format!("{} callers are being served; try again", self.all));
        }
        self.all += 1;
        *self.per_user.entry(uid).or_insert(0) += 1;
        Ok(())
    }

    fn leave(&mut self, uid: u32) {
        self.all -= 1;
        if let Some(n) = self.per_user.get_mut(&uid) {
            *n -= 1;
            if *n == 0 {
                self.per_user.remove(&uid);
            }
        }
    }
}

/// The callers whose request was posted and whose reply is not yet written back. The process
/// waits for them before it ends: the request that deletes the last link ends the packet loop
/// as it is answered, and a process that exited then cut its caller off before the reply was
/// written (under load the caller saw EOF instead of "deleted").
#[derive(Clone, Default)]
pub(super) struct Answering(Arc<(Mutex<usize>, Condvar)>);

impl Answering {
    fn begin(&self) {
        *self.0 .0.lock().expect("answering") += 1;
    }

    fn end(&self) {
        let (count, changed) = &*self.0;
        *count.lock().expect("answering") -= 1;
        changed.notify_all();
    }

    /// Waits until every posted request's reply is written or abandoned, at most `limit` (a
    /// caller that does not read is given up on after `CALLER_PATIENCE` anyway). The packet
    /// loop's receiver must be gone first, so a request it never took is abandoned.
    pub(super) fn wait(&self, limit: std::time::Duration) {
        let (count, changed) = &*self.0;
        let count = count.lock().expect("answering");
        let _ = changed.wait_timeout_while(count, limit, |n| *n > 0);
    }
}

/// Starts the thread that accepts callers, each served on a thread of its own, so that a
/// caller who connects and sends nothing (or reads nothing) delays neither a held packet nor
/// another caller: the packet loop gets whole requests through the channel, woken by a byte on
/// the returned socket. The threads end with the process, after `Answering::wait`.
pub(super) fn reader(
    listener: UnixListener,
) -> Result<(UnixStream, mpsc::Receiver<Asked>, Answering), DaemonError> {
    let (waker, woken) = UnixStream::pair().map_err(|e| DaemonError::Io(e.to_string()))?;
    woken
        .set_nonblocking(true)
        .map_err(|e| DaemonError::Io(e.to_string()))?;
    let (post, requests) = mpsc::channel();
    let waker = Arc::new(waker);
    let callers = Arc::new(Mutex::new(Callers::default()));
    let answering = Answering::default();
    let writing = answering.clone();
    std::thread::Builder::new()
        .name("shape-accept".to_string())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let Ok(caller) = netloom_os::peer_credentials(stream.as_fd()) else {
                    continue;
                };
                let uid = caller.uid;
                let entered = callers.lock().expect("callers").enter(uid);
                if let Err(why) = entered {
                    refuse(&stream, why);
                    continue;
                }
                let (post, waker, left) = (post.clone(), waker.clone(), callers.clone());
                let writing = writing.clone();
                let spawned = std::thread::Builder::new()
                    .name("shape-caller".to_string())
                    .spawn(move || {
                        serve_caller(&stream, uid, &post, &waker, &writing);
                        left.lock().expect("callers").leave(uid);
                    });
                if spawned.is_err() {
                    callers.lock().expect("callers").leave(uid);
                }
            }
        })
        .map_err(|e| DaemonError::Io(format!("start the request thread: {e}")))?;
    Ok((woken, requests, answering))
}

/// Tells a caller there is no place for them, without waiting on them.
fn refuse(stream: &UnixStream, why: String) {
    let reply = Reply {
        error: Some(why),
        ..Reply::default()
    };
    let mut text = serde_json::to_string(&reply).expect("a reply serializes");
    text.push('\n');
    if stream.set_nonblocking(true).is_ok() {
        let _ = (&*stream).write_all(text.as_bytes());
    }
}

/// Reads one caller's request, posts it to the packet loop and writes back its reply.
fn serve_caller(
    stream: &UnixStream,
    uid: u32,
    post: &mpsc::Sender<Asked>,
    waker: &UnixStream,
    answering: &Answering,
) {
    let Some(request) = read_request(stream) else {
        return;
    };
    let (answer, reply) = mpsc::channel();
    // Counted before it is posted, so the process cannot end between the two.
    answering.begin();
    let asked = Asked {
        uid,
        request,
        answer,
    };
    if post.send(asked).is_ok() {
        let _ = (&*waker).write_all(&[1]);
        // Err: the packet loop ended without taking the request.
        if let Ok(reply) = reply.recv() {
            let mut text = serde_json::to_string(&reply).expect("a reply serializes");
            text.push('\n');
            let _ = (&*stream).write_all(text.as_bytes());
        }
    }
    answering.end();
}

/// The caller's request line, or None when they sent no line in time (they are dropped without
/// an answer). A line longer than `MAX_REQUEST` is cut there, and fails to parse.
fn read_request(stream: &UnixStream) -> Option<Result<Request, serde_json::Error>> {
    stream.set_read_timeout(Some(CALLER_PATIENCE)).ok()?;
    stream.set_write_timeout(Some(CALLER_PATIENCE)).ok()?;
    let mut line = String::new();
    BufReader::new(stream.take(MAX_REQUEST))
        .read_line(&mut line)
        .ok()?;
    Some(serde_json::from_str::<Request>(&line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_that_ends_the_loop_is_written_before_the_process_may_end() {
        let dir = std::env::temp_dir().join(format!("netloom-answering-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shape.sock");
        let (_woken, requests, answering) = reader(UnixListener::bind(&path).unwrap()).unwrap();
        let mut caller = UnixStream::connect(&path).unwrap();
        let line = serde_json::to_string(&Request::Show).unwrap() + "\n";
        caller.write_all(line.as_bytes()).unwrap();
        // The packet loop's side: it answers, then ends (the caller's thread has not written yet).
        let asked = requests.recv().unwrap();
        let reply = Reply {
            message: Some("deleted".into()),
            ..Reply::default()
        };
        asked.answer.send(reply).unwrap();
        drop(requests);
        answering.wait(CALLER_PATIENCE);
        // Once the wait returns, the reply is in the caller's socket: nothing is left to write.
        caller.set_nonblocking(true).unwrap();
        let mut got = String::new();
        let read = BufReader::new(&caller).read_line(&mut got);
        assert!(read.is_ok() && got.contains("deleted"), "{read:?} {got:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_user_holds_a_few_places_and_root_always_finds_one() {
        let mut c = Callers::default();
        for _ in 0..MAX_CALLERS_PER_USER {
            c.enter(1001).unwrap();
        }
        let e = c.enter(1001).unwrap_err();
        assert!(e.contains("uid 1001 has 4 requests"), "{e}");
        // Other users fill the rest of the users' places...
        let mut uid = 2000;
        while c.all < MAX_CALLERS - ROOT_PLACES {
            while c.enter(uid).is_ok() && c.all < MAX_CALLERS - ROOT_PLACES {}
            uid += 1;
        }
        assert!(c.enter(uid + 1).is_err());
        // ...and root still gets in.
        for _ in 0..ROOT_PLACES {
            c.enter(ROOT).unwrap();
        }
        assert!(c.enter(ROOT).is_err());
        c.leave(1001);
        assert!(c.enter(1001).is_err(), "the users' places are still full");
        c.leave(ROOT);
        c.leave(ROOT);
        assert_eq!(c.per_user[&ROOT], ROOT_PLACES - 2);
    }
}
