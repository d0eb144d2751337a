//! Where each host of a run over several machines is, for `netloom exec` and `shell` at the
//! coordinator: `<registry>/<run>.cluster.json` names each machine's launcher and experiment
//! and each host's machine, and a command for a host runs through its machine's launcher as
//! `netloom exec` there.

use super::file::Machine;
use crate::run::plan::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// One machine, as a command reaches it.
#[derive(Debug, Serialize, Deserialize)]
struct Reach {
    name: String,
    launcher: Vec<String>,
    netloom: String,
    /// Its part's experiment.
    experiment: String,
}

/// A host that no machine of the run has.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the run has no host {host:?}{hint}")]
pub struct UnknownHost {
    /// The name asked for.
    pub host: String,
    /// A suggestion, or nothing.
    pub hint: String,
}

/// The hosts of a run over several machines and how to reach each.
#[derive(Debug, Serialize, Deserialize)]
pub struct Forwarding {
    machines: Vec<Reach>,
    /// Each host's machine, by position in `machines`.
    hosts: BTreeMap<String, usize>,
}

fn path(run: &str) -> PathBuf {
    netloom_os::registry_dir().join(format!("{run}.cluster.json"))
}

impl Forwarding {
    /// The map of a run: machine k (with its experiment) runs worker k of `plan`.
    pub(crate) fn of(machines: &[(&Machine, &str)], plan: &Plan) -> Forwarding {
        let names = plan.hosts();
        let mut hosts = BTreeMap::new();
        for (k, owned) in plan.hosts.iter().enumerate() {
            for &h in owned {
                hosts.insert(names[h as usize].name.clone(), k);
            }
        }
        Forwarding {
            machines: machines
                .iter()
                .map(|(m, experiment)| Reach {
                    name: m.name.clone(),
                    launcher: m.launcher.clone(),
                    netloom: m.netloom.clone(),
                    experiment: experiment.to_string(),
                })
                .collect(),
            hosts,
        }
    }

    /// Writes the map of run `run` (the checked name of a registered experiment).
    pub(crate) fn write(&self, run: &str) -> std::io::Result<()> {
        let text = serde_json::to_string(self).map_err(std::io::Error::other)?;
        std::fs::write(path(run), text)
    }

    /// The map of run `run`, if it is a run over several machines.
    pub fn read(run: &str) -> Option<Forwarding> {
        netloom_os::check_experiment_name(run).ok()?;
        let text = std::fs::read_to_string(path(run)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Removes the map of run `run`; true if there was one.
    pub fn remove(run: &str) -> bool {
        netloom_os::check_experiment_name(run).is_ok() && std::fs::remove_file(path(run)).is_ok()
    }

    /// `argv` to run in `host`, on its machine: `netloom exec` there, through its launcher.
    pub fn command(&self, host: &str, argv: &[String]) -> Result<Command, UnknownHost> {
        let Some(&k) = self.hosts.get(host) else {
            let names: Vec<&str> = self.hosts.keys().map(String::as_str).collect();
            return Err(UnknownHost {
                host: host.to_string(),
                hint: netloom_topo::did_you_mean(host, &names),
            });
        };
        let m = &self.machines[k];
        let mut command = Command::new(&m.launcher[0]);
        command
            .args(&m.launcher[1..])
            .args([
                m.netloom.as_str(),
                "exec",
                "--name",
                &m.experiment,
                host,
                "--",
            ])
            .args(argv);
        Ok(command)
    }
}
