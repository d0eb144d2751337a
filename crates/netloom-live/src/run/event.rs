//! What happens in a run, as it happens, for whoever subscribes: start and stop, link changes
//! and the routes recomputed after them, accuracy alarms, a worker's failure. Each subscriber has a bounded queue: one that does not
//! keep up loses its own events, counted, and never slows the run.

use crate::message::LinkChange;
use crate::run::server::{Next, Stream};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Events a subscriber's queue holds before it loses new ones.
pub const QUEUE: usize = 4096;

/// Something that happened in a run. On the wire (`netloom events`, docs/control.md) each is
/// one JSON object with its `type` and `at_ns`, the instant in ns since the run started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Event {
    /// Every host is up and every worker runs.
    Started {
        /// When, ns since the run started.
        at_ns: u64,
        /// The experiment.
        experiment: String,
        /// How many hosts.
        hosts: usize,
        /// How many workers.
        workers: usize,
    },
    /// A link's parameters were set, or it was taken down or brought up.
    LinkChanged(LinkChange),
    /// A link went down or came up and every worker recomputed its routes around it.
    RoutesRecomputed {
        /// When the new routes hold, ns since the run started (the link change's instant).
        at_ns: u64,
        /// The link whose state changed, "a-b".
        link: String,
        /// Whether it is up now.
        up: bool,
    },
    /// In the last interval, more packets were late than the thresholds allow, or some were
    /// lost outside the model: the run is becoming inaccurate.
    AccuracyAlarm {
        /// When the interval ended, ns since the run started.
        at_ns: u64,
        /// The interval's number: the second of the run's clock at which it ended (`at_ns`
        /// rounded), the same on every machine of a run over several, whose alarms for one
        /// interval come as one event each.
        #[serde(default)]
        interval: u64,
        /// The interval's length, ns.
        interval_ns: u64,
        /// Packets released in the interval ...
        released: u64,
        /// ... of which late.
        late: u64,
        /// Hand-offs between workers that arrived late in the interval.
        late_handoffs: u64,
        /// Packets lost outside the model in the interval.
        physical_drops: u64,
        /// The machine whose part raised it, in a run over several (`run --cluster`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        machine: Option<String>,
    },
    /// A worker stopped with an error; the others stop too.
    WorkerFailed {
        /// When its failure was seen, ns since the run started.
        at_ns: u64,
        /// Which worker.
        worker: usize,
        /// What went wrong.
        error: String,
    },
    /// The run stopped.
    Stopped {
        /// When the workers stopped, ns since the run started.
        at_ns: u64,
        /// Why: `signal`, `duration`, `request`, `worker failed` or `dropped`.
        reason: String,
    },
}

/// The subscribers of one run, and its `Started` event, which every subscriber gets first (the
/// run starts before anyone can subscribe to it).
#[derive(Debug, Default)]
pub(crate) struct Events {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Each subscriber's queue and its count of lost events.
    subscribers: Vec<(SyncSender<Event>, Arc<AtomicU64>)>,
    /// The run's `Started` event, once published.
    started: Option<Event>,
    /// Whether the run's last event (`finish`) was published: nothing comes after it.
    finished: bool,
}

impl Events {
    /// A new subscriber: it sees the run's `Started` event, then every event from now on.
    pub fn subscribe(&self) -> Subscription {
        State::subscribe(&mut self.lock())
    }

    /// Whether anyone still subscribes: a subscriber gone is known at the next `publish`.
    pub(crate) fn watched(&self) -> bool {
        !self.lock().subscribers.is_empty()
    }

    /// A new subscriber while the run lasts (as `subscribe`); `None` once its last event was
    /// published, when a subscriber would wait for events that never come. One lock for the
    /// look and the subscription, so a `finish` is either refused here or seen.
    pub(crate) fn subscribe_live(&self) -> Option<Subscription> {
        let mut state = self.lock();
        (!state.finished).then(|| State::subscribe(&mut state))
    }

    /// Publishes the run's last event (`Stopped`): `subscribe_live` refuses from now on.
    pub(crate) fn finish(&self, event: Event) {
        let mut state = self.lock();
        state.finished = true;
        state.publish(event);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .expect("no publisher panics holding the lock")
    }

    /// Gives `event` to every subscriber that has room; one that is gone is forgotten.
    pub fn publish(&self, event: Event) {
        self.lock().publish(event);
    }
}

impl State {
    fn subscribe(&mut self) -> Subscription {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let lost = Arc::new(AtomicU64::new(0));
        if let Some(started) = &self.started {
            tx.try_send(started.clone())
                .expect("an empty queue has room");
        }
        self.subscribers.push((tx, lost.clone()));
        Subscription { rx, lost }
    }

    fn publish(&mut self, event: Event) {
        if matches!(event, Event::Started { .. }) {
            self.started = Some(event.clone());
        }
        self.subscribers
            .retain(|(tx, lost)| match tx.try_send(event.clone()) {
                Ok(()) => true,
                Err(TrySendError::Full(_)) => {
                    lost.fetch_add(1, Ordering::Relaxed);
                    true
                }
                Err(TrySendError::Disconnected(_)) => false,
            });
    }
}

/// A subscription written to a control-socket client as JSON lines (the `events` request); it
/// ends after the `stopped` event, or when the run is gone.
pub(crate) struct EventLines {
    subscription: Subscription,
    ended: bool,
}

impl EventLines {
    pub fn new(subscription: Subscription) -> EventLines {
        EventLines {
            subscription,
            ended: false,
        }
    }
}

impl Stream for EventLines {
    fn next(&mut self, wait: Duration) -> Next {
        if self.ended {
            return Next::End;
        }
        match self.subscription.rx.recv_timeout(wait) {
            Ok(event) => {
                self.ended = matches!(event, Event::Stopped { .. });
                let mut line = serde_json::to_vec(&event).expect("events serialize");
                line.push(b'\n');
                Next::Bytes(line)
            }
            Err(RecvTimeoutError::Timeout) => Next::Idle,
            Err(RecvTimeoutError::Disconnected) => Next::End,
        }
    }
}

/// One subscriber's events, in order.
#[derive(Debug)]
pub struct Subscription {
    rx: Receiver<Event>,
    lost: Arc<AtomicU64>,
}

impl Subscription {
    /// The events as they come; ends when the run is gone.
    pub fn events(&self) -> &Receiver<Event> {
        &self.rx
    }

    /// Events this subscriber lost because its queue was full.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stopped(reason: &str) -> Event {
        Event::Stopped {
            at_ns: 7,
            reason: reason.into(),
        }
    }

    #[test]
    fn every_subscriber_sees_every_event_and_a_slow_one_loses_only_its_own() {
        let events = Events::default();
        let fast = events.subscribe();
        let slow = events.subscribe();
        for k in 0..QUEUE + 3 {
            events.publish(stopped(&k.to_string()));
            assert_eq!(fast.events().try_recv().unwrap(), stopped(&k.to_string()));
        }
        assert_eq!((fast.lost(), slow.lost()), (0, 3));
        assert_eq!(slow.events().try_recv().unwrap(), stopped("0"));
        drop(slow);
        events.publish(stopped("last"));
        assert_eq!(
            events.state.lock().unwrap().subscribers.len(),
            1,
            "a gone one is forgotten"
        );
    }

    #[test]
    fn event_lines_end_after_the_stop() {
        let events = Events::default();
        let mut lines = EventLines::new(events.subscribe());
        assert!(matches!(lines.next(Duration::ZERO), Next::Idle));
        events.publish(stopped("request"));
        events.publish(stopped("never seen"));
        match lines.next(Duration::ZERO) {
            Next::Bytes(line) => assert_eq!(
                line,
                b"{\"type\":\"stopped\",\"at_ns\":7,\"reason\":\"request\"}\n"
            ),
            _ => panic!("the stop, as a line"),
        }
        assert!(matches!(lines.next(Duration::ZERO), Next::End));
    }

    #[test]
    fn a_late_subscriber_still_sees_the_start_first() {
        let events = Events::default();
        let started = Event::Started {
            at_ns: 0,
            experiment: "lab".into(),
            hosts: 2,
            workers: 1,
        };
        events.publish(started.clone());
        events.publish(stopped("before"));
        let late = events.subscribe();
        events.publish(stopped("after"));
        let got: Vec<Event> = late.events().try_iter().collect();
        assert_eq!(got, [started, stopped("after")]);
    }

    #[test]
    fn once_the_run_finished_a_live_subscription_is_refused_and_earlier_ones_see_the_end() {
        let events = Events::default();
        let early = events.subscribe_live().expect("the run lasts");
        events.finish(stopped("signal"));
        assert!(events.subscribe_live().is_none(), "it would wait for ever");
        assert_eq!(early.events().try_recv().unwrap(), stopped("signal"));
    }

    #[test]
    fn events_are_json_lines_with_their_type_and_instant() {
        let json = serde_json::to_string(&stopped("signal")).unwrap();
        assert_eq!(json, r#"{"type":"stopped","at_ns":7,"reason":"signal"}"#);
        let change = Event::LinkChanged(LinkChange {
            link: "r1-r2".into(),
            direction: crate::Direction::Both,
            set: serde_json::Map::new(),
            up: Some(false),
            at_ns: 5,
        });
        let json = serde_json::to_string(&change).unwrap();
        assert_eq!(
            json,
            r#"{"type":"link-changed","link":"r1-r2","direction":"both","up":false,"at_ns":5}"#
        );
    }
}
