//! Links changing, by hand or by schedule, and the rerouting that follows; not forwarding packets.

use super::network::Network;
use super::{derive_seed, Engine, Event, SEED_PLANS};
use netloom_link::{Pipe, PipeConfig, Timeline};
use netloom_time::Instant;
use netloom_topo::{LinkId, PipeId};

impl Network {
    /// Puts each time-varying link in its plan's first state and schedules its first change.
    pub(super) fn start_plans(&mut self, seed: u64) {
        for (i, plan) in self.topo.plans.iter().enumerate() {
            let seed = derive_seed(seed, SEED_PLANS, i as u64);
            self.timelines.push(Timeline::new(plan.plan.clone(), seed));
        }
        for plan in 0..self.timelines.len() as u32 {
            self.enter_state(plan);
        }
    }

    /// A time-varying link's change is due now: moves its timeline on and applies the state.
    /// With `skip_to`, changes of a schedule due by then before its last one due are skipped
    /// (counted), and the last is scheduled in their place.
    pub(super) fn on_reconfigure(&mut self, plan: u32, skip_to: Option<Instant>) {
        let timeline = &mut self.timelines[plan as usize];
        let skipped = skip_to.map_or(0, |to| timeline.skip_to(to));
        if let (true, Some(at)) = (skipped > 0, timeline.poll_at()) {
            let link = &self.topo.links[self.topo.plans[plan as usize].link as usize];
            if self.owns_pipe(link.ab) {
                self.counters.changes_skipped += skipped;
            }
            self.sched.push(at, Event::Reconfigure { plan });
            return;
        }
        self.timelines[plan as usize].advance(self.now);
        self.enter_state(plan);
    }

    /// Applies the current state of `plan` to its link's pipes (without flushing them) and
    /// schedules the next change.
    fn enter_state(&mut self, plan: u32) {
        let timeline = &self.timelines[plan as usize];
        let (state, next) = (timeline.state(), timeline.poll_at());
        let p = &self.topo.plans[plan as usize];
        let (ab, ba) = p.states[state as usize];
        let l = &self.topo.links[p.link as usize];
        let changes = if l.ab == l.ba {
            vec![(l.ab, ab)]
        } else {
            vec![(l.ab, ab), (l.ba, ba)]
        };
        self.reconfigure(&changes);
        if let Some(at) = next {
            self.sched.push(at, Event::Reconfigure { plan });
        }
    }

    /// Applies `changes` at the engine's time. The pipes are the one owner of their state, up or
    /// down included; the routing tables are recomputed from it when it changes.
    pub(super) fn reconfigure(&mut self, changes: &[(PipeId, PipeConfig)]) {
        let mut reroute = false;
        for &(pipe, config) in changes {
            let link = &mut self.pipes[pipe as usize];
            reroute |= link.is_up() != config.up;
            link.set_config(self.now, config);
            // A deferred pipe going down has dropped what it held: report it.
            self.arm_dequeue(pipe);
        }
        if reroute {
            let up: Vec<bool> = self.pipes.iter().map(Pipe::is_up).collect();
            self.routes.recompute(&self.topo, &up);
            self.reroutes += 1;
        }
    }
}

impl Engine {
    /// Changes pipes' parameters at `now`, without flushing what they carry: everything due
    /// before `now` happens first (as `advance(now)`), packets already inside keep their exit
    /// times, and the next packet meets the new parameters. A pipe that goes down drops what it
    /// holds; routes are recomputed once if any pipe went down or came up.
    pub fn set_pipe_configs(&mut self, now: Instant, changes: &[(PipeId, PipeConfig)]) {
        self.advance(now);
        self.net.reconfigure(changes);
    }

    /// Takes a link down or brings it up at `now` (both directions; see `set_pipe_configs`).
    pub fn set_link_up(&mut self, now: Instant, link: LinkId, up: bool) {
        let l = &self.net.topo.links[link as usize];
        let pipes = if l.ab == l.ba {
            vec![l.ab]
        } else {
            vec![l.ab, l.ba]
        };
        let changes: Vec<_> = pipes
            .into_iter()
            .map(|p| {
                (
                    p,
                    PipeConfig {
                        up,
                        ..*self.net.pipes[p as usize].config()
                    },
                )
            })
            .collect();
        self.set_pipe_configs(now, &changes);
    }

    /// Whether both directions of `link` are up (a link taken down by `set_link_up`, or by a
    /// schedule, is down).
    pub fn link_is_up(&self, link: LinkId) -> bool {
        let l = &self.net.topo.links[link as usize];
        self.net.pipes[l.ab as usize].is_up() && self.net.pipes[l.ba as usize].is_up()
    }
}
