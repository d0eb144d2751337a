//! The HTTP server of a live run: binds first (so a port in use is refused before the run
//! starts), then serves on one thread of its own: `/metrics` (Prometheus), the web view's page,
//! its JSON (`/api/info` once, `/api/stats` every second), link changes (`POST /api/link`, with the token printed at start)
//! and a `netloom sim --json` report to view (`/api/report`). It reads the run only through its
//! `Source`, so a scrape or a page costs the workers one snapshot, as `netloom stats` does.

use crate::metrics::{exposition, CONTENT_TYPE};
use crate::page;
use crate::source::Source;
use netloom_live::Direction;
use serde::Deserialize;
use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The largest request body accepted (a link change is a few hundred bytes).
const MAX_BODY: u64 = 64 * 1024;

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

/// What the server serves.
#[derive(Clone, Debug, Default)]
pub struct Routes {
    /// `/metrics`.
    pub metrics: bool,
    /// The web view: the page, `/api/info`, `/api/stats`, and `/api/link` with this token.
    pub web: Option<String>,
    /// A `netloom sim --json` report the page shows (`/api/report`).
    pub report: Option<String>,
}

/// A bound listener, not serving yet.
pub struct Bound {
    server: tiny_http::Server,
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
        let server = tiny_http::Server::http(addr).map_err(|e| WebError::Bind {
            addr,
            reason: e.to_string(),
        })?;
        let addr = server.server_addr().to_ip().unwrap_or(addr);
        Ok(Bound { server, addr })
    }

    /// The address bound (with the port the system chose, for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves `routes` from `source` on a thread of its own until the server is dropped.
    pub fn serve(self, source: Arc<dyn Source>, routes: Routes) -> std::io::Result<WebServer> {
        let server = Arc::new(self.server);
        let thread = {
            let server = server.clone();
            std::thread::Builder::new()
                .name("netloom-http".into())
                .spawn(move || {
                    for request in server.incoming_requests() {
                        respond(request, source.as_ref(), &routes);
                    }
                })?
        };
        Ok(WebServer {
            server,
            addr: self.addr,
            thread: Some(thread),
        })
    }
}

/// A serving HTTP server; dropping it stops it.
pub struct WebServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl WebServer {
    /// The address it serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
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

/// A link change as the page posts it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSet {
    a: String,
    b: String,
    #[serde(default)]
    direction: Direction,
    set: serde_json::Map<String, serde_json::Value>,
}

type Reply = tiny_http::Response<std::io::Cursor<Vec<u8>>>;

fn reply(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
    let header = tiny_http::Header::from_bytes("Content-Type", content_type)
        .expect("content types are valid headers");
    tiny_http::Response::from_data(body.into())
        .with_status_code(status)
        .with_header(header)
}

fn json(status: u16, body: &serde_json::Value) -> Reply {
    reply(status, "application/json", body.to_string())
}

fn refusal(status: u16, error: impl std::fmt::Display) -> Reply {
    json(status, &serde_json::json!({ "error": error.to_string() }))
}

fn respond(mut request: tiny_http::Request, source: &dyn Source, routes: &Routes) {
    let path = request.url().split('?').next().unwrap_or("").to_string();
    let method = request.method().clone();
    use tiny_http::Method::{Get, Post};
    let response = match (&method, path.as_str(), routes) {
        (Get, "/metrics", Routes { metrics: true, .. }) => match source.stats() {
            Ok(report) => reply(200, CONTENT_TYPE, exposition(&report)),
            Err(e) => reply(503, "text/plain", e.to_string()),
        },
        (Get, "/api/info", Routes { web: Some(_), .. }) => match source.info() {
            Ok(info) => reply(
                200,
                "application/json",
                serde_json::to_vec(&info).expect("infos serialize"),
            ),
            Err(e) => refusal(503, e),
        },
        (Get, "/api/stats", Routes { web: Some(_), .. }) => match source.stats() {
            Ok(report) => reply(
                200,
                "application/json",
                serde_json::to_vec(&report).expect("reports serialize"),
            ),
            Err(e) => refusal(503, e),
        },
        (
            Get,
            "/api/report",
            Routes {
                report: Some(text), ..
            },
        ) => reply(200, "application/json", text.clone()),
        (
            Post,
            "/api/link",
            Routes {
                web: Some(token), ..
            },
        ) => {
            if bearer(&request).as_deref() != Some(token.as_str()) {
                refusal(
                    403,
                    "changes need the token netloom printed at start (Authorization: Bearer TOKEN)",
                )
            } else {
                link_set(&mut request, source)
            }
        }
        (Get, _, Routes { web: Some(_), .. })
        | (
            Get,
            _,
            Routes {
                report: Some(_), ..
            },
        ) => match page::asset(&path) {
            Some((content_type, body)) => reply(200, content_type, body),
            None => refusal(404, format!("no {path} here")),
        },
        _ => refusal(404, format!("no {method} {path} here")),
    };
    // A client that went away is no concern of the run's.
    let _ = request.respond(response);
}

/// The token of an `Authorization: Bearer` header.
fn bearer(request: &tiny_http::Request) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .and_then(|h| h.value.as_str().strip_prefix("Bearer ").map(str::to_string))
}

fn link_set(request: &mut tiny_http::Request, source: &dyn Source) -> Reply {
    let mut body = String::new();
    if let Err(e) = request.as_reader().take(MAX_BODY).read_to_string(&mut body) {
        return refusal(400, format!("reading the request: {e}"));
    }
    let change: LinkSet = match serde_json::from_str(&body) {
        Ok(change) => change,
        Err(e) => {
            return refusal(
                400,
                format!("a link change is {{\"a\", \"b\", \"direction\", \"set\"}}: {e}"),
            )
        }
    };
    match source.link_set(&change.a, &change.b, change.direction, &change.set) {
        Ok(done) => json(
            200,
            &serde_json::to_value(&done).expect("changes serialize"),
        ),
        Err(e) => refusal(400, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceError;
    use netloom_live::{ControlError, LinkChange, Report};
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;
    use std::sync::Mutex;

    /// A change as the fake run received it: the ends and the parameters.
    type Received = (String, String, serde_json::Map<String, serde_json::Value>);

    /// A run in memory: the figures of `metrics::tests::report`, and the changes asked for.
    #[derive(Default)]
    struct Fake {
        changes: Mutex<Vec<Received>>,
    }

    impl Source for Fake {
        fn info(&self) -> Result<netloom_live::RunInfo, SourceError> {
            Err(SourceError::NoRun)
        }

        fn stats(&self) -> Result<Report, SourceError> {
            Ok(crate::metrics::tests::report())
        }

        fn link_set(
            &self,
            a: &str,
            b: &str,
            direction: Direction,
            set: &serde_json::Map<String, serde_json::Value>,
        ) -> Result<LinkChange, SourceError> {
            if a == "nowhere" {
                let unknown = ControlError::UnknownNode {
                    name: a.into(),
                    hint: String::new(),
                };
                return Err(SourceError::Live(unknown.into()));
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
            .serve(fake.clone(), routes)
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
}
