//! Every machine's figures added up into the run's one report (`Merged`): snapshots, TUN-queue
//! drops, and the hand-offs sent, received, lost and refused between each pair of machines.

use super::channel::Figures;
use crate::message::Snapshot;
use crate::moved::RepartitionReport;
use crate::run::report::{LostHandoffs, Report, RunInfo};

/// Every machine's figures, added up as they come, by machine in worker order.
#[derive(Default)]
pub(super) struct Merged {
    snapshot: Option<Snapshot>,
    /// Per host.
    tun_queue_drops: Vec<u64>,
    /// Per machine (the receiver), per worker (the sender).
    lost_handoffs: Vec<Vec<u64>>,
    /// Datagrams sent, per machine (the sender), per worker (the receiver).
    sent_handoffs: Vec<Vec<u64>>,
    /// Datagrams received so far as the figures said, per machine (the receiver), per worker
    /// (the sender).
    arrived_handoffs: Vec<Vec<u64>>,
    /// Datagrams received once every machine stopped, per machine (the receiver), per worker
    /// (the sender): with `sent_handoffs`, those lost after the last one to arrive count too.
    received_handoffs: Vec<Option<Vec<u64>>>,
    /// Datagrams refused, per machine.
    refused_handoffs: Vec<crate::run::report::RefusedHandoffs>,
}

impl Merged {
    /// Adds the figures of worker `k`'s machine.
    pub(super) fn add(&mut self, k: usize, figures: Figures) {
        if self.tun_queue_drops.len() < figures.tun_queue_drops.len() {
            self.tun_queue_drops
                .resize(figures.tun_queue_drops.len(), 0);
        }
        for (d, more) in self
            .tun_queue_drops
            .iter_mut()
            .zip(&figures.tun_queue_drops)
        {
            *d += more;
        }
        if self.lost_handoffs.len() <= k {
            self.lost_handoffs.resize(k + 1, Vec::new());
            self.sent_handoffs.resize(k + 1, Vec::new());
            self.arrived_handoffs.resize(k + 1, Vec::new());
            self.refused_handoffs.resize(k + 1, Default::default());
        }
        self.refused_handoffs[k] = figures.refused_handoffs;
        self.lost_handoffs[k] = figures.lost_handoffs;
        self.sent_handoffs[k] = figures.sent_handoffs;
        self.arrived_handoffs[k] = figures.received_handoffs;
        match &mut self.snapshot {
            Some(all) => all.merge(figures.snapshot),
            None => self.snapshot = Some(figures.snapshot),
        }
    }

    /// Adds the datagrams machine `k` received by the end.
    pub(super) fn add_received(&mut self, k: usize, received: Vec<u64>) {
        if self.received_handoffs.len() <= k {
            self.received_handoffs.resize(k + 1, None);
        }
        self.received_handoffs[k] = Some(received);
    }

    /// Asks the `stopped` machines what they received (`count`) until each has every hand-off
    /// datagram the others sent it, pausing with `wait` in between, which says `false` once
    /// it is too late: what has not arrived by then is lost.
    pub(super) fn await_arrivals(
        &mut self,
        stopped: &[usize],
        mut count: impl FnMut(usize) -> Option<Vec<u64>>,
        mut wait: impl FnMut() -> bool,
    ) {
        let mut waiting = stopped.to_vec();
        loop {
            waiting.retain(|&to| {
                if let Some(received) = count(to) {
                    self.add_received(to, received);
                }
                stopped
                    .iter()
                    .any(|&from| from != to && self.lost(from, to) > 0)
            });
            if waiting.is_empty() || !wait() {
                return;
            }
        }
    }

    /// Hand-off datagrams from worker `from` to worker `to` lost on their way: sent less
    /// received once both machines said, else the gaps in what arrived so far. A machine that
    /// never gave its figures (it died) has an empty row of sent counts, which says nothing: not
    /// that it sent none.
    pub(super) fn lost(&self, from: usize, to: usize) -> u64 {
        let said_sent = self.sent_handoffs.get(from).is_some_and(|s| s.len() > to);
        match (said_sent, self.received_handoffs.get(to)) {
            (true, Some(Some(received))) => cell(&self.sent_handoffs, from, to)
                .saturating_sub(received.get(from).copied().unwrap_or(0)),
            _ => cell(&self.lost_handoffs, to, from),
        }
    }

    /// While the run lasts (the machines not yet counted at the stop): hand-off datagrams from
    /// worker `from` to worker `to` neither arrived nor found lost so far, on their way or
    /// lost after the last one to arrive (which the stop tells apart). Machines answer one
    /// after another, so what was sent is counted at another moment than what arrived: a
    /// figure, not an exact count.
    pub(super) fn in_flight(&self, from: usize, to: usize) -> Option<u64> {
        let counted = matches!(self.received_handoffs.get(to), Some(Some(_)));
        (!counted).then(|| {
            let seen = cell(&self.arrived_handoffs, to, from) + cell(&self.lost_handoffs, to, from);
            cell(&self.sent_handoffs, from, to).saturating_sub(seen)
        })
    }

    /// The run's report, with the hand-offs lost between every two of its machines; `None`
    /// when no machine answered.
    pub(super) fn report(
        mut self,
        info: &RunInfo,
        repartition: Option<RepartitionReport>,
        names: &[&str],
    ) -> Option<Report> {
        let snapshot = self.snapshot.take()?;
        let mut report = Report::new(info, snapshot, &self.tun_queue_drops);
        report.repartition = repartition;
        for (from, &from_name) in names.iter().enumerate() {
            for (to, &to_name) in names.iter().enumerate().filter(|&(k, _)| k != from) {
                report.lost_handoffs.push(LostHandoffs {
                    from: from_name.to_string(),
                    to: to_name.to_string(),
                    lost: self.lost(from, to),
                    in_flight: self.in_flight(from, to),
                });
            }
        }
        let lost = report.lost_handoffs.iter().map(|l| l.lost).sum();
        report.accuracy.add_lost_handoffs(lost);
        for refused in &self.refused_handoffs {
            report.refused_handoffs.add(refused);
        }
        Some(report)
    }
}

/// `table[k][of]`, 0 where it says nothing.
pub(super) fn cell(table: &[Vec<u64>], k: usize, of: usize) -> u64 {
    table.get(k).and_then(|t| t.get(of)).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_for_hand_offs_on_their_way_ends_once_all_arrived_or_when_too_late() {
        // Worker 0 sent machine 1 ten datagrams, worker 1 sent machine 0 four.
        let sent = || Merged {
            sent_handoffs: vec![vec![0, 10], vec![4, 0]],
            lost_handoffs: vec![vec![0, 0], vec![0, 0]],
            ..Merged::default()
        };
        // Machine 1 has 8, then all 10, at its second count: two rounds of counts, one pause.
        let mut merged = sent();
        let (mut asked, mut waits) = (vec![0, 0], 0);
        let machine_1_has = [8, 10];
        merged.await_arrivals(
            &[0, 1],
            |k| {
                asked[k] += 1;
                Some(match k {
                    0 => vec![0, 4],
                    _ => vec![machine_1_has[asked[1] - 1], 0],
                })
            },
            || {
                waits += 1;
                true
            },
        );
        assert_eq!((asked, waits), (vec![1, 2], 1), "machine 0 had all at once");
        assert_eq!((merged.lost(0, 1), merged.lost(1, 0)), (0, 0));
        // Two never arrive: asked until the wait says it is too late, then lost.
        let mut merged = sent();
        let mut waits = 0;
        merged.await_arrivals(
            &[0, 1],
            |k| Some(if k == 0 { vec![0, 4] } else { vec![8, 0] }),
            || {
                waits += 1;
                waits < 5
            },
        );
        assert_eq!((waits, merged.lost(0, 1)), (5, 2));
    }

    #[test]
    fn hand_offs_lost_are_sent_less_received_once_counted_else_the_gaps() {
        let mut merged = Merged {
            // Machine 1 saw a gap of 2 in what worker 0 sent it; worker 0 sent it 10.
            lost_handoffs: vec![vec![0, 0], vec![2, 0]],
            sent_handoffs: vec![vec![0, 10], vec![4, 0]],
            ..Merged::default()
        };
        assert_eq!(merged.lost(0, 1), 2, "while the run lasts: the gaps");
        // Machine 1 said it had 5 from worker 0 so far: 3 of the 10 neither arrived nor lost.
        merged.arrived_handoffs = vec![vec![0, 4], vec![5, 0]];
        assert_eq!(
            (merged.in_flight(0, 1), merged.in_flight(1, 0)),
            (Some(3), Some(0))
        );
        // At the end machine 1 received 7 of the 10: 3 lost, one after the last arrival.
        merged.add_received(0, vec![0, 4]);
        merged.add_received(1, vec![7, 0]);
        assert_eq!(merged.lost(0, 1), 3);
        assert_eq!(merged.lost(1, 0), 0);
        assert_eq!(
            merged.in_flight(0, 1),
            None,
            "at the end, none is on its way"
        );
        // Machine 0 died before giving its figures: what machine 1 found missing still counts.
        // (`add` leaves its rows empty.)
        let mut merged = Merged {
            lost_handoffs: vec![vec![], vec![2, 0]],
            sent_handoffs: vec![vec![], vec![4, 0]],
            ..Merged::default()
        };
        merged.add_received(1, vec![7, 0]);
        assert_eq!(
            merged.lost(0, 1),
            2,
            "the gaps, not sent (unknown) less received"
        );
    }
}
