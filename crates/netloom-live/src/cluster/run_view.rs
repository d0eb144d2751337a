//! The run over several machines as its clients see it (`crate::run`): `ClusterRun` is a `Run`,
//! as the one-machine `Experiment` is, and its view a `RunView`; its warnings, machines' clocks
//! and drift are what it reports through the trait. The coordinator's work is `coordinator`'s.

use super::clocks::MachineClock;
use super::coordinator::{ClusterRun, Shared};
use crate::error::LiveError;
use crate::message::{Direction, LinkChange, Request};
use crate::run::control::ControlError;
use crate::run::ending::Ending;
use crate::run::event::Subscription;
use crate::run::report::{Report, RunInfo};
use crate::run::{Run, RunError, RunView, SharedView};
use serde_json::{Map, Value};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What other threads hold of a run over several machines (`Run::view`): the coordinator's
/// answers, as its control socket gives them.
struct View(Arc<Shared>);

impl RunView for View {
    fn info(&self) -> Result<RunInfo, RunError> {
        Ok(self.0.info.clone())
    }

    fn stats(&self) -> Result<Report, RunError> {
        self.0
            .stats()
            .map_err(|e| LiveError::Machine(e.to_string()).into())
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        self.0.typed_change(&Request::LinkSet {
            a: a.into(),
            b: b.into(),
            direction,
            set: set.clone(),
        })
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        self.0.typed_change(&Request::LinkState {
            a: a.into(),
            b: b.into(),
            up,
        })
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        self.0
            .events
            .subscribe_live()
            .ok_or(LiveError::Control(ControlError::Stopped).into())
    }
}

impl RunView for ClusterRun {
    fn info(&self) -> Result<RunInfo, RunError> {
        View(self.shared.clone()).info()
    }

    fn stats(&self) -> Result<Report, RunError> {
        View(self.shared.clone()).stats()
    }

    fn link_set(
        &self,
        a: &str,
        b: &str,
        direction: Direction,
        set: &Map<String, Value>,
    ) -> Result<LinkChange, RunError> {
        View(self.shared.clone()).link_set(a, b, direction, set)
    }

    fn link_state(&self, a: &str, b: &str, up: bool) -> Result<LinkChange, RunError> {
        View(self.shared.clone()).link_state(a, b, up)
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        View(self.shared.clone()).subscribe()
    }
}

/// The cluster's extras (its warnings, the machines' clocks and their drift) are what it
/// reports through `Run`, so the CLI drives it as any other run.
impl Run for ClusterRun {
    fn view(&self) -> SharedView {
        Arc::new(View(self.shared.clone()))
    }

    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    fn wait(&self, signal: &AtomicBool, deadline: Option<std::time::Instant>) -> Ending {
        ClusterRun::wait(self, signal, deadline)
    }

    fn clocks(&self) -> Vec<MachineClock> {
        ClusterRun::clocks(self)
    }

    fn drift_warnings(&self) -> Vec<String> {
        ClusterRun::drift_warnings(self)
    }

    fn stop(self: Box<Self>, reason: &Ending) -> Result<Report, RunError> {
        Ok(ClusterRun::stop(*self, reason)?)
    }
}
