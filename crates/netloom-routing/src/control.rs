//! An experiment's routing daemons as netloom-live's `RouterControl`: checked before anything
//! starts, started once the kernel routers are up, stopped while they still exist.

use crate::{
    check_installation, check_user_config, frr_config, ospf_cost, Interface, Neighbour,
    RouterDaemons, RouterSpec, RoutingError,
};
use netloom_live::RouterControlError;
use netloom_os::{KernelRouterSpec, OutputDir};
use netloom_time::Duration;
use netloom_topo::{RoutingDaemon, RoutingProtocol, Topology};
use std::path::PathBuf;

/// How long daemons get to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The routing daemons of one experiment's kernel routers.
pub struct RoutingControl {
    /// The routers that run daemons, described for them.
    specs: Vec<RouterSpec>,
    /// `<experiment's registry directory>/routers`, one directory per router below.
    dir: PathBuf,
    /// Where each router's logs are copied when the daemons stop, if anywhere.
    keep_logs: Option<OutputDir>,
    running: Vec<RouterDaemons>,
}

/// The directory of router `router`'s daemons in running experiment `experiment`: its
/// configuration, sockets, pid files and logs (`/run/netloom/<experiment>/routers/<router>`).
pub fn router_dir(experiment: &str, router: &str) -> PathBuf {
    routers_dir(experiment).join(router)
}

/// `/run/netloom/<experiment>/routers`, removed with the experiment's registry entry.
fn routers_dir(experiment: &str) -> PathBuf {
    netloom_os::registry_dir().join(experiment).join("routers")
}

impl RoutingControl {
    /// The daemons of `routers` (the plan's kernel routers of `topology`) in `experiment`, or
    /// `None` when every one routes statically. Everything that can be wrong is found here,
    /// before anything starts: a suite that is not installed, a user's configuration its
    /// checker refuses, a link no configuration can be generated for (BGP inside an AS, a
    /// protocol facing an engine router or a static one).
    pub fn new(
        topology: &Topology,
        routers: &[KernelRouterSpec],
        experiment: &str,
    ) -> Result<Option<RoutingControl>, RoutingError> {
        let mut specs = Vec::new();
        for router in routers {
            let Some(spec) = describe(topology, router)? else {
                continue;
            };
            let daemon = spec.routing.daemon;
            check_installation(&spec.name, daemon)?;
            match &spec.routing.config {
                Some(path) => check_user_config(&spec.name, daemon, path)?,
                None if daemon == RoutingDaemon::Frr => drop(frr_config(&spec)?),
                None => drop(crate::bird_config(&spec, "")?),
            }
            specs.push(spec);
        }
        if specs.is_empty() {
            return Ok(None);
        }
        Ok(Some(RoutingControl {
            specs,
            dir: routers_dir(experiment),
            keep_logs: None,
            running: Vec::new(),
        }))
    }

    /// Copies each router's logs to `<dir>/<router>/` when the daemons stop (the run's own
    /// directory goes with the run). `dir` is held open and written below without following a
    /// symbolic link (`OutputDir`): netloom runs as root, and `dir` may be a user's.
    pub fn keep_logs(mut self, dir: OutputDir) -> RoutingControl {
        self.keep_logs = Some(dir);
        self
    }

    /// The routers that run daemons, as described to them.
    pub fn routers(&self) -> &[RouterSpec] {
        &self.specs
    }

    /// Copies `daemons`' logs and configurations to `<to>/<router>/`. A file planted there as a
    /// symbolic link is refused and the copy goes on with the others; the first error is
    /// returned.
    fn copy_logs(daemons: &RouterDaemons, to: &OutputDir) -> Result<(), String> {
        let router = daemons
            .dir()
            .file_name()
            .expect("a router's directory is named after it");
        let target = to.subdir(router).map_err(|e| e.to_string())?;
        let entries = std::fs::read_dir(daemons.dir())
            .map_err(|e| format!("{}: {e}", daemons.dir().display()))?;
        let mut first = None;
        for entry in entries.flatten() {
            let path = entry.path();
            let keep = path.extension().is_some_and(|e| e == "log" || e == "conf");
            if !keep {
                continue;
            }
            let copied = target
                .create(&entry.file_name())
                .map_err(|e| e.to_string())
                .and_then(|mut out| {
                    std::fs::File::open(&path)
                        .and_then(|mut from| std::io::copy(&mut from, &mut out))
                        .map_err(|e| format!("{}: {e}", path.display()))
                });
            if let Err(e) = copied {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl netloom_live::RouterControl for RoutingControl {
    /// A router whose daemons fill its table gets no static routes.
    fn prepare(&mut self, routers: &mut [KernelRouterSpec]) -> Result<(), RouterControlError> {
        for router in routers {
            if self.specs.iter().any(|s| s.name == router.name) {
                router.routes.clear();
            }
        }
        Ok(())
    }

    fn start(&mut self, _routers: &[KernelRouterSpec]) -> Result<(), RouterControlError> {
        for spec in &self.specs {
            let daemons = RouterDaemons::start(spec, &self.dir.join(&spec.name))?;
            self.running.push(daemons);
        }
        Ok(())
    }

    fn stop(&mut self) {
        for mut daemons in std::mem::take(&mut self.running) {
            daemons.stop(STOP_GRACE);
            if let Some(to) = &self.keep_logs {
                if let Err(e) = Self::copy_logs(&daemons, to) {
                    eprintln!(
                        "netloom: could not keep all of {}'s logs in {}: {e}",
                        daemons.dir().display(),
                        to.path().display()
                    );
                }
            }
        }
    }
}

/// Router `router`'s description for its daemons, or `None` when it routes statically.
fn describe(
    topology: &Topology,
    router: &KernelRouterSpec,
) -> Result<Option<RouterSpec>, RoutingError> {
    let node = |name: &str| topology.node_id(name).map(|id| topology.node(id));
    let routing = node(&router.name)
        .and_then(|n| n.routing.clone())
        .unwrap_or_default();
    if routing.protocol == RoutingProtocol::Static && routing.config.is_none() {
        return Ok(None);
    }
    let interfaces = router
        .interfaces
        .iter()
        .map(|i| {
            let neighbour = if i.peer_is_host {
                Neighbour::Passive
            } else {
                let peer = node(&i.peer).and_then(|n| n.routing.clone());
                match peer {
                    Some(p) if p.protocol != RoutingProtocol::Static || p.config.is_some() => {
                        Neighbour::Router { asn: p.asn }
                    }
                    // Nothing behind it would be learned: its hosts unreachable from here.
                    _ => {
                        return Err(RoutingError::Spec {
                            router: router.name.clone(),
                            reason: format!(
                                "it runs a routing protocol but its neighbour {} does not ({}); give {} a protocol too (routing = \"ospf\" or \"bgp\" on a kernel router), or route {} statically",
                                i.peer,
                                if peer.is_some() { "it routes statically" } else { "it is an engine router" },
                                i.peer,
                                router.name
                            ),
                        })
                    }
                }
            };
            Ok(Interface {
                device: i.device.clone(),
                peer: i.peer.clone(),
                neighbour,
                peer_ipv4: i.peer_ipv4,
                peer_ipv6: i.peer_ipv6,
                cost: ospf_cost(topology.routing, Duration::from_nanos(i.delay_ns)),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(RouterSpec {
        name: router.name.clone(),
        namespace: router.namespace.clone(),
        ipv4: router.ipv4,
        ipv6: router.ipv6,
        interfaces,
        routing,
    }))
}
