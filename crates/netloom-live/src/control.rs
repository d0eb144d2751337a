//! The control channel of a running experiment: a Unix socket next to its registry record
//! (`<registry>/<name>/control.sock`), one JSON request and one JSON reply per connection. A
//! thread accepts connections and hands each request to the driver's loop through a channel,
//! then wakes the loop, so a change takes effect within microseconds even while it sleeps.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

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

/// A request waiting for the driver, with where its reply goes.
pub struct Pending {
    pub request: Request,
    pub reply: Sender<Reply>,
}

/// The socket of experiment `name` in the registry directory `registry`.
pub fn socket_path(registry: &Path, name: &str) -> PathBuf {
    registry.join(name).join("control.sock")
}

/// How long a client waits for the driver's reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// Listens on `path` on a thread of its own; every request is sent to the returned receiver and
/// followed by a byte on `waker`, which the driver's poller watches. The thread ends when the
/// receiver is dropped (the next connection finds the channel closed).
pub fn serve(path: &Path, waker: UnixStream) -> std::io::Result<Receiver<Pending>> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("netloom-control".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if handle(conn, &tx, &waker).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}

/// Serves one connection; `Err` once the driver is gone.
fn handle(conn: UnixStream, tx: &Sender<Pending>, mut waker: &UnixStream) -> Result<(), ()> {
    let mut line = String::new();
    let mut reader = BufReader::new(&conn);
    if reader.read_line(&mut line).is_err() {
        return Ok(());
    }
    let reply = match serde_json::from_str::<Request>(&line) {
        Err(e) => Reply::error(format!("bad request: {e}")),
        Ok(request) => {
            let (reply_tx, reply_rx) = mpsc::channel();
            tx.send(Pending {
                request,
                reply: reply_tx,
            })
            .map_err(|_| ())?;
            let _ = waker.write_all(&[1]);
            reply_rx
                .recv_timeout(REPLY_TIMEOUT)
                .unwrap_or_else(|_| Reply::error("the emulator did not answer in time"))
        }
    };
    let mut conn = &conn;
    let text = serde_json::to_string(&reply).expect("replies serialize");
    let _ = writeln!(conn, "{text}");
    Ok(())
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
    fn a_request_reaches_the_driver_and_its_reply_the_client() {
        let dir = std::env::temp_dir().join(format!("netloom-control-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("x")).unwrap();
        let path = socket_path(&dir, "x");
        let (waker, mut woken) = UnixStream::pair().unwrap();
        let rx = serve(&path, waker).unwrap();
        let driver = std::thread::spawn(move || {
            let p = rx.recv().unwrap();
            assert_eq!(
                p.request,
                Request::LinkState {
                    a: "h1".into(),
                    b: "r1".into(),
                    up: false
                }
            );
            p.reply
                .send(Reply::ok(serde_json::json!({"done": true})))
                .unwrap();
        });
        let req = Request::LinkState {
            a: "h1".into(),
            b: "r1".into(),
            up: false,
        };
        let reply = request(&path, &req).unwrap();
        assert!(reply.ok);
        assert_eq!(reply.body.unwrap()["done"], true);
        let mut byte = [0u8; 1];
        std::io::Read::read_exact(&mut woken, &mut byte).unwrap();
        driver.join().unwrap();
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
