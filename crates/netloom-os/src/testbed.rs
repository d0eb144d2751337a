//! `Testbed`: every host of one live experiment brought up (namespace, TUN, addresses, hosts
//! file, registry entry) by the process that owns it, and taken down again. It does not move
//! packets (the driver reads and writes the `Tun`s) and does not deal with other processes'
//! experiments (`cleanup` does).

use crate::address::{AddressPlan, IPV6_PREFIX_LEN};
use crate::interface::DeviceCounters;
use crate::parallel::remove_in_parallel;
use crate::plan::{self, MAX_MTU, MIN_MTU};
use crate::registry::{self, Claim, Record, RecordHost};
use crate::router::{self, KernelRouterSpec};
use crate::sysctl::Sysctls;
use crate::tun::{TUN_NAME, TUN_NAME_C};
use crate::{cleanup, host_cpu, interface, netns, tcp, OsError, Tun};
use std::collections::HashSet;
use std::io::Write;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// One host: its name (also its name in every hosts file) and its addresses.
#[derive(Clone, Debug, PartialEq)]
pub struct HostSpec {
    /// The host's name: 1 to 63 characters of `A-Z a-z 0-9 _ . -` starting with a letter or a
    /// digit, not a number or an address; its namespace is `nl-<experiment>-<name>`.
    pub name: String,
    /// Its IPv4 address on `nl0`: inside `TestbedSpec::addresses`, not the network or broadcast
    /// address.
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address on `nl0`: inside fd6e:6c00::/64, not fd6e:6c00::.
    pub ipv6: Ipv6Addr,
    /// The MTU of its `nl0`, 1280 to 65535: a live run gives it the MTU of the host's links
    /// unless `netloom run --mtu` sets one for every host.
    pub mtu: u32,
    /// The CPUs its programs may use together (0.25: a quarter of one), through a cgroup every
    /// program started in it joins; `None`: no limit.
    pub cpu: Option<f64>,
}

/// One emulated router: no namespace, but a name and addresses every host resolves, the source
/// of the ICMP errors it sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouterSpec {
    /// Its name, by the rules of `HostSpec::name`.
    pub name: String,
    /// Its IPv4 address (`AddressPlan::router`).
    pub ipv4: Ipv4Addr,
    /// Its IPv6 address (`AddressPlan::router`).
    pub ipv6: Ipv6Addr,
}

/// What to bring up.
#[derive(Clone, Debug, PartialEq)]
pub struct TestbedSpec {
    /// The experiment's name: 1 to 63 characters of `A-Z a-z 0-9 _ . -` starting with a letter
    /// or a digit. It names the registry entry and is part of every namespace's name.
    pub name: String,
    /// The range the hosts' and routers' addresses come from; each host's `nl0` gets its
    /// prefix length.
    pub addresses: AddressPlan,
    /// The hosts, in topology order (host `i` is the `i`-th TUN of `Testbed::tuns`); 1 to
    /// `addresses.capacity()` with the routers, with distinct names and addresses.
    pub hosts: Vec<HostSpec>,
    /// The TCP congestion control every host starts with (`net.ipv4.tcp_congestion_control` in
    /// its namespace), one of the machine's available algorithms; programs in the host may change
    /// it, as on any machine.
    pub congestion_control: String,
    /// The routers, which have no namespace but a name and addresses every host resolves
    /// (`AddressPlan::router`); names and addresses distinct from the hosts' and each other's.
    /// Kernel routers are among them too.
    pub routers: Vec<RouterSpec>,
    /// The kernel routers: a namespace each, with one TUN device per link (their devices follow
    /// the hosts' in `Testbed::tuns`, router by router, in interface order).
    pub kernel_routers: Vec<KernelRouterSpec>,
}

impl TestbedSpec {
    /// An experiment whose hosts take their addresses from the default address plan, in order,
    /// the default MTU and the default congestion control.
    pub fn planned<S: Into<String>>(name: &str, hosts: impl IntoIterator<Item = S>) -> Self {
        let hosts = hosts
            .into_iter()
            .enumerate()
            .map(|(i, host)| {
                // Past the plan's end (which `create` refuses) the last address repeats rather
                // than panicking here.
                let plan = AddressPlan::DEFAULT;
                let (ipv4, ipv6) = plan.host(i.min(plan.capacity() - 1));
                HostSpec {
                    name: host.into(),
                    ipv4,
                    ipv6,
                    mtu: plan::DEFAULT_MTU,
                    cpu: None,
                }
            })
            .collect();
        TestbedSpec {
            name: name.to_string(),
            addresses: AddressPlan::DEFAULT,
            hosts,
            congestion_control: tcp::DEFAULT_CONGESTION_CONTROL.to_string(),
            routers: Vec::new(),
            kernel_routers: Vec::new(),
        }
    }

    fn namespaces(&self) -> Vec<String> {
        self.hosts
            .iter()
            .map(|h| plan::namespace_name(&self.name, &h.name))
            .collect()
    }

    fn check(&self) -> Result<(), OsError> {
        plan::check_experiment_name(&self.name)?;
        let invalid = |reason: String| OsError::InvalidSpec {
            experiment: self.name.clone(),
            reason,
        };
        if self.hosts.is_empty() {
            return Err(invalid("it has no hosts".to_string()));
        }
        if self.hosts.len() + self.routers.len() > self.addresses.capacity() {
            return Err(invalid(format!(
                "it has {} hosts and {} routers; the address plan {} has room for {}",
                self.hosts.len(),
                self.routers.len(),
                self.addresses,
                self.addresses.capacity()
            )));
        }
        let (mut names, mut v4, mut v6) = (HashSet::new(), HashSet::new(), HashSet::new());
        for host in &self.hosts {
            if !(MIN_MTU..=MAX_MTU).contains(&host.mtu) {
                return Err(invalid(format!(
                    "host {}: MTU {} is out of range; use {MIN_MTU} (the IPv6 minimum) to {MAX_MTU}",
                    host.name, host.mtu
                )));
            }
        }
        for host in self.named() {
            plan::check_host_name(&host.name)?;
            if !names.insert(host.name.clone()) {
                return Err(invalid(format!("host {:?} appears twice", host.name)));
            }
            if !self.addresses.contains(host.ipv4) {
                return Err(invalid(format!(
                    "host {}: {} is outside {} (or is its network or broadcast address); the run's hosts only use that range",
                    host.name, host.ipv4, self.addresses
                )));
            }
            if !self.addresses.contains_ipv6(host.ipv6) {
                return Err(invalid(format!(
                    "host {}: {} is outside fd6e:6c00::/{IPV6_PREFIX_LEN} (or is its ::0); netloom's hosts only use that range",
                    host.name, host.ipv6
                )));
            }
            if !v4.insert(host.ipv4) || !v6.insert(host.ipv6) {
                return Err(invalid(format!(
                    "host {}: address {} or {} is used twice",
                    host.name, host.ipv4, host.ipv6
                )));
            }
        }
        for r in &self.kernel_routers {
            if !self.routers.iter().any(|named| named.name == r.name) {
                return Err(invalid(format!(
                    "kernel router {} is not among the routers",
                    r.name
                )));
            }
            if r.namespace != plan::namespace_name(&self.name, &r.name) {
                return Err(invalid(format!(
                    "kernel router {}: its namespace must be {}",
                    r.name,
                    plan::namespace_name(&self.name, &r.name)
                )));
            }
            let mut devices = HashSet::new();
            for i in &r.interfaces {
                let ok = !i.device.is_empty()
                    && i.device.len() <= router::MAX_DEVICE_NAME
                    && !i.device.contains(['/', ':', ' ', '\0']);
                if !ok || !devices.insert(&i.device) || i.device == "lo" {
                    return Err(invalid(format!(
                        "kernel router {}: device name {:?} is not valid or is used twice",
                        r.name, i.device
                    )));
                }
            }
            if let Some(route) = r.routes.iter().find(|x| x.interface >= r.interfaces.len()) {
                return Err(invalid(format!(
                    "kernel router {}: route to {} names interface {} of {}",
                    r.name,
                    route.destination,
                    route.interface,
                    r.interfaces.len()
                )));
            }
        }
        Ok(())
    }

    /// Every host and router as a name with its addresses, hosts first.
    fn named(&self) -> impl Iterator<Item = RouterSpec> + '_ {
        let hosts = self.hosts.iter().map(|h| RouterSpec {
            name: h.name.clone(),
            ipv4: h.ipv4,
            ipv6: h.ipv6,
        });
        hosts.chain(self.routers.iter().cloned())
    }

    /// `/etc/hosts` of every host (one file for all): loopback names, then every host's and
    /// router's name with both addresses.
    fn hosts_file(&self) -> String {
        let mut text = format!(
            "# /etc/hosts of the hosts of netloom experiment {} (removed with the experiment)\n\
             127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
            self.name
        );
        for h in self.named() {
            text.push_str(&format!("{}\t{}\n{}\t{}\n", h.ipv4, h.name, h.ipv6, h.name));
        }
        text
    }
}

/// A live experiment owned by this process: while it exists, every host's namespace, `nl0` and
/// registry entry exist. Dropping it tears everything down.
#[derive(Debug)]
pub struct Testbed {
    spec: TestbedSpec,
    /// Shared with the threads that move packets (`tuns`); they must have dropped their copies
    /// before `teardown`, which closes the devices.
    tuns: Arc<Vec<Tun>>,
    /// What this value made and must remove: namespaces, `/etc/netns` directories, the registry
    /// directory. Each list shrinks as teardown removes things, so teardown can be retried.
    namespaces: Vec<String>,
    etc_dirs: Vec<String>,
    /// The namespaces of the hosts with a CPU limit, whose cgroups teardown removes.
    cgroups: Vec<String>,
    registry: Option<PathBuf>,
    /// The registry directory, held open while the experiment lives: how `stop` and `clean`
    /// tell its owner from another process a record might name.
    _owner: std::fs::File,
}

impl Testbed {
    /// Brings every host up; see the crate documentation (docs/live.md) for what a host gets.
    /// Fails if the name is in use by a running experiment, or if a namespace of the same name
    /// exists; leftovers of a dead experiment of the same name are cleaned first. On any error
    /// everything made so far is removed.
    pub fn create(spec: &TestbedSpec) -> Result<Testbed, OsError> {
        spec.check()?;
        Testbed::create_checked(spec)
    }

    /// The registry entry of run `name` whose hosts are all on other machines (the coordinator
    /// of a run over several machines): no namespace, no device, but `stats`, `stop` and
    /// `clean` find the run by name, and its owner is known as for any experiment.
    pub fn without_hosts(name: &str) -> Result<Testbed, OsError> {
        plan::check_experiment_name(name)?;
        Testbed::create_checked(&TestbedSpec::planned(name, Vec::<String>::new()))
    }

    fn create_checked(spec: &TestbedSpec) -> Result<Testbed, OsError> {
        require_root("netloom run")?;
        let devices: usize = spec.kernel_routers.iter().map(|r| r.interfaces.len()).sum();
        raise_open_files(
            &spec.name,
            (spec.hosts.len() + devices) as u64 + SPARE_FILES,
        )?;
        if !Path::new("/dev/net/tun").exists() {
            return Err(OsError::NoTun);
        }
        let available = tcp::available_congestion_controls()?;
        if !available.contains(&spec.congestion_control) {
            return Err(OsError::InvalidSpec {
                experiment: spec.name.clone(),
                reason: format!(
                    "TCP congestion control {:?} is not available on this machine; available: {} (load another with modprobe tcp_NAME)",
                    spec.congestion_control,
                    available.join(", ")
                ),
            });
        }
        tcp::allow_every_available()?;
        let dir = registry::registry_dir();
        let path = match registry::claim(&dir, &spec.name)? {
            Claim::Claimed(path) => path,
            Claim::Taken(Some(record)) if record.alive => {
                return Err(OsError::InUse {
                    name: record.name,
                    pid: record.pid,
                })
            }
            Claim::Taken(_) => {
                cleanup::clean_in(&dir, Some(&spec.name))?;
                match registry::claim(&dir, &spec.name)? {
                    Claim::Claimed(path) => path,
                    Claim::Taken(record) => {
                        return Err(OsError::InUse {
                            name: spec.name.clone(),
                            pid: record.map_or(0, |r| r.pid),
                        })
                    }
                }
            }
        };
        let owner = match registry::hold(&path) {
            Ok(owner) => owner,
            Err(err) => {
                let _ = registry::remove(&path);
                return Err(err);
            }
        };
        let mut experiment = Testbed {
            spec: spec.clone(),
            tuns: Arc::default(),
            namespaces: Vec::new(),
            etc_dirs: Vec::new(),
            cgroups: Vec::new(),
            registry: Some(path),
            _owner: owner,
        };
        match experiment.build() {
            Ok(()) => Ok(experiment),
            Err(err) => {
                // The first error is the one worth reporting; teardown's own errors would only
                // hide it, and Drop retries.
                let _ = experiment.teardown();
                Err(err)
            }
        }
    }

    fn build(&mut self) -> Result<(), OsError> {
        let spec = &self.spec;
        let namespaces = spec.namespaces();
        let own = std::process::id();
        let mut record = Record {
            name: spec.name.clone(),
            pid: own,
            pid_start: netns::start_ticks(own),
            created_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            hosts: spec
                .hosts
                .iter()
                .zip(&namespaces)
                .map(|(h, ns)| RecordHost {
                    name: h.name.clone(),
                    ns: ns.clone(),
                    ipv4: h.ipv4,
                    ipv6: h.ipv6,
                    cgroup: None,
                })
                .collect(),
            routers: spec
                .kernel_routers
                .iter()
                .map(|r| RecordHost {
                    name: r.name.clone(),
                    ns: r.namespace.clone(),
                    ipv4: r.ipv4,
                    ipv6: r.ipv6,
                    cgroup: None,
                })
                .collect(),
            alive: true,
        };
        // The record goes first, so that a crash at any later point leaves something `clean`
        // can find.
        registry::write(self.registry.as_ref().expect("set by create"), &record)?;
        let routers = spec.kernel_routers.iter().map(|r| &r.namespace);
        if let Some(ns) = namespaces
            .iter()
            .chain(routers)
            .find(|ns| netns::exists(ns))
        {
            return Err(OsError::NamespaceExists { ns: ns.clone() });
        }
        netns::prepare_run_dir()?;
        let registry = self.registry.as_deref().expect("set by create");
        let (made, tuns) = bring_up(spec, &namespaces, registry);
        self.namespaces = made;
        let mut tuns = tuns?;
        // Each limited host's cgroup, made before any program can start in the host, and named
        // in the record for the programs started without netloom (the Python API's).
        for ((host, ns), entry) in spec.hosts.iter().zip(&namespaces).zip(&mut record.hosts) {
            if let Some(cpus) = host.cpu {
                self.cgroups.push(ns.clone());
                entry.cgroup = Some(host_cpu::create(ns, &host.name, cpus)?);
            }
        }
        if !self.cgroups.is_empty() {
            registry::write(registry, &record)?;
        }
        for r in &spec.kernel_routers {
            let mut made = false;
            let result = router::bring_up(r, registry, &mut made);
            if made {
                self.namespaces.push(r.namespace.clone());
            }
            match result {
                Ok(devices) => tuns.extend(devices),
                Err(err) => {
                    // Teardown closes what was made so far.
                    self.tuns = Arc::new(tuns);
                    return Err(err);
                }
            }
        }
        self.tuns = Arc::new(tuns);
        let routers = spec.kernel_routers.iter().map(|r| &r.namespace);
        let hosts_file = spec.hosts_file();
        for ns in namespaces.iter().chain(routers) {
            match self.etc_dirs.as_slice() {
                [] => netns::write_hosts(ns, &hosts_file)?,
                [first] => netns::link_hosts(ns, first, None)?,
                [first, .., previous] => netns::link_hosts(ns, first, Some(previous))?,
            }
            self.etc_dirs.push(ns.clone());
        }
        Ok(())
    }

    /// The TUN devices, one per host in the order of `spec().hosts`, then those of the kernel
    /// routers (router by router, in interface order); empty after teardown.
    /// Threads that read and write them keep a clone of this `Arc` and drop it before teardown.
    pub fn tuns(&self) -> &Arc<Vec<Tun>> {
        &self.tuns
    }

    /// What was brought up: the spec `create` was given.
    pub fn spec(&self) -> &TestbedSpec {
        &self.spec
    }

    /// The namespace of host `i` (in spec order).
    pub fn namespace(&self, i: usize) -> String {
        plan::namespace_name(&self.spec.name, &self.spec.hosts[i].name)
    }

    /// A reader of every host's `nl0` counters that outlives this borrow: a run's control
    /// threads read them while the testbed belongs to the run.
    pub fn counter_reader(&self) -> CounterReader {
        CounterReader {
            namespaces: (0..self.spec.hosts.len())
                .map(|i| self.namespace(i))
                .collect(),
        }
    }

    /// Runs `argv` on `host` like the free function `exec`.
    /// Kernel routers are run on like hosts.
    pub fn exec(&self, host: &str, argv: &[String]) -> Result<ExitStatus, OsError> {
        let hosts = self.spec.hosts.iter().map(|h| &h.name);
        let mut names = hosts.chain(self.spec.kernel_routers.iter().map(|r| &r.name));
        if !names.any(|name| name == host) {
            let hosts = self.spec.hosts.iter().map(|h| h.name.clone());
            let routers = self.spec.kernel_routers.iter().map(|r| r.name.clone());
            return Err(OsError::UnknownHost {
                experiment: self.spec.name.clone(),
                host: host.to_string(),
                hosts: hosts.chain(routers).collect(),
            });
        }
        crate::exec(&plan::namespace_name(&self.spec.name, host), argv)
    }

    /// Kills the processes left in the namespaces, closes the TUN devices, removes the namespaces,
    /// the hosts' cgroups, `/etc/netns` directories and the registry entry. Idempotent; after an error it can be
    /// called again and continues where it stopped.
    pub fn teardown(&mut self) -> Result<(), OsError> {
        let mut first_error = None;
        if let Err(err) = netns::kill_processes(&self.namespaces) {
            first_error.get_or_insert(err);
        }
        // The devices are persistent (`Tun`): closing them is quick, and they go with their
        // namespaces below, unregistered by the kernel in batches. Where someone still holds
        // them, they close when the last holder drops them.
        drop(std::mem::take(&mut self.tuns));
        remove_in_parallel(&mut self.namespaces, netns::remove, &mut first_error);
        remove_in_parallel(&mut self.cgroups, host_cpu::remove, &mut first_error);
        remove_in_parallel(&mut self.etc_dirs, netns::remove_etc, &mut first_error);
        if first_error.is_none() {
            if let Some(path) = self.registry.take() {
                if let Err(err) = registry::remove(&path) {
                    self.registry = Some(path);
                    first_error = Some(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Makes every host's namespace, TUN device and addresses on a few short-lived threads: a thread
/// that made a namespace stays inside it, and the calling thread never changes namespace.
/// Each namespace is marked as netloom's in the registry directory `registry` as soon as it
/// exists. Returns the namespaces made (also on error, so they can be removed) and the TUNs in
/// host order, or the error of the lowest-numbered host that failed.
fn bring_up(
    spec: &TestbedSpec,
    namespaces: &[String],
    registry: &Path,
) -> (Vec<String>, Result<Vec<Tun>, OsError>) {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let made = Mutex::new(Vec::new());
    let slots: Mutex<Vec<Option<Tun>>> = Mutex::new((0..spec.hosts.len()).map(|_| None).collect());
    let errors = Mutex::new(Vec::new());
    // Every new namespace starts with the same congestion control (Linux copies the initial
    // namespace's); when the first host made has the one asked for, no host writes it. Those
    // that do write through their thread's `Sysctls`, whose cost does not grow with the number
    // of namespaces as a write to /proc/sys would (docs/performance.md, "10,000 hosts").
    let inherited = OnceLock::new();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4)
        .min(spec.hosts.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut sysctls = Sysctls::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= spec.hosts.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let host = &spec.hosts[i];
                    let result = netns::create_and_enter(&namespaces[i]).and_then(|()| {
                        made.lock()
                            .expect("no panics while held")
                            .push(namespaces[i].clone());
                        registry::mark_namespace(registry, &namespaces[i])?;
                        let tun = Tun::create_here(TUN_NAME_C)?;
                        interface::configure(
                            TUN_NAME_C,
                            host.mtu,
                            (host.ipv4, spec.addresses.prefix_len()),
                            (host.ipv6, IPV6_PREFIX_LEN),
                        )?;
                        let inherits = *inherited.get_or_init(|| {
                            tcp::congestion_control().is_ok_and(|cc| cc == spec.congestion_control)
                        });
                        if !inherits {
                            tcp::set_congestion_control(&mut sysctls, &spec.congestion_control)?;
                        }
                        Ok(tun)
                    });
                    match result {
                        Ok(tun) => slots.lock().expect("no panics while held")[i] = Some(tun),
                        Err(err) => {
                            failed.store(true, Ordering::Relaxed);
                            errors.lock().expect("no panics while held").push((i, err));
                        }
                    }
                }
            });
        }
    });
    let made = made.into_inner().expect("workers have ended");
    let mut errors = errors.into_inner().expect("workers have ended");
    errors.sort_by_key(|(i, _)| *i);
    if let Some((_, err)) = errors.into_iter().next() {
        return (made, Err(err));
    }
    let tuns = slots
        .into_inner()
        .expect("workers have ended")
        .into_iter()
        .map(|tun| tun.expect("every host succeeded"))
        .collect();
    (made, Ok(tuns))
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if let Err(err) = self.teardown() {
            // Not eprintln!, which panics when stderr is closed: a drop must not.
            let _ = writeln!(
                std::io::stderr(),
                "netloom: tearing down experiment {} failed: {err}; run `netloom clean --name {}`",
                self.spec.name,
                self.spec.name
            );
        }
    }
}

fn require_root(what: &'static str) -> Result<(), OsError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(OsError::NotRoot { what });
    }
    Ok(())
}

/// Descriptors a run needs besides its TUN devices: the engine's epoll, timers, sockets, logs,
/// and what the programs it starts inherit.
const SPARE_FILES: u64 = 256;

/// Raises this process's open-file limit to `need` if it is lower: the soft limit, and the hard
/// one with it when that is lower too (root may, up to `fs.nr_open`). A shell's usual soft
/// limit, 1024, would otherwise stop a run of about a thousand hosts at a TUN device with
/// EMFILE. The error names the limit, what the run needs and how to raise it.
fn raise_open_files(experiment: &str, need: u64) -> Result<(), OsError> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct it is given, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(OsError::last("read the open-file limit (RLIMIT_NOFILE)"));
    }
    if limit.rlim_cur >= need {
        return Ok(());
    }
    let raised = libc::rlimit {
        rlim_cur: need,
        rlim_max: limit.rlim_max.max(need),
    };
    // SAFETY: setrlimit reads only the struct it is given, which lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        let err = std::io::Error::last_os_error();
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open").unwrap_or_default();
        return Err(OsError::InvalidSpec {
            experiment: experiment.to_string(),
            reason: format!(
                "it needs {need} open files (a TUN device per host and {SPARE_FILES} more), and the open-file limit is {} (hard {}), which could not be raised: {err}; raise it (`ulimit -n {need}`; the kernel's ceiling is fs.nr_open = {})",
                limit.rlim_cur,
                limit.rlim_max,
                nr_open.trim()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_checked_before_anything_is_made() {
        let ok = TestbedSpec::planned("lab", ["h1", "h2"]);
        assert!(ok.check().is_ok());
        let mut twice = ok.clone();
        twice.hosts[1].name = "h1".to_string();
        assert!(twice
            .check()
            .unwrap_err()
            .to_string()
            .contains("\"h1\" appears twice"));
        let mut outside = ok.clone();
        outside.hosts[0].ipv4 = Ipv4Addr::new(10, 0, 0, 1);
        assert!(outside
            .check()
            .unwrap_err()
            .to_string()
            .contains("outside 198.18.0.0/15"));
        let mut small = ok.clone();
        small.hosts[1].mtu = 576;
        assert!(small
            .check()
            .unwrap_err()
            .to_string()
            .contains("host h2: MTU 576 is out of range"));
        let mut jumbo = ok.clone();
        jumbo.hosts[0].mtu = 65535;
        assert!(jumbo.check().is_ok());
    }

    #[test]
    fn hosts_are_checked_against_the_spec_s_own_address_plan() {
        let mut ten = TestbedSpec::planned("lab", ["h1", "h2"]);
        ten.addresses = "10.0.0.0/8".parse().unwrap();
        let err = ten.check().unwrap_err().to_string();
        assert!(err.contains("198.18.0.1 is outside 10.0.0.0/8"), "{err}");
        ten.hosts[0].ipv4 = Ipv4Addr::new(10, 0, 0, 1);
        ten.hosts[1].ipv4 = Ipv4Addr::new(10, 0, 0, 100);
        assert!(ten.check().is_ok());
        ten.addresses = "10.0.0.0/30".parse().unwrap();
        let err = ten.check().unwrap_err().to_string();
        assert!(err.contains("10.0.0.100 is outside 10.0.0.0/30"), "{err}");
        ten.hosts.push(ten.hosts[0].clone());
        let err = ten.check().unwrap_err().to_string();
        assert!(
            err.contains("the address plan 10.0.0.0/30 has room for 2"),
            "{err}"
        );
    }

    #[test]
    fn hosts_file_names_every_host_with_both_addresses() {
        let mut spec = TestbedSpec::planned("lab", ["h1", "h2"]);
        let (ipv4, ipv6) = AddressPlan::DEFAULT.router(0);
        spec.routers.push(RouterSpec {
            name: "r1".into(),
            ipv4,
            ipv6,
        });
        spec.check().unwrap();
        let text = spec.hosts_file();
        assert!(
            text.contains("198.18.0.2\th2\nfd6e:6c00::2\th2\n"),
            "{text}"
        );
        assert!(
            text.contains("198.19.255.254\tr1\nfd6e:6c00::ff00:0:0:1\tr1\n"),
            "{text}"
        );
        // A router named as a host is refused.
        spec.routers[0].name = "h2".into();
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .contains("\"h2\" appears twice"));
        assert!(text.contains("127.0.0.1\tlocalhost\n"));
    }
}

/// Reads the kernel's counters of a testbed's hosts' `nl0` devices (`Testbed::counter_reader`).
#[derive(Clone, Debug)]
pub struct CounterReader {
    namespaces: Vec<String>,
}

impl CounterReader {
    /// The counters of every host, in host order. Cheap enough to call once a second for
    /// hundreds of hosts (one thread visits every namespace); fails once the hosts are gone.
    pub fn read(&self) -> Result<Vec<DeviceCounters>, OsError> {
        // On a thread of its own: entering namespaces must not move the caller.
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.namespaces
                        .iter()
                        .map(|ns| {
                            netns::enter(ns)?;
                            interface::counters(TUN_NAME)
                        })
                        .collect()
                })
                .join()
                .expect("reading counters does not panic")
        })
    }
}
