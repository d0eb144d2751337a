//! One HTTP/1.x request read from bytes as they arrive (the head parsed by `httparse`, a body of
//! `Content-Length` bytes at most `MAX_BODY`), and one response written whole with
//! `Connection: close`: the server answers one request per connection, so nothing is kept
//! between requests.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The largest request head (request line and headers) read: a browser's is under 2 KiB.
pub const MAX_HEAD: usize = 8 * 1024;
/// The largest request body accepted (a link change is a few hundred bytes).
pub const MAX_BODY: usize = 16 * 1024;
/// Headers read in a head; more are refused (a browser sends about fifteen).
const MAX_HEADERS: usize = 48;

/// A complete request, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The `Host` header, if sent.
    pub host: Option<String>,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
    /// HTTP/1.0 (0) or HTTP/1.1 (1).
    pub minor_version: u8,
    /// The body.
    pub body: Vec<u8>,
}

/// What the bytes read so far make.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet: read more.
    Partial,
    /// A whole request.
    Complete(Request),
    /// Not a request this server takes: answer `status` with `why` and close.
    Refused {
        /// The status to answer.
        status: u16,
        /// Why, in one line.
        why: String,
    },
}

fn refused(status: u16, why: impl Into<String>) -> Parsed {
    Parsed::Refused {
        status,
        why: why.into(),
    }
}

/// What `bytes` (everything read from a connection so far) make.
pub fn parse(bytes: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let head_len = match head.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if bytes.len() >= MAX_HEAD => {
            return refused(431, format!("the request head is over {MAX_HEAD} bytes"))
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => {
            return refused(431, format!("more than {MAX_HEADERS} headers"))
        }
        Err(e) => return refused(400, format!("not an HTTP request: {e}")),
    };
    if head_len > MAX_HEAD {
        return refused(431, format!("the request head is over {MAX_HEAD} bytes"));
    }
    let header = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if header("Transfer-Encoding").is_some() {
        return refused(411, "send the body with a Content-Length, not chunked");
    }
    let length = match header("Content-Length").map(|l| l.parse::<usize>()) {
        None => 0,
        Some(Ok(n)) if n <= MAX_BODY => n,
        Some(Ok(n)) => return refused(413, format!("a body of {n} bytes: at most {MAX_BODY}")),
        Some(Err(_)) => return refused(400, "Content-Length is not a number"),
    };
    if bytes.len() < head_len + length {
        return Parsed::Partial;
    }
    let path = head.path.unwrap_or("");
    Parsed::Complete(Request {
        method: head.method.unwrap_or("").to_string(),
        path: path.split('?').next().unwrap_or("").to_string(),
        host: header("Host"),
        authorization: header("Authorization"),
        minor_version: head.version.unwrap_or(1),
        body: bytes[head_len..head_len + length].to_vec(),
    })
}

/// The reason phrase of the statuses this server answers.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "",
    }
}

/// A response: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response of `status` with `body`.
    pub fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            content_type,
            body: body.into(),
        }
    }

    /// The bytes on the wire for a request of HTTP/1.`minor`: status line (in the request's
    /// version, as clients of HTTP/1.0 expect), headers, body.
    pub fn bytes(&self, minor: u8) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.{} {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
            minor.min(1),
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        )
        .into_bytes();
        out.extend_from_slice(&self.body);
        out
    }

    /// Writes the response to a request of HTTP/1.`minor` to `conn` and closes it, giving up at
    /// `deadline`: a client that does not read holds the thread that writes no longer than that.
    pub fn send(&self, mut conn: TcpStream, minor: u8, deadline: Instant) {
        let bytes = self.bytes(minor);
        let mut rest = bytes.as_slice();
        while !rest.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || conn.set_write_timeout(Some(left)).is_err() {
                return;
            }
            match conn.write(rest) {
                Ok(0) | Err(_) => return,
                Ok(n) => rest = &rest[n..],
            }
        }
        let _ = conn.flush();
        let _ = conn.shutdown(std::net::Shutdown::Write);
    }
}

/// How long a response may take to write.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_arrives_in_pieces_and_is_taken_whole() {
        let text = b"POST /api/link?x=1 HTTP/1.1\r\nHost: localhost:8080\r\nAuthorization: Bearer t\r\nContent-Length: 4\r\n\r\nbody";
        for cut in [0, 10, 40, text.len() - 1] {
            assert_eq!(parse(&text[..cut]), Parsed::Partial, "cut at {cut}");
        }
        let Parsed::Complete(request) = parse(text) else {
            panic!("complete");
        };
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/api/link");
        assert_eq!(request.host.as_deref(), Some("localhost:8080"));
        assert_eq!(request.authorization.as_deref(), Some("Bearer t"));
        assert_eq!(request.body, b"body");
        assert_eq!(request.minor_version, 1);
    }

    #[test]
    fn a_response_closes_its_connection_in_the_requests_version() {
        let response = Response::new(421, "text/plain", "why");
        let text = String::from_utf8(response.bytes(0)).unwrap();
        assert!(
            text.starts_with("HTTP/1.0 421 Misdirected Request\r\n"),
            "{text}"
        );
        assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
        assert!(
            text.ends_with(
                "Content-Length: 3\r\nConnection: close\r\nCache-Control: no-store\r\n\r\nwhy"
            ),
            "{text}"
        );
        let text = String::from_utf8(response.bytes(1)).unwrap();
        assert!(text.starts_with("HTTP/1.1 421 "), "{text}");
    }

    #[test]
    fn what_is_too_big_or_not_http_is_refused_with_its_status() {
        let status = |bytes: &[u8]| match parse(bytes) {
            Parsed::Refused { status, .. } => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(b"\x16\x03\x01 hello\r\n\r\n"), 400);
        let long = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD));
        assert_eq!(status(long.as_bytes()), 431);
        let big = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert_eq!(status(big.as_bytes()), 413);
        assert_eq!(
            status(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X{i}: y\r\n"))
            .collect();
        assert_eq!(
            status(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()),
            431
        );
    }
}
