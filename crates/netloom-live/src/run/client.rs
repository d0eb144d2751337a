//! `Client`: a running experiment of another process reached through its control socket, as a
//! `RunView` (the same figures and link changes as the run in this process gives). It only
//! calls; the protocol is `protocol`'s.

use crate::message::{Direction, LinkChange, Request};
use crate::run::event::{Event, Events, Subscription};
use crate::run::protocol::{call, open};
use crate::run::report::{Report, RunInfo};
use crate::run::{RunError, RunView};
use serde_json::{Map, Value};
use std::io::BufRead;
use std::path::PathBuf;
use std::time::Duration;

/// How long a request through the control socket waits: the experiment's own wait for its
/// workers, and more.
const REPLY_WAIT: Duration = Duration::from_secs(10);

/// A running experiment reached through its control socket.
pub struct Client {
    path: PathBuf,
}

impl Client {
    /// The experiment whose control socket is `path` (`protocol::socket_path`).
    pub fn new(path: PathBuf) -> Client {
        Client { path }
    }

    fn failed(&self) -> impl FnOnce(crate::run::protocol::CallError) -> RunError + '_ {
        move |source| RunError::Call {
            path: self.path.clone(),
            source,
        }
    }

    fn ask<T: serde::de::DeserializeOwned>(&self, request: &Request) -> Result<T, RunError> {
        let body = call(&self.path, request, REPLY_WAIT).map_err(self.failed())?;
        serde_json::from_value(body).map_err(RunError::Reply)
    }
}

impl RunView for Client {
    fn info(&self) -> Result<RunInfo, RunError> {
        self.ask(&Request::Info)
    }

    fn stats(&self) -> Result<Report, RunError> {
        self.ask(&Request::Stats)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        self.ask(&Request::LinkSet {
            a: a.into(),
            b: b.into(),
            direction,
            set: set.clone(),
        })
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        self.ask(&Request::LinkState {
            a: a.into(),
            b: b.into(),
            up,
        })
    }

    /// The socket's event stream, read by a thread of its own into the subscription's queue
    /// (one that does not keep up loses events, counted, as in the run's own process). The
    /// subscription ends when the stream does: after `Stopped`, when the run is gone, or at a
    /// line that is not an event (another protocol), which is dropped with the rest. The
    /// thread ends with the stream, or at the first event after the subscription is dropped.
    fn subscribe(&self) -> Result<Subscription, RunError> {
        let (_, reader) = open(&self.path, &Request::Events, REPLY_WAIT).map_err(self.failed())?;
        let events = Events::default();
        let subscription = events.subscribe();
        std::thread::Builder::new()
            .name("netloom-events".into())
            .spawn(move || {
                for line in reader.lines() {
                    let Ok(event) = line.map(|l| serde_json::from_str::<Event>(&l)) else {
                        return;
                    };
                    let Ok(event) = event else { return };
                    events.publish(event);
                    if !events.watched() {
                        return;
                    }
                }
            })
            .map_err(|source| {
                RunError::Live(crate::error::LiveError::Io {
                    what: "starting the event reader's thread".into(),
                    source,
                })
            })?;
        Ok(subscription)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::event::EventLines;
    use crate::run::protocol::{CallError, Reply};
    use crate::run::server::{Handler, Response, Server};
    use std::sync::mpsc::RecvTimeoutError;
    use std::sync::Arc;

    fn started() -> Event {
        Event::Started {
            at_ns: 0,
            experiment: "lab".into(),
            hosts: 2,
            workers: 1,
        }
    }

    fn stopped() -> Event {
        Event::Stopped {
            at_ns: 9,
            reason: "request".into(),
        }
    }

    /// A control socket in a directory of its own, answering link changes with a refusal and
    /// streaming `events` from `run`'s events.
    fn serve(tag: &str, run: Arc<Events>) -> (Server, PathBuf) {
        let dir = std::env::temp_dir().join(format!("netloom-client-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let handler: Handler = Arc::new(move |request| match request {
            Request::Events => Response {
                reply: Reply::ok(serde_json::json!({"experiment": "lab"})),
                stream: Some(Box::new(EventLines::new(run.subscribe()))),
            },
            Request::LinkState { .. } => Reply::error("experiment lab has no node \"r9\"").into(),
            _ => Reply::ok(serde_json::json!({"not": "an answer"})).into(),
        });
        let server = Server::start(&dir.join("control.sock"), handler).unwrap();
        (server, dir)
    }

    #[test]
    fn a_subscription_through_the_socket_gets_the_events_and_ends_after_the_stop() {
        let run = Arc::new(Events::default());
        run.publish(started());
        let (mut server, dir) = serve("events", run.clone());
        let client = Client::new(dir.join("control.sock"));
        let subscription = client.subscribe().unwrap();
        let wait = std::time::Duration::from_secs(5);
        assert_eq!(subscription.events().recv_timeout(wait).unwrap(), started());
        run.publish(stopped());
        assert_eq!(subscription.events().recv_timeout(wait).unwrap(), stopped());
        // The stream ended after the stop, and with it the reading thread: no silence.
        assert_eq!(
            subscription.events().recv_timeout(wait),
            Err(RecvTimeoutError::Disconnected)
        );
        server.stop();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refusals_and_wrong_answers_are_typed_errors_naming_the_socket() {
        let (mut server, dir) = serve("errors", Arc::new(Events::default()));
        let path = dir.join("control.sock");
        let client = Client::new(path.clone());
        match client.link_state("r9", "r1", false) {
            Err(RunError::Call {
                path: p,
                source: CallError::Refused(why),
            }) => assert_eq!(
                (p, why.as_str()),
                (path.clone(), "experiment lab has no node \"r9\"")
            ),
            other => panic!("{other:?}"),
        }
        let wrong = client.stats().unwrap_err();
        assert!(matches!(wrong, RunError::Reply(_)), "{wrong:?}");
        assert!(
            wrong.to_string().starts_with("the experiment's reply: "),
            "{wrong}"
        );
        server.stop();
        let gone = client.info().unwrap_err().to_string();
        assert!(gone.starts_with(&format!("{}: ", path.display())), "{gone}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
