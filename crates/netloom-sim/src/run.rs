//! Running a plan (`SimPlan::run`): picks its runner (one engine, epochs on one engine, worker
//! threads, or worker processes through `threads`) and makes the report of what it ran, the
//! partition measured on the run's own counts included.

use crate::error::SimError;
use crate::plan::{Observer, SimPlan};
use crate::report::{Ran, SimReport};
use crate::{epochs, single, split, threads};

impl SimPlan {
    /// Runs the plan, calling `progress` about every `every` of wall time, and reports.
    pub fn run(
        self,
        progress: Option<Observer<'_>>,
        every: std::time::Duration,
    ) -> Result<SimReport, SimError> {
        let partitioned = self.workers > 1;
        let ran = match (&self.assignment, self.options.repartition) {
            (Some(a), Some(epoch)) if !partitioned => {
                epochs::run(&self, a, epoch).map(|(engine, report, rows)| Ran {
                    engine,
                    report,
                    workers: None,
                    assignment: Some(a.clone()),
                    repartition: Some(self.repartition_report(a.cores, epoch, rows)),
                })?
            }
            (Some(a), _) if partitioned => {
                threads::run(&self, a, self.engine_options(progress, every))?
            }
            _ => single::run(&self, progress, every)?,
        };
        self.report(ran)
    }

    /// The report of a finished run: the engine's, the partition measured on the run's
    /// counts, the workers' figures and the epochs'.
    fn report(&self, ran: Ran) -> Result<SimReport, SimError> {
        let observation = split::observation(&ran.engine);
        let partition = match (&ran.assignment, ran.engine.crossings()) {
            (Some(a), Some(crossings)) => Some(split::measure_crossings(a, crossings)),
            (Some(a), None) => Some(split::measure(ran.engine.topology(), &observation, a)?),
            (None, _) => None,
        };
        Ok(SimReport {
            report: ran.report,
            partition,
            workers: ran.workers,
            repartition: ran.repartition,
            observation,
        })
    }
}
