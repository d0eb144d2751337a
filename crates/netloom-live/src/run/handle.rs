//! What a running experiment's clients share of it (`Handle`, over `Shared`): its description,
//! its figures, link changes, events and captures as typed calls (`RunView`), and each
//! control-socket request answered; not its threads, which the `Experiment` owns and stops.

use crate::clock::{Clock, SystemClock};
use crate::error::LiveError;
use crate::message::{Direction, LinkChange, Request};
use crate::moved::RepartitionReport;
use crate::run::control::{ControlError, Controller, ANSWER_TIMEOUT};
use crate::run::event::{Event, EventLines, Events, Subscription};
use crate::run::protocol::Reply;
use crate::run::repartition;
use crate::run::report::{CaptureReport, Report, RunInfo};
use crate::run::server::Response;
use crate::run::{RunError, RunView};
use crate::tap::{CaptureStats, When};
use crate::tun_drops::TunDrops;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, Weak};

/// What the experiment's handle and its control socket's threads share.
pub(crate) struct Shared {
    pub(crate) info: RunInfo,
    pub(crate) controller: Controller<SystemClock>,
    pub(crate) events: Events,
    pub(crate) stop_requested: AtomicBool,
    /// Rung when a client asks to stop, so `wait` need not poll for it.
    pub(crate) bell: Mutex<Sender<()>>,
    /// What the hosts' TUN queues dropped, which no worker sees.
    pub(crate) tun_drops: TunDrops,
    /// The captures started, each with what it captures; those whose tap and stream are both
    /// gone are left out of reports.
    pub(crate) captures: Mutex<Vec<(String, Weak<CaptureStats>)>>,
    /// How many workers run.
    pub(crate) workers: usize,
    /// With `--repartition`: what it did so far.
    pub(crate) repartition: Option<Arc<Mutex<RepartitionReport>>>,
    /// The run's instant zero on the wall clock, ns since 1970: captures date packets with it,
    /// so that tools show dates, and all captures of a run agree to the nanosecond.
    pub(crate) epoch_ns: u64,
}

impl Shared {
    /// What repartitioning did so far, if the run repartitions.
    pub(crate) fn repartition_report(&self) -> Option<RepartitionReport> {
        self.repartition
            .as_ref()
            .map(|r| repartition::lock(r).clone())
    }

    pub(crate) fn stats(&self) -> Result<Report, LiveError> {
        let snapshot = self.controller.snapshot().wait(ANSWER_TIMEOUT)?;
        let mut report = Report::new(&self.info, snapshot, &self.tun_drops.per_host()?);
        report.repartition = self.repartition_report();
        let mut captures = self
            .captures
            .lock()
            .expect("no capture panics holding the lock");
        captures.retain(|(_, stats)| stats.strong_count() > 0);
        report.captures = captures
            .iter()
            .filter_map(|(target, stats)| {
                let stats = stats.upgrade()?;
                Some(CaptureReport {
                    target: target.clone(),
                    captured: stats.captured.load(Ordering::Relaxed),
                    dropped: stats.dropped.load(Ordering::Relaxed),
                })
            })
            .collect();
        Ok(report)
    }

    /// Starts a capture (`Request::Capture`): its reply names the interfaces, its stream is
    /// the pcapng file.
    pub(crate) fn capture(
        &self,
        a: &str,
        b: Option<&str>,
        direction: Direction,
        when: When,
        snaplen: u32,
    ) -> Result<Response, LiveError> {
        if self.workers > 1 {
            return Err(LiveError::Capture(format!(
                "capture needs a run of one worker; this one has {}",
                self.workers
            )));
        }
        if snaplen == 0 {
            return Err(LiveError::Capture(
                "snaplen 0 keeps nothing; give at least 1 byte".into(),
            ));
        }
        let pipes =
            crate::run::control::capture_pipes(self.controller.topology(), a, b, direction)?;
        if pipes.is_empty() {
            return Err(LiveError::Capture(format!("node {a} has no links")));
        }
        let names: Vec<String> = pipes.iter().map(|(_, i)| i.name.clone()).collect();
        let (tap, stream) = crate::run::capture::capture(pipes, when, snaplen, self.epoch_ns);
        let target = match b {
            Some(b) => format!("{a} {b} ({})", direction.name()),
            None => a.to_string(),
        };
        self.captures
            .lock()
            .expect("no capture panics holding the lock")
            .push((target, Arc::downgrade(&stream.stats())));
        self.controller.capture(tap).wait(ANSWER_TIMEOUT)?;
        Ok(Response {
            reply: Reply::ok(serde_json::json!({
                "experiment": self.info.experiment,
                "interfaces": names,
                "when": when,
                "snaplen": snaplen,
            })),
            stream: Some(Box::new(stream)),
        })
    }

    pub(crate) fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, LiveError> {
        let change = self
            .controller
            .link_set(a, b, direction, set)?
            .wait(ANSWER_TIMEOUT)?;
        self.events.publish(Event::LinkChanged(change.clone()));
        Ok(change)
    }

    pub(crate) fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, LiveError> {
        let change = self.controller.link_state(a, b, up)?.wait(ANSWER_TIMEOUT)?;
        self.events.publish(Event::LinkChanged(change.clone()));
        // Every worker applied the change, and with it recomputed its routes.
        self.events.publish(Event::RoutesRecomputed {
            at_ns: change.at_ns,
            link: change.link.clone(),
            up,
        });
        Ok(change)
    }

    /// The run's events from now on; refused once it stopped (`RunView::subscribe`).
    pub(crate) fn subscribe(&self) -> Result<Subscription, LiveError> {
        self.events
            .subscribe_live()
            .ok_or(LiveError::Control(ControlError::Stopped))
    }

    /// Nanoseconds since the run started, for events.
    pub(crate) fn now_ns(&self) -> u64 {
        self.controller.clock().now().as_nanos()
    }

    /// Serves one request of the control protocol.
    pub(crate) fn handle(&self, request: Request) -> Response {
        let body = match request {
            Request::Info => Ok(to_value(&self.info)),
            Request::Stats => self.stats().map(|r| to_value(&r)),
            Request::LinkSet {
                a,
                b,
                direction,
                set,
            } => self.link_set(&a, &b, direction, &set).map(|c| to_value(&c)),
            Request::LinkState { a, b, up } => self.link_state(&a, &b, up).map(|c| to_value(&c)),
            Request::Stop => {
                self.stop_requested.store(true, Ordering::SeqCst);
                let _ = self.bell.lock().expect("no ringer panics").send(());
                Ok(serde_json::json!({ "stopping": self.info.experiment }))
            }
            Request::Capture {
                a,
                b,
                direction,
                when,
                snaplen,
            } => {
                return match self.capture(&a, b.as_deref(), direction, when, snaplen) {
                    Ok(response) => response,
                    Err(e) => Reply::error(e.to_string()).into(),
                }
            }
            Request::Events => {
                return Response {
                    reply: Reply::ok(serde_json::json!({ "experiment": self.info.experiment })),
                    stream: Some(Box::new(EventLines::new(self.events.subscribe()))),
                }
            }
        };
        match body {
            Ok(body) => Reply::ok(body).into(),
            Err(e) => Reply::error(e.to_string()).into(),
        }
    }
}

pub(crate) fn to_value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("reports serialize")
}

/// What other threads of the caller hold of a running experiment (`Experiment::handle`): its
/// description, its figures, link changes and events; it cannot stop the run. A `RunView`.
#[derive(Clone)]
pub struct Handle(pub(crate) Arc<Shared>);

impl Handle {
    /// As `Experiment::info`.
    pub fn info(&self) -> &RunInfo {
        &self.0.info
    }

    /// As `Experiment::stats`.
    pub fn stats(&self) -> Result<Report, LiveError> {
        self.0.stats()
    }

    /// As `Experiment::link_set`.
    pub fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, LiveError> {
        self.0.link_set(a, b, direction, set)
    }

    /// As `Experiment::link_state`.
    pub fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, LiveError> {
        self.0.link_state(a, b, up)
    }

    /// As `Experiment::subscribe`; refused once the run stopped.
    pub fn subscribe(&self) -> Result<Subscription, LiveError> {
        self.0.subscribe()
    }
}

impl RunView for Handle {
    fn info(&self) -> Result<RunInfo, RunError> {
        Ok(self.0.info.clone())
    }

    fn stats(&self) -> Result<Report, RunError> {
        Ok(self.0.stats()?)
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        Ok(self.0.link_set(a, b, direction, set)?)
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        Ok(self.0.link_state(a, b, up)?)
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        Ok(self.0.subscribe()?)
    }
}
