//! What each path answers: `/metrics` (Prometheus), the web view's page, its JSON (`/api/info`,
//! `/api/stats`), link changes (`POST /api/link`, with the token printed at start) and a
//! `netloom sim --json` report to view (`/api/report`). It reads the run only through a
//! `netloom_live::RunView`.

use crate::counters::Counters;
use crate::http::{Request, Response};
use crate::metrics::{exposition, CONTENT_TYPE};
use crate::page;
use netloom_live::{Direction, RunView};
use serde::Deserialize;

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

fn json(status: u16, body: &serde_json::Value) -> Response {
    Response::new(status, "application/json", body.to_string())
}

/// A refusal with its reason, as JSON.
pub fn refusal(status: u16, error: impl std::fmt::Display) -> Response {
    json(status, &serde_json::json!({ "error": error.to_string() }))
}

/// The answer to `request`; `counters` are the server's own, appended to `/metrics`.
pub fn respond(
    request: &Request,
    source: &dyn RunView,
    routes: &Routes,
    counters: &Counters,
) -> Response {
    let path = request.path.as_str();
    let method = request.method.as_str();
    match (method, path, routes) {
        ("GET", "/metrics", Routes { metrics: true, .. }) => match source.stats() {
            Ok(report) => {
                let mut text = exposition(&report);
                counters.exposition(&mut text);
                Response::new(200, CONTENT_TYPE, text)
            }
            Err(e) => Response::new(503, "text/plain", e.to_string()),
        },
        ("GET", "/api/info", Routes { web: Some(_), .. }) => match source.info() {
            Ok(info) => Response::new(
                200,
                "application/json",
                serde_json::to_vec(&info).expect("infos serialize"),
            ),
            Err(e) => refusal(503, e),
        },
        ("GET", "/api/stats", Routes { web: Some(_), .. }) => match source.stats() {
            Ok(report) => Response::new(
                200,
                "application/json",
                serde_json::to_vec(&report).expect("reports serialize"),
            ),
            Err(e) => refusal(503, e),
        },
        (
            "GET",
            "/api/report",
            Routes {
                report: Some(text), ..
            },
        ) => Response::new(200, "application/json", text.clone()),
        (
            "POST",
            "/api/link",
            Routes {
                web: Some(token), ..
            },
        ) => {
            let bearer = request
                .authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "));
            if bearer != Some(token.as_str()) {
                refusal(
                    403,
                    "changes need the token netloom printed at start (Authorization: Bearer TOKEN)",
                )
            } else {
                link_set(&request.body, source)
            }
        }
        ("GET", _, Routes { web: Some(_), .. })
        | (
            "GET",
            _,
            Routes {
                report: Some(_), ..
            },
        ) => match page::asset(path) {
            Some((content_type, body)) => Response::new(200, content_type, body),
            None => refusal(404, format!("no {path} here")),
        },
        _ => refusal(404, format!("no {method} {path} here")),
    }
}

fn link_set(body: &[u8], source: &dyn RunView) -> Response {
    let change: LinkSet = match serde_json::from_slice(body) {
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
