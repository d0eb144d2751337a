//! `--cluster slurm`: the cluster of the Slurm job this process runs in, one machine per node of
//! the job, its workers started with `srun` inside the job (docs/cluster.md, "Slurm").

use super::file::{Cluster, Machine, GENEVE_PORT};
use std::net::{IpAddr, ToSocketAddrs};
use std::process::Command;

/// The word that stands for a cluster file: `--cluster slurm`.
pub const SLURM: &str = "slurm";

/// The environment variable that says at which address a node's worker is reached: a pattern in
/// which `%N` stands for the node's name (`%N-ib`, `10.1.0.%N`...), an address or a name to look
/// up. Without it, the node's `NodeAddr` in Slurm (its name, unless slurm.conf sets one).
pub const ADDRESS_VAR: &str = "NETLOOM_SLURM_ADDRESS";

/// Machines' names are at most this long (they prefix the hosts' namespaces' names).
const MAX_NAME: usize = 8;

/// Why no cluster could be made of the job.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// Not inside an allocation.
    #[error("--cluster slurm: this is not inside a Slurm job (SLURM_JOB_ID is not set): run it in an allocation of two nodes or more, e.g. `salloc -N2 netloom run FILE --cluster slurm`, or from an sbatch script (docs/cluster.md, \"Slurm\")")]
    NotInJob,
    /// A variable every job step has is missing.
    #[error("Slurm job {job}: {var} is not set, which Slurm sets in every job; is this a job's environment?")]
    Missing {
        /// The job.
        job: String,
        /// The variable.
        var: &'static str,
    },
    /// `scontrol` failed, or said something else than expected.
    #[error("Slurm job {job}: `scontrol {args}`: {why}")]
    Scontrol {
        /// The job.
        job: String,
        /// Its arguments.
        args: String,
        /// What went wrong.
        why: String,
    },
    /// SLURM_JOB_CPUS_PER_NODE does not read as Slurm writes it.
    #[error("Slurm job {job}: SLURM_JOB_CPUS_PER_NODE={text:?} is not a list of counts like 4(x2),2 for the job's {nodes} nodes")]
    Cpus {
        /// The job.
        job: String,
        /// The variable's text.
        text: String,
        /// How many nodes the job has.
        nodes: usize,
    },
    /// One node: no cluster.
    #[error("Slurm job {job} has one node ({node}); a run over several machines needs two or more: allocate -N2 or more, or run without --cluster")]
    OneNode {
        /// The job.
        job: String,
        /// Its node.
        node: String,
    },
    /// A node's address is not known, or not one the others can reach.
    #[error("Slurm job {job}: node {node}: {why}; set the node's NodeAddr in slurm.conf, or {ADDRESS_VAR} (e.g. {ADDRESS_VAR}=%N-ib), or write a cluster file (docs/cluster.md, \"Slurm\")")]
    Address {
        /// The job.
        job: String,
        /// The node.
        node: String,
        /// What is wrong.
        why: String,
    },
}

/// What the job's environment says: its id, its nodes (a Slurm host list) and CPUs per node, and
/// the address pattern, if given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEnv {
    /// SLURM_JOB_ID.
    pub id: String,
    /// SLURM_JOB_NODELIST, as `nl[1-2]`.
    pub nodelist: String,
    /// SLURM_JOB_CPUS_PER_NODE, as `2(x2),1`.
    pub cpus_per_node: Option<String>,
    /// `NETLOOM_SLURM_ADDRESS`.
    pub address: Option<String>,
}

impl JobEnv {
    /// The job's environment from `var` (`std::env::var` but for tests).
    pub fn read(var: impl Fn(&str) -> Option<String>) -> Result<JobEnv, SlurmError> {
        let id = var("SLURM_JOB_ID").ok_or(SlurmError::NotInJob)?;
        let nodelist = var("SLURM_JOB_NODELIST").ok_or_else(|| SlurmError::Missing {
            job: id.clone(),
            var: "SLURM_JOB_NODELIST",
        })?;
        Ok(JobEnv {
            id,
            nodelist,
            cpus_per_node: var("SLURM_JOB_CPUS_PER_NODE"),
            address: var(ADDRESS_VAR).filter(|a| !a.is_empty()),
        })
    }
}

/// One node of the job as Slurm knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its name in Slurm (`srun -w` takes it).
    pub name: String,
    /// Its NodeAddr: where Slurm reaches its slurmd (its name, unless slurm.conf sets one).
    pub node_addr: String,
    /// The job's CPUs on it, if known.
    pub cpus: Option<u32>,
}

/// The cluster of the job this process runs in, its workers running `netloom` (a path that must
/// be the same on every node). Asks `scontrol` for the nodes and looks their addresses up.
pub fn this_job(netloom: &str) -> Result<Cluster, SlurmError> {
    let env = JobEnv::read(|name| std::env::var(name).ok())?;
    let nodes = nodes(&env)?;
    cluster(&env, &nodes, netloom, &resolve)
}

/// The job's nodes, in the job's order (the first runs the batch script), with their CPUs and
/// NodeAddr.
pub fn nodes(env: &JobEnv) -> Result<Vec<Node>, SlurmError> {
    let names: Vec<String> = scontrol(env, &["show", "hostnames", &env.nodelist])?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let cpus = match &env.cpus_per_node {
        Some(text) => cpus_per_node(text, names.len()).ok_or_else(|| SlurmError::Cpus {
            job: env.id.clone(),
            text: text.clone(),
            nodes: names.len(),
        })?,
        None => vec![None; names.len()],
    };
    let shown = scontrol(env, &["show", "node", "--oneliner", &env.nodelist])?;
    Ok(names
        .into_iter()
        .zip(cpus)
        .map(|(name, cpus)| Node {
            node_addr: node_addr(&shown, &name).unwrap_or_else(|| name.clone()),
            name,
            cpus,
        })
        .collect())
}

/// The cluster of nodes `nodes` of the job `env`: machine k on node k, reached at its address
/// (`ADDRESS_VAR`'s pattern, else its NodeAddr) looked up with `lookup`, started with `srun`.
pub fn cluster(
    env: &JobEnv,
    nodes: &[Node],
    netloom: &str,
    lookup: &dyn Fn(&str) -> Result<Vec<IpAddr>, String>,
) -> Result<Cluster, SlurmError> {
    if let [node] = nodes {
        return Err(SlurmError::OneNode {
            job: env.id.clone(),
            node: node.name.clone(),
        });
    }
    let names = machine_names(nodes);
    let mut machines: Vec<Machine> = Vec::with_capacity(nodes.len());
    for (node, name) in nodes.iter().zip(names) {
        let address = address(env, node, lookup)?;
        if let Some(other) = machines.iter().position(|m| m.address == address) {
            return Err(SlurmError::Address {
                job: env.id.clone(),
                node: node.name.clone(),
                why: format!(
                    "its address {address} is node {}'s too, and each worker takes hand-offs at its own",
                    nodes[other].name
                ),
            });
        }
        machines.push(Machine {
            name,
            address,
            port: GENEVE_PORT,
            launcher: launcher(&env.id, &node.name),
            netloom: netloom.to_string(),
            cpus: node.cpus,
            nodes: Vec::new(),
            line: 0,
        });
    }
    Ok(Cluster {
        file: format!("Slurm job {}", env.id),
        machines,
    })
}

/// One line saying what the cluster of a job is: each machine's node, address and CPUs, and
/// how its workers are started.
pub fn summary(cluster: &Cluster) -> String {
    let machines: Vec<String> = cluster
        .machines
        .iter()
        .map(|m| {
            let cpus = match m.cpus {
                Some(1) => "1 CPU".to_string(),
                Some(n) => format!("{n} CPUs"),
                None => "CPUs asked of its worker".into(),
            };
            format!("{} at {} ({cpus})", m.name, m.address)
        })
        .collect();
    let launcher: Vec<&str> = cluster.machines[0]
        .launcher
        .iter()
        .map(|w| match w.starts_with("--nodelist=") {
            true => "--nodelist=NODE",
            false => w,
        })
        .collect();
    format!(
        "{}: machines {}; workers started with `{} NETLOOM ...`",
        cluster.file,
        machines.join(", "),
        launcher.join(" ")
    )
}

/// How a program is started on `node` inside job `job`: one task on that node, sharing the
/// job's resources with every other step (`--overlap`: the workers, each `exec` and the batch
/// script all run at once) and with this process's environment (`--export=ALL`, whatever the
/// job was submitted with), naming the job so that `netloom exec` and `stop` from another shell
/// start no new allocation. Without `--exact` a step gets all the job's CPUs on the node.
pub fn launcher(job: &str, node: &str) -> Vec<String> {
    [
        "srun",
        &format!("--jobid={job}"),
        "--nodes=1",
        "--ntasks=1",
        &format!("--nodelist={node}"),
        "--overlap",
        "--export=ALL",
        "--quiet",
    ]
    .map(String::from)
    .to_vec()
}

/// The job's CPUs on each of its `nodes` nodes from SLURM_JOB_CPUS_PER_NODE (`4(x2),2`: 4 on
/// each of the first two, 2 on the third); `None` if it does not read so.
pub fn cpus_per_node(text: &str, nodes: usize) -> Option<Vec<Option<u32>>> {
    let mut cpus = Vec::with_capacity(nodes);
    for item in text.split(',') {
        let (count, times) = match item.split_once("(x") {
            Some((count, rest)) => (count, rest.strip_suffix(')')?.parse::<usize>().ok()?),
            None => (item, 1),
        };
        let count: u32 = count.trim().parse().ok().filter(|&c| c > 0)?;
        if cpus.len() + times > nodes {
            return None;
        }
        cpus.extend(std::iter::repeat_n(Some(count), times));
    }
    (cpus.len() == nodes).then_some(cpus)
}

/// The NodeAddr of `node` in `scontrol show node --oneliner`'s output.
fn node_addr(shown: &str, node: &str) -> Option<String> {
    let field = |line: &str, key: &str| -> Option<String> {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .map(String::from)
    };
    shown
        .lines()
        .find(|l| field(l, "NodeName=").as_deref() == Some(node))
        .and_then(|l| field(l, "NodeAddr="))
        .filter(|a| !a.is_empty())
}

/// The machines' names: the nodes' own when every one can name a machine (1 to 8 letters,
/// digits, - or _), else m1, m2, ... for all, so that no two can be confused.
pub fn machine_names(nodes: &[Node]) -> Vec<String> {
    let fits = |n: &str| {
        (1..=MAX_NAME).contains(&n.len())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    match nodes.iter().all(|n| fits(&n.name)) {
        true => nodes.iter().map(|n| n.name.clone()).collect(),
        false => (1..=nodes.len()).map(|k| format!("m{k}")).collect(),
    }
}

/// Where `node`'s worker is reached: `ADDRESS_VAR`'s pattern or the node's NodeAddr, an address
/// or a name looked up; never a loopback address, which each node has for itself.
fn address(
    env: &JobEnv,
    node: &Node,
    lookup: &dyn Fn(&str) -> Result<Vec<IpAddr>, String>,
) -> Result<IpAddr, SlurmError> {
    let (text, from) = match &env.address {
        Some(pattern) => (pattern.replace("%N", &node.name), ADDRESS_VAR),
        None => (node.node_addr.clone(), "its NodeAddr"),
    };
    let error = |why: String| SlurmError::Address {
        job: env.id.clone(),
        node: node.name.clone(),
        why,
    };
    let found = match text.parse::<IpAddr>() {
        Ok(address) => vec![address],
        Err(_) => lookup(&text).map_err(|e| error(format!("{from} {text:?}: {e}")))?,
    };
    found
        .iter()
        .find(|a| !a.is_loopback())
        .copied()
        .ok_or_else(|| match found.first() {
            Some(a) => error(format!(
                "{from} {text:?} is {a}, a loopback address the other nodes cannot reach"
            )),
            None => error(format!("{from} {text:?} has no address")),
        })
}

/// The addresses of `name` as the system looks them up, IPv4 first (Slurm's own networks are
/// mostly IPv4, and a name with both may not be reachable over IPv6).
pub fn resolve(name: &str) -> Result<Vec<IpAddr>, String> {
    let mut found: Vec<IpAddr> = (name, 0)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .map(|a| a.ip())
        .collect();
    found.sort_by_key(|a| a.is_ipv6());
    found.dedup();
    Ok(found)
}

/// What `scontrol ARGS` prints; errors name the job and say why.
fn scontrol(env: &JobEnv, args: &[&str]) -> Result<String, SlurmError> {
    let error = |why: String| SlurmError::Scontrol {
        job: env.id.clone(),
        args: args.join(" "),
        why,
    };
    let out = Command::new("scontrol")
        .args(args)
        .output()
        .map_err(|e| error(format!("{e} (is Slurm's scontrol on the PATH?)")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or("").trim().to_string();
        return Err(error(format!("{}: {last}", out.status)));
    }
    String::from_utf8(out.stdout).map_err(|_| error("printed something not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(address: Option<&str>) -> JobEnv {
        JobEnv {
            id: "42".into(),
            nodelist: "nl[1-2]".into(),
            cpus_per_node: Some("2(x2)".into()),
            address: address.map(String::from),
        }
    }

    fn node(name: &str, node_addr: &str, cpus: Option<u32>) -> Node {
        Node {
            name: name.into(),
            node_addr: node_addr.into(),
            cpus,
        }
    }

    /// A name service that knows `nl1` and `nl2` (and their `-ib` names) and `vm` as Debian's
    /// /etc/hosts has a machine's own name: at 127.0.1.1.
    fn lookup(name: &str) -> Result<Vec<IpAddr>, String> {
        let a = |s: &str| vec![s.parse().unwrap()];
        match name {
            "nl1" => Ok(a("192.0.2.1")),
            "nl2" => Ok(a("192.0.2.2")),
            "nl1-ib" => Ok(a("198.51.100.1")),
            "nl2-ib" => Ok(a("198.51.100.2")),
            "vm" => Ok(a("127.0.1.1")),
            _ => Err("Name or service not known".into()),
        }
    }

    #[test]
    fn outside_a_job_the_error_says_what_to_do() {
        let e = JobEnv::read(|_| None).unwrap_err().to_string();
        assert!(e.contains("not inside a Slurm job"), "{e}");
        assert!(
            e.contains("salloc -N2 netloom run FILE --cluster slurm"),
            "{e}"
        );
        let e = JobEnv::read(|v| (v == "SLURM_JOB_ID").then(|| "7".into())).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Slurm job 7: SLURM_JOB_NODELIST is not set, which Slurm sets in every job; is this a job's environment?"
        );
    }

    #[test]
    fn cpus_per_node_reads_slurms_compressed_counts() {
        assert_eq!(
            cpus_per_node("4(x2),2", 3),
            Some(vec![Some(4), Some(4), Some(2)])
        );
        assert_eq!(cpus_per_node("1,3", 2), Some(vec![Some(1), Some(3)]));
        assert_eq!(cpus_per_node("2(x3)", 2), None, "more counts than nodes");
        assert_eq!(cpus_per_node("2", 2), None, "fewer counts than nodes");
        assert_eq!(cpus_per_node("0(x2)", 2), None);
        assert_eq!(cpus_per_node("two", 1), None);
        assert_eq!(cpus_per_node("2(x2", 2), None);
    }

    #[test]
    fn node_addr_is_read_from_scontrol_and_defaults_to_the_name() {
        let shown = "NodeName=nl1 Arch=x86_64 NodeAddr=10.252.0.1 NodeHostName=nl1\n\
                     NodeName=nl10 Arch=x86_64 NodeAddr=10.252.0.10 NodeHostName=nl10\n";
        assert_eq!(node_addr(shown, "nl1").as_deref(), Some("10.252.0.1"));
        assert_eq!(node_addr(shown, "nl10").as_deref(), Some("10.252.0.10"));
        assert_eq!(node_addr(shown, "nl2"), None);
    }

    #[test]
    fn each_node_is_a_machine_started_with_srun_in_the_job() {
        let nodes = [
            node("nl1", "10.252.0.1", Some(2)),
            node("nl2", "nl2", Some(2)),
        ];
        let c = cluster(&env(None), &nodes, "/opt/netloom", &lookup).unwrap();
        assert_eq!(c.file, "Slurm job 42");
        let m: Vec<_> = c
            .machines
            .iter()
            .map(|m| (m.name.as_str(), m.address.to_string(), m.cpus, m.port))
            .collect();
        assert_eq!(
            m,
            [
                ("nl1", "10.252.0.1".into(), Some(2), GENEVE_PORT),
                ("nl2", "192.0.2.2".into(), Some(2), GENEVE_PORT)
            ]
        );
        let command = c.machines[1].netloom_command(&["worker"]);
        let argv: Vec<_> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            argv.join(" "),
            "srun --jobid=42 --nodes=1 --ntasks=1 --nodelist=nl2 --overlap --export=ALL --quiet /opt/netloom worker"
        );
        assert_eq!(summary(&c), "Slurm job 42: machines nl1 at 10.252.0.1 (2 CPUs), nl2 at 192.0.2.2 (2 CPUs); workers started with `srun --jobid=42 --nodes=1 --ntasks=1 --nodelist=NODE --overlap --export=ALL --quiet NETLOOM ...`");
    }

    #[test]
    fn the_address_pattern_overrides_node_addr() {
        let nodes = [node("nl1", "10.252.0.1", None), node("nl2", "nl2", None)];
        let c = cluster(&env(Some("%N-ib")), &nodes, "netloom", &lookup).unwrap();
        let addresses: Vec<String> = c.machines.iter().map(|m| m.address.to_string()).collect();
        assert_eq!(addresses, ["198.51.100.1", "198.51.100.2"]);
        let e = cluster(&env(Some("%N-eth9")), &nodes, "netloom", &lookup).unwrap_err();
        assert_eq!(e.to_string(), "Slurm job 42: node nl1: NETLOOM_SLURM_ADDRESS \"nl1-eth9\": Name or service not known; set the node's NodeAddr in slurm.conf, or NETLOOM_SLURM_ADDRESS (e.g. NETLOOM_SLURM_ADDRESS=%N-ib), or write a cluster file (docs/cluster.md, \"Slurm\")");
    }

    #[test]
    fn unreachable_or_shared_addresses_and_one_node_are_refused() {
        // Debian gives a machine's own name 127.0.1.1: the others cannot reach it there.
        let nodes = [node("vm", "vm", None), node("nl2", "nl2", None)];
        let e = cluster(&env(None), &nodes, "netloom", &lookup).unwrap_err();
        assert!(
            e.to_string().starts_with("Slurm job 42: node vm: its NodeAddr \"vm\" is 127.0.1.1, a loopback address the other nodes cannot reach; set"),
            "{e}"
        );
        let nodes = [node("a", "192.0.2.9", None), node("b", "192.0.2.9", None)];
        let e = cluster(&env(None), &nodes, "netloom", &lookup).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "Slurm job 42: node b: its address 192.0.2.9 is node a's too, and each worker takes hand-offs at its own; set"
            ),
            "{e}"
        );
        let e = cluster(&env(None), &nodes[..1], "netloom", &lookup).unwrap_err();
        assert_eq!(e.to_string(), "Slurm job 42 has one node (a); a run over several machines needs two or more: allocate -N2 or more, or run without --cluster");
    }

    #[test]
    fn nodes_whose_names_cannot_name_machines_are_numbered() {
        let short = [node("nl1", "", None), node("gpu-07", "", None)];
        assert_eq!(machine_names(&short), ["nl1", "gpu-07"]);
        let long = [node("nl1", "", None), node("compute-0001", "", None)];
        assert_eq!(machine_names(&long), ["m1", "m2"]);
        let dotted = [node("a.b", "", None), node("c", "", None)];
        assert_eq!(machine_names(&dotted), ["m1", "m2"]);
    }
}
