//! The control protocol on the wire (docs/control.md): over a Unix socket, one JSON request per
//! line and one JSON reply per line, each with the protocol's `version`. This module parses and
//! writes them, checks the version and names unknown requests; `server` serves them, `call` is a
//! client's side.

use crate::message::Request;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The version of the protocol this netloom speaks. A request of another version is refused
/// with a reply that says which this one is.
pub const VERSION: u32 = 1;
/// The longest request line accepted, bytes.
pub const MAX_REQUEST: usize = 64 * 1024;
/// The longest reply line a client accepts, bytes (a `stats` reply of 100,000 pipes fits).
pub const MAX_REPLY: usize = 256 * 1024 * 1024;

/// A reply on the wire: `{"version": 1, "ok": true, "body": ...}` or
/// `{"version": 1, "ok": false, "error": "..."}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// The protocol version of the replier.
    pub version: u32,
    /// Whether the request was done.
    pub ok: bool,
    /// Why not, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The answer, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl Reply {
    /// A reply with `body`.
    pub fn ok(body: Value) -> Reply {
        Reply {
            version: VERSION,
            ok: true,
            error: None,
            body: Some(body),
        }
    }

    /// A refusal saying why.
    pub fn error(message: impl Into<String>) -> Reply {
        Reply {
            version: VERSION,
            ok: false,
            error: Some(message.into()),
            body: None,
        }
    }

    /// The reply as one line of the protocol (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("replies serialize")
    }
}

/// The socket of experiment `name` in the registry directory `registry`.
pub fn socket_path(registry: &Path, name: &str) -> PathBuf {
    registry.join(name).join("control.sock")
}

/// A request as one line of the protocol (no newline).
pub fn request_line(request: &Request) -> String {
    let mut value = serde_json::to_value(request).expect("requests serialize");
    value["version"] = VERSION.into();
    value.to_string()
}

/// Why a request line is not a request of this protocol; `Display` is the reply's error.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Not JSON.
    #[error("a request is one JSON object per line: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("a request is a JSON object, like {{\"version\": 1, \"cmd\": \"stats\"}}")]
    NotObject,
    /// A version this netloom does not speak.
    #[error("protocol version {0} is not spoken here; this netloom speaks version {VERSION}")]
    Version(u64),
    /// A version that is not a number.
    #[error("\"version\" must be a number")]
    VersionNotNumber,
    /// No version.
    #[error("no \"version\"; write {{\"version\": {VERSION}, \"cmd\": ...}} (docs/control.md)")]
    NoVersion,
    /// No command.
    #[error("no \"cmd\"; requests are {}", Request::COMMANDS.join(", "))]
    NoCommand,
    /// A command that is not one of the protocol's.
    #[error("unknown request {cmd:?}{}; requests are {}", netloom_topo::did_you_mean(.cmd, Request::COMMANDS), Request::COMMANDS.join(", "))]
    UnknownCommand {
        /// The command as given.
        cmd: String,
    },
    /// The command's fields do not read (one missing, or of the wrong type).
    #[error("request {cmd:?}: {source}")]
    Fields {
        /// The command.
        cmd: String,
        /// What serde found wrong.
        source: serde_json::Error,
    },
    /// A field the command does not have.
    #[error("request {cmd:?}: unknown field {field:?}")]
    UnknownField {
        /// The command.
        cmd: String,
        /// The field as given.
        field: String,
    },
}

/// Parses one request line, or says what is wrong with it as the reply's error.
pub fn parse_request(line: &str) -> Result<Request, RequestError> {
    let mut value: Value = serde_json::from_str(line.trim()).map_err(RequestError::NotJson)?;
    let Some(object) = value.as_object_mut() else {
        return Err(RequestError::NotObject);
    };
    match object.remove("version").map(|v| v.as_u64()) {
        Some(Some(v)) if v == u64::from(VERSION) => {}
        Some(Some(v)) => return Err(RequestError::Version(v)),
        Some(None) => return Err(RequestError::VersionNotNumber),
        None => return Err(RequestError::NoVersion),
    }
    let cmd = match object.get("cmd") {
        Some(Value::String(cmd)) => cmd.clone(),
        _ => return Err(RequestError::NoCommand),
    };
    if !Request::COMMANDS.contains(&cmd.as_str()) {
        return Err(RequestError::UnknownCommand { cmd });
    }
    let given: Vec<String> = object.keys().cloned().collect();
    let request: Request = match serde_json::from_value(value) {
        Ok(request) => request,
        Err(source) => return Err(RequestError::Fields { cmd, source }),
    };
    // Serde lets extra keys through on requests without fields; a typo there must not pass.
    let known = serde_json::to_value(&request).expect("requests serialize");
    if let Some(extra) = given.iter().find(|k| known.get(k.as_str()).is_none()) {
        return Err(RequestError::UnknownField {
            cmd,
            field: extra.clone(),
        });
    }
    Ok(request)
}

/// Why a client's call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The socket could not be reached or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The reply was not the protocol's.
    #[error("the reply is not netloom's control protocol: {0}")]
    Garbled(String),
    /// The experiment refused the request, saying why.
    #[error("{0}")]
    Refused(String),
}

/// Sends `request` to the experiment whose socket is `path` and returns the reply's body,
/// waiting up to `timeout` for it.
pub fn call(path: &Path, request: &Request, timeout: Duration) -> Result<Value, CallError> {
    open(path, request, timeout).map(|(body, _)| body)
}

/// Sends a streaming request (`events`) and returns the reply's body and the connection, from
/// which the stream is read until the experiment closes it (the run stopped). Waits up to
/// `timeout` for the reply; the stream's reads then wait as long as it takes.
pub fn open(
    path: &Path,
    request: &Request,
    timeout: Duration,
) -> Result<(Value, BufReader<UnixStream>), CallError> {
    let mut conn = UnixStream::connect(path)?;
    conn.set_read_timeout(Some(timeout))?;
    conn.set_write_timeout(Some(timeout))?;
    writeln!(conn, "{}", request_line(request))?;
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    (&mut reader).take(MAX_REPLY as u64).read_line(&mut line)?;
    let body = parse_reply(&line)?;
    reader.get_ref().set_read_timeout(None)?;
    Ok((body, reader))
}

/// A reply line's body, or why there is none.
fn parse_reply(line: &str) -> Result<Value, CallError> {
    let reply: Reply = serde_json::from_str(line).map_err(|e| CallError::Garbled(e.to_string()))?;
    if reply.version != VERSION {
        return Err(CallError::Garbled(format!(
            "the experiment speaks protocol version {}, this client {VERSION}",
            reply.version
        )));
    }
    match (reply.ok, reply.body, reply.error) {
        (true, body, _) => Ok(body.unwrap_or(Value::Null)),
        (false, _, error) => Err(CallError::Refused(error.unwrap_or_default())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Direction;

    #[test]
    fn requests_round_trip_with_their_version() {
        let mut set = serde_json::Map::new();
        set.insert("delay".into(), "5ms".into());
        for request in [
            Request::Stats,
            Request::Info,
            Request::Stop,
            Request::Events,
            Request::Capture {
                a: "r1".into(),
                b: Some("r2".into()),
                direction: Direction::BToA,
                when: crate::tap::When::Enter,
                snaplen: 96,
            },
            Request::LinkState {
                a: "r1".into(),
                b: "r2".into(),
                up: false,
            },
            Request::LinkSet {
                a: "r1".into(),
                b: "r2".into(),
                direction: Direction::AToB,
                set,
            },
        ] {
            let line = request_line(&request);
            assert!(line.contains("\"version\":1"), "{line}");
            assert_eq!(parse_request(&line).unwrap(), request);
        }
        let line =
            r#"{"version": 1, "cmd": "link-set", "a": "x", "b": "y", "set": {"bw": "1Gbit"}}"#;
        match parse_request(line).unwrap() {
            Request::LinkSet { direction, .. } => assert_eq!(direction, Direction::Both),
            other => panic!("{other:?}"),
        }
        let line = r#"{"version": 1, "cmd": "capture", "a": "h1"}"#;
        match parse_request(line).unwrap() {
            Request::Capture {
                b, when, snaplen, ..
            } => assert_eq!((b, when, snaplen), (None, crate::tap::When::Exit, 262_144)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let err = |line: &str| parse_request(line).unwrap_err().to_string();
        assert!(err(r#"{"version": 1, "cmd": "reboot"}"#)
            .contains("unknown request \"reboot\"; requests are info, stats, link-set"));
        assert!(err(r#"{"version": 1, "cmd": "stat"}"#).contains("did you mean \"stats\""));
        assert!(err(r#"{"cmd": "stats"}"#).contains("no \"version\""));
        assert!(err(r#"{"version": 2, "cmd": "stats"}"#).contains("speaks version 1"));
        assert!(err("stats").contains("one JSON object per line"));
        assert!(err("[1]").contains("is a JSON object"));
        assert!(err(r#"{"version": 1, "cmd": "link-state", "a": "x"}"#)
            .contains("request \"link-state\": missing field"));
        assert!(err(r#"{"version": 1, "cmd": "stats", "extra": 1}"#).contains("unknown field"));
    }

    #[test]
    fn replies_carry_the_version() {
        let ok = Reply::ok(serde_json::json!({"x": 1})).to_line();
        assert_eq!(ok, r#"{"version":1,"ok":true,"body":{"x":1}}"#);
        let no = Reply::error("nope").to_line();
        assert_eq!(no, r#"{"version":1,"ok":false,"error":"nope"}"#);
    }
}
