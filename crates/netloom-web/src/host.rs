//! The `Host` check against DNS rebinding: a web page elsewhere can point a name it owns at
//! 127.0.0.1 and have the visitor's browser read this server as if it were that site. The
//! browser still sends the name in `Host`, so only requests addressed to the bound address, an
//! IP literal of it (any one for an unspecified address) or `localhost` are served.

use std::net::{IpAddr, SocketAddr};

/// Why a request's `Host` is refused: the status and one line to show.
#[derive(Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 400 without a Host in HTTP/1.1, 421 for another name.
    pub status: u16,
    /// Why, and what to use instead.
    pub why: String,
}

/// Whether a request with `host` (its `Host` header; HTTP/1.`minor`) may be served by a server
/// bound to `bound`. The port is not compared: a tunnel (`ssh -L 9000:localhost:8080`) changes it,
/// and a rebinding page cannot choose a name it does not own.
pub fn check(host: Option<&str>, minor: u8, bound: SocketAddr) -> Result<(), Refusal> {
    let allowed = || {
        format!(
            "use http://{bound}/{} (netloom answers only requests addressed to its own address, \
             an IP address it listens on or localhost, against DNS rebinding)",
            if bound.ip().is_loopback() {
                format!(" or http://localhost:{}/", bound.port())
            } else {
                String::new()
            }
        )
    };
    let Some(host) = host else {
        // HTTP/1.0 has no Host; a browser, the one a rebinding page drives, always sends it.
        return match minor {
            0 => Ok(()),
            _ => Err(Refusal {
                status: 400,
                why: format!("an HTTP/1.1 request needs a Host header: {}", allowed()),
            }),
        };
    };
    let name = without_port(host);
    let ok = match name.and_then(|n| n.parse::<IpAddr>().ok()) {
        Some(ip) => bound.ip().is_unspecified() || ip == bound.ip(),
        None => name.is_some_and(|n| {
            n.eq_ignore_ascii_case("localhost") || n.eq_ignore_ascii_case("localhost.")
        }),
    };
    match ok {
        true => Ok(()),
        false => Err(Refusal {
            status: 421,
            why: format!(
                "this request was addressed to {:?}, not to this server: {}",
                host.chars().take(100).collect::<String>(),
                allowed()
            ),
        }),
    }
}

/// The name or address of a Host value without its port (`[::1]:80` -> `::1`), if well formed.
fn without_port(host: &str) -> Option<&str> {
    let port_ok = |port: &str| port.is_empty() || port.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let port = match after {
            "" => "",
            after => after.strip_prefix(':')?,
        };
        return port_ok(port).then_some(ip);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => port_ok(port).then_some(name),
        Some(_) => None,
        None => Some(host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(host: Option<&str>, minor: u8, bound: &str) -> u16 {
        match check(host, minor, bound.parse().unwrap()) {
            Ok(()) => 200,
            Err(refusal) => refusal.status,
        }
    }

    #[test]
    fn only_the_bound_address_its_literals_and_localhost_are_served() {
        let local = "127.0.0.1:8080";
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "localhost:8080",
            "LOCALHOST",
            "localhost.:9000",
        ] {
            assert_eq!(status(Some(ok), 1, local), 200, "{ok}");
        }
        for rebinding in [
            "evil.example:8080",
            "evil.example",
            "127.0.0.1.nip.io:8080",
            "localhost.evil.example",
            "127.0.0.2:8080",
            "[::1]:8080",
            "",
            "127.0.0.1:80x",
            "::1",
        ] {
            assert_eq!(status(Some(rebinding), 1, local), 421, "{rebinding}");
        }
        // Listening everywhere: any IP literal reaches it, no name but localhost.
        assert_eq!(status(Some("192.0.2.7:9464"), 1, "0.0.0.0:9464"), 200);
        assert_eq!(status(Some("[2001:db8::1]:9464"), 1, "[::]:9464"), 200);
        assert_eq!(status(Some("[::1]"), 1, "[::1]:9464"), 200);
        assert_eq!(status(Some("metrics.example:9464"), 1, "0.0.0.0:9464"), 421);
        // No Host: HTTP/1.0 (no browser sends that) is served, HTTP/1.1 is malformed.
        assert_eq!(status(None, 0, local), 200);
        assert_eq!(status(None, 1, local), 400);
    }

    #[test]
    fn a_refusal_says_what_to_use_instead() {
        let refusal =
            check(Some("evil.example"), 1, "127.0.0.1:8080".parse().unwrap()).unwrap_err();
        assert!(refusal.why.contains("\"evil.example\""), "{}", refusal.why);
        assert!(
            refusal.why.contains("http://127.0.0.1:8080/"),
            "{}",
            refusal.why
        );
        assert!(
            refusal.why.contains("http://localhost:8080/"),
            "{}",
            refusal.why
        );
        assert!(refusal.why.contains("DNS rebinding"), "{}", refusal.why);
    }
}
