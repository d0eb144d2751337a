//! The control channel of a running experiment: a Unix socket next to its registry record
//! (`<registry>/<name>/control.sock`), one JSON request and one JSON reply per connection. A
//! thread accepts connections and posts each request to every worker's mailbox, which wakes a
//! sleeping worker, so a change takes effect within microseconds; the answers merge into one.

use crate::mailbox::{Answer, Message, Post};
use crate::stats::Snapshot;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a client asks of the running experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cmd", rename_all = "kebab-case")]
pub enum Request {
    /// Figures so far: accuracy, hosts, pipes.
    Stats,
    /// Change parameters of the link between `a` and `b`: `params` are `key=value` words in the
    /// topology file's vocabulary (`delay=5ms`, `bw=10Mbit`, `loss=1%`, `jitter=1ms`,
    /// `queue=100`, `duplicate=0.1%`); `direction` is `both` (default), `a-b` or `b-a`, relative
    /// to the order `a` `b` given here.
    LinkSet {
        a: String,
        b: String,
        #[serde(default)]
        direction: Option<String>,
        params: Vec<String>,
    },
    /// Take the link between `a` and `b` down (both directions) or bring it up; routes follow.
    LinkState { a: String, b: String, up: bool },
}

/// The reply: `ok` with a body, or an error message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Reply {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

impl Reply {
    pub fn ok(body: serde_json::Value) -> Reply {
        Reply {
            ok: true,
            error: None,
            body: Some(body),
        }
    }

    pub fn error(message: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            error: Some(message.into()),
            body: None,
        }
    }
}

/// The socket of experiment `name` in the registry directory `registry`.
pub fn socket_path(registry: &Path, name: &str) -> PathBuf {
    registry.join(name).join("control.sock")
}

/// How long a client waits for the driver's reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// Listens on `path` on a thread of its own and passes every request to every worker (`posts`),
/// whose answers merge into one reply. The thread ends once the workers are gone (the next
/// connection finds their inboxes closed).
pub fn serve(path: &Path, posts: Vec<Post>) -> std::io::Result<()> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    std::thread::Builder::new()
        .name("netloom-control".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if handle(conn, &posts).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
}

/// Serves one connection; `Err` once the workers are gone.
fn handle(conn: UnixStream, posts: &[Post]) -> Result<(), ()> {
    let mut line = String::new();
    let mut reader = BufReader::new(&conn);
    if reader.read_line(&mut line).is_err() {
        return Ok(());
    }
    let reply = match serde_json::from_str::<Request>(&line) {
        Err(e) => Reply::error(format!("bad request: {e}")),
        Ok(request) => ask(posts, request)?,
    };
    let mut conn = &conn;
    let text = serde_json::to_string(&reply).expect("replies serialize");
    let _ = writeln!(conn, "{text}");
    Ok(())
}

/// Asks every worker and merges their answers: figures add up; a change is applied by each (they
/// all agree on whether it is valid), and the first refusal is the reply.
fn ask(posts: &[Post], request: Request) -> Result<Reply, ()> {
    let (tx, rx) = mpsc::channel();
    for post in posts {
        if !post.send(Message::Request(request.clone(), tx.clone())) {
            return Err(());
        }
    }
    let deadline = Instant::now() + REPLY_TIMEOUT;
    let mut stats: Option<Snapshot> = None;
    let mut changed: Option<Reply> = None;
    for _ in posts {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Answer::Stats(part)) => match &mut stats {
                Some(all) => all.merge(*part),
                None => stats = Some(*part),
            },
            Ok(Answer::Changed(reply)) => {
                if changed.as_ref().is_none_or(|c| c.ok) {
                    changed = Some(reply);
                }
            }
            Err(_) => return Ok(Reply::error("the emulator did not answer in time")),
        }
    }
    Ok(match (stats, changed) {
        (Some(all), _) => Reply::ok(all.to_json()),
        (None, Some(reply)) => reply,
        (None, None) => Reply::error("the emulator has no workers"),
    })
}

/// Sends `request` to the experiment whose socket is `path` and returns its reply.
pub fn request(path: &Path, request: &Request) -> std::io::Result<Reply> {
    let mut conn = UnixStream::connect(path)?;
    conn.set_read_timeout(Some(REPLY_TIMEOUT + Duration::from_secs(1)))?;
    writeln!(
        conn,
        "{}",
        serde_json::to_string(request).expect("requests serialize")
    )?;
    let mut line = String::new();
    BufReader::new(&conn).read_line(&mut line)?;
    serde_json::from_str(&line).map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reaches_every_worker_and_one_reply_the_client() {
        let dir = std::env::temp_dir().join(format!("netloom-control-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("x")).unwrap();
        let path = socket_path(&dir, "x");
        let (inboxes, posts) = crate::mailbox::mailboxes(2).unwrap();
        serve(&path, posts).unwrap();
        // Two workers: the second refuses the change.
        let workers: Vec<_> = inboxes
            .into_iter()
            .enumerate()
            .map(|(k, mut inbox)| {
                std::thread::spawn(move || loop {
                    match inbox.take() {
                        Some(Message::Request(request, reply)) => {
                            assert_eq!(
                                request,
                                Request::LinkState {
                                    a: "h1".into(),
                                    b: "r1".into(),
                                    up: false
                                }
                            );
                            let answer = match k {
                                0 => Reply::ok(serde_json::json!({"done": true})),
                                _ => Reply::error("worker 1 says no"),
                            };
                            reply.send(Answer::Changed(answer)).unwrap();
                            return;
                        }
                        Some(_) => panic!("only requests here"),
                        None => std::thread::sleep(Duration::from_millis(1)),
                    }
                })
            })
            .collect();
        let req = Request::LinkState {
            a: "h1".into(),
            b: "r1".into(),
            up: false,
        };
        let reply = request(&path, &req).unwrap();
        assert!(!reply.ok);
        assert_eq!(reply.error.unwrap(), "worker 1 says no");
        for w in workers {
            w.join().unwrap();
        }
        let bad = {
            let mut c = UnixStream::connect(&path).unwrap();
            writeln!(c, "{{\"cmd\":\"reboot\"}}").unwrap();
            let mut line = String::new();
            BufReader::new(&c).read_line(&mut line).unwrap();
            serde_json::from_str::<Reply>(&line).unwrap()
        };
        assert!(!bad.ok && bad.error.unwrap().contains("bad request"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
