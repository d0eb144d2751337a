//! The analytic capacity model of ModelNet §5.1: an edge packet costs l·c_h for its hops plus
//! c_e for entering the emulation and for each of its x cross-core transitions, so n balanced
//! cores emulate n / (l·c_h + c_e·(1 + x)) edge packets per second.

use crate::evaluation::Evaluation;
use serde::Serialize;

/// The CPU costs the model is parameterized with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityModel {
    /// CPU time to emulate one hop, c_h (the paper's cores: 0.5 µs).
    pub hop_cost_s: f64,
    /// CPU time for a packet to enter or cross to a core, c_e (the paper's cores: 8 µs).
    pub entry_cost_s: f64,
}

impl Default for CapacityModel {
    fn default() -> Self {
        CapacityModel {
            hop_cost_s: 0.5e-6,
            entry_cost_s: 8e-6,
        }
    }
}

/// The model's prediction for one partition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capacity {
    /// The number of cores n of the partition.
    pub cores: u32,
    /// Expected path length l: pipe traversals per edge packet.
    pub path_length: f64,
    /// Expected cross-core transitions per edge packet, x.
    pub crossings: f64,
    /// The partition's efficiency E under the weights; x = 1/E − 1.
    pub efficiency: f64,
    /// Edge packets per second if the load were balanced (the paper's formula).
    pub balanced_pps: f64,
    /// Edge packets per second before the busiest core saturates.
    pub busiest_core_pps: f64,
}

impl CapacityModel {
    /// Predicts the capacity of a partition from its evaluation; `None` if nothing enters.
    pub fn predict(&self, eval: &Evaluation) -> Option<Capacity> {
        let entered: f64 = eval.cores.iter().map(|c| c.edge_packets).sum();
        let efficiency = eval.efficiency?;
        let hops: f64 = eval.cores.iter().map(|c| c.hops).sum();
        let path_length = hops / entered;
        let crossings = 1.0 / efficiency - 1.0;
        let n = eval.cores.len() as f64;
        let per_packet = path_length * self.hop_cost_s + self.entry_cost_s * (1.0 + crossings);
        // Each core's CPU time per edge packet of the whole emulation.
        let busiest = eval
            .cores
            .iter()
            .map(|c| (c.hops * self.hop_cost_s + c.packets * self.entry_cost_s) / entered)
            .fold(0.0, f64::max);
        Some(Capacity {
            cores: eval.cores.len() as u32,
            path_length,
            crossings,
            efficiency,
            balanced_pps: n / per_packet,
            busiest_core_pps: 1.0 / busiest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::CoreLoad;

    fn eval(cores: u32, efficiency: f64, path_length: f64) -> Evaluation {
        let core = CoreLoad {
            hops: path_length / cores as f64,
            edge_packets: 1.0 / cores as f64,
            packets: 1.0 / efficiency / cores as f64,
            ..CoreLoad::default()
        };
        Evaluation {
            cores: vec![core; cores as usize],
            cut: 1.0 / efficiency - 1.0,
            total_flow: path_length - 1.0,
            efficiency: Some(efficiency),
            imbalance: 1.0,
        }
    }

    #[test]
    fn reproduces_figure_4() {
        // The paper's numbers: path length 10, c_h = 0.5 µs, c_e = 8 µs.
        let m = CapacityModel::default();
        let one = m.predict(&eval(1, 1.0, 10.0)).unwrap();
        assert!((one.balanced_pps - 76_923.0).abs() < 1.0, "{one:?}"); // "75K PPS"
                                                                       // Worst case x = l − 1 (E = 10%): 4 cores are slower than one.
        let worst = m.predict(&eval(4, 0.1, 10.0)).unwrap();
        assert!(worst.balanced_pps < one.balanced_pps);
        assert!((worst.crossings - 9.0).abs() < 1e-9);
        // Matching one core takes E ≈ 37% on 2 cores and ≈ 16% on 4 (8/21 and 8/47 exactly).
        let two = m.predict(&eval(2, 8.0 / 21.0, 10.0)).unwrap();
        let four = m.predict(&eval(4, 8.0 / 47.0, 10.0)).unwrap();
        assert!((two.balanced_pps - one.balanced_pps).abs() < 1e-6);
        assert!((four.balanced_pps - one.balanced_pps).abs() < 1e-6);
        assert!((four.busiest_core_pps - four.balanced_pps).abs() < 1e-6);
    }
}
