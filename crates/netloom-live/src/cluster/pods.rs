//! A cluster file made from Kubernetes pods (`netloom cluster from-pods`, docs/cluster.md): the
//! running pods of netloom's DaemonSet in `kubectl get pods -o json` become the machines, each
//! started through `kubectl exec -i`.

use super::selector;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::IpAddr;

/// The label dist/kubernetes/ gives the DaemonSet's pods: the default selector.
pub const DEFAULT_SELECTOR: &str = "app.kubernetes.io/name=netloom";
/// The DaemonSet's container: chosen when a pod has several.
pub const DEFAULT_CONTAINER: &str = "netloom";

/// Which pods become machines, and how they are reached.
#[derive(Clone, Debug)]
pub struct PodChoice {
    /// Only pods of this namespace (a list of `kubectl get pods -A` has every namespace's).
    pub namespace: Option<String>,
    /// A label selector, `key=value`, `key!=value`, `key` or `!key`, joined by commas.
    pub selector: String,
    /// The container `kubectl exec` runs the worker in; `None`: `netloom`, or a pod's only one.
    pub container: Option<String>,
    /// The kubectl program, and arguments before `exec` (`--context NAME`, `--kubeconfig F`).
    pub kubectl: Vec<String>,
    /// The netloom program in the container, when it is not `netloom` on its PATH.
    pub netloom: Option<String>,
    /// The machines' hand-off port, when not GENEVE's (a cluster network of GENEVE has it).
    pub port: Option<u16>,
}

impl Default for PodChoice {
    fn default() -> PodChoice {
        PodChoice {
            namespace: None,
            selector: DEFAULT_SELECTOR.into(),
            container: None,
            kubectl: vec!["kubectl".into()],
            netloom: None,
            port: None,
        }
    }
}

/// One pod that becomes a machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodMachine {
    /// The machine's name in the cluster file (1 to 8 characters).
    pub name: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub pod: String,
    /// The node it runs on.
    pub node: String,
    /// The container its worker runs in.
    pub container: String,
    /// Where the other machines send it hand-offs: the pod's IP (its node's, with hostNetwork).
    pub address: IpAddr,
}

/// The pods chosen, and why the others that the selector matched were left out.
#[derive(Clone, Debug)]
pub struct FromPods {
    /// The machines, in the order of their nodes' names.
    pub machines: Vec<PodMachine>,
    /// `POD: reason` for each matched pod left out (not running, being deleted).
    pub skipped: Vec<String>,
    /// The cluster file's text.
    pub text: String,
}

/// Why no cluster file could be made: one message for the user.
#[derive(Debug, thiserror::Error)]
pub enum PodsError {
    /// The input does not read as JSON of that shape.
    #[error(
        "the input is not kubectl's JSON ({0}); give the output of `kubectl get pods -o json`"
    )]
    NotJson(serde_json::Error),
    /// The input is JSON of another kind (a single Pod, a DaemonSet).
    #[error("the input is a {0}, not a list of pods; give the output of `kubectl get pods -o json` (a List or PodList)")]
    NotAList(String),
    /// The list holds something else than pods.
    #[error("item {index} of the list is a {kind}, not a Pod; list pods only (`kubectl get pods -o json`)")]
    NotAPod {
        /// Its place in the list, from 0.
        index: usize,
        /// Its kind.
        kind: String,
    },
    /// The label selector is not one this reads.
    #[error("label selector {selector:?}: {reason}; write key=value, key!=value, key or !key, joined by commas")]
    Selector {
        /// As given.
        selector: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No pod of the list is in the namespace with the labels.
    #[error("no pod {what}; the list has {count} pod(s){seen}")]
    NoMatch {
        /// The namespace and labels asked for.
        what: String,
        /// How many pods the list has.
        count: usize,
        /// Some of them with their labels, to show what the selector missed.
        seen: String,
    },
    /// Pods match, but none can run a worker now.
    #[error("no pod {what} is running: {skipped}")]
    NoneRunning {
        /// The namespace and labels asked for.
        what: String,
        /// Each pod and why it cannot.
        skipped: String,
    },
    /// One pod only: a cluster needs two machines.
    #[error("only one pod {what} is running ({pod} on node {node}); a cluster has at least two machines (on one node, run `netloom run` in the pod without --cluster)")]
    OnlyOne {
        /// The namespace and labels asked for.
        what: String,
        /// The pod.
        pod: String,
        /// Its node.
        node: String,
    },
    /// A running pod whose status has no address.
    #[error("pod {pod} is running but has no IP address in its status (podIP, hostIP)")]
    NoAddress {
        /// The pod.
        pod: String,
    },
    /// A running pod whose address does not parse.
    #[error("pod {pod}: address {address:?} is not an IP address")]
    BadAddress {
        /// The pod.
        pod: String,
        /// Its address as the status gives it.
        address: String,
    },
    /// A running pod without a node.
    #[error("pod {pod} is running but names no node (spec.nodeName)")]
    NoNode {
        /// The pod.
        pod: String,
    },
    /// `--container` names no container of a pod.
    #[error("pod {pod} has no container {wanted:?}; its containers: {have}")]
    NoContainer {
        /// The pod.
        pod: String,
        /// The container asked for.
        wanted: String,
        /// The pod's containers.
        have: String,
    },
    /// A pod of several containers, none named `netloom`, and no `--container`.
    #[error("pod {pod} has containers {have}; choose the one netloom runs in with --container")]
    WhichContainer {
        /// The pod.
        pod: String,
        /// Its containers.
        have: String,
    },
    /// Two chosen pods on one node: not one DaemonSet's, and with the host's network they
    /// would take hand-offs at one address.
    #[error("pods {first} and {second} are both on node {node}: netloom's DaemonSet has one pod a node; narrow the choice with --selector or --namespace")]
    SameNode {
        /// One pod.
        first: String,
        /// The other.
        second: String,
        /// Their node.
        node: String,
    },
}

#[derive(Deserialize)]
struct List {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Option<Vec<serde_json::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Pod {
    kind: String,
    metadata: Metadata,
    spec: Spec,
    status: Status,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Metadata {
    name: String,
    namespace: String,
    labels: BTreeMap<String, String>,
    deletion_timestamp: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
    containers: Vec<Named>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Status {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    #[serde(rename = "hostIP")]
    host_ip: Option<String>,
    container_statuses: Vec<ContainerStatus>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ContainerStatus {
    name: String,
    ready: bool,
}

/// Reads `kubectl get pods -o json` and makes the cluster file of the pods `choice` picks.
pub fn from_pods(json: &str, choice: &PodChoice) -> Result<FromPods, PodsError> {
    let pods = read_pods(json)?;
    let terms = selector::parse(&choice.selector)?;
    let what = describe(choice);
    let picked: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            choice
                .namespace
                .as_ref()
                .is_none_or(|n| *n == p.metadata.namespace)
        })
        .filter(|p| selector::matches(&terms, &p.metadata.labels))
        .collect();
    if picked.is_empty() {
        let seen: Vec<String> = pods.iter().take(8).map(pod_and_labels).collect();
        return Err(PodsError::NoMatch {
            what,
            count: pods.len(),
            seen: match seen.is_empty() {
                true => String::new(),
                false => format!(": {}", seen.join("; ")),
            },
        });
    }
    let mut skipped = Vec::new();
    let mut running = Vec::new();
    for pod in picked {
        match not_running(pod) {
            Some(why) => skipped.push(format!("{} ({why})", pod.metadata.name)),
            None => running.push(pod),
        }
    }
    match running.len() {
        0 => {
            return Err(PodsError::NoneRunning {
                what,
                skipped: skipped.join(", "),
            })
        }
        1 => {
            return Err(PodsError::OnlyOne {
                what,
                pod: running[0].metadata.name.clone(),
                node: running[0].spec.node_name.clone().unwrap_or_default(),
            })
        }
        _ => {}
    }
    let mut machines = running
        .into_iter()
        .map(|p| machine(p, choice))
        .collect::<Result<Vec<_>, _>>()?;
    machines.sort_by(|a, b| a.node.cmp(&b.node).then(a.pod.cmp(&b.pod)));
    for pair in machines.windows(2) {
        if pair[0].node == pair[1].node {
            return Err(PodsError::SameNode {
                first: pair[0].pod.clone(),
                second: pair[1].pod.clone(),
                node: pair[0].node.clone(),
            });
        }
    }
    name_machines(&mut machines);
    let text = cluster_text(&machines, choice);
    Ok(FromPods {
        machines,
        skipped,
        text,
    })
}

fn read_pods(json: &str) -> Result<Vec<Pod>, PodsError> {
    let list: List = serde_json::from_str(json).map_err(PodsError::NotJson)?;
    let items = match (list.kind.as_str(), list.items) {
        ("List" | "PodList", Some(items)) => items,
        (kind, _) => {
            return Err(PodsError::NotAList(match kind {
                "" => "JSON document without a kind".into(),
                kind => kind.into(),
            }))
        }
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let pod: Pod = serde_json::from_value(item).map_err(PodsError::NotJson)?;
            // A PodList's items carry no kind of their own; a List's do.
            match pod.kind.as_str() {
                "Pod" | "" => Ok(pod),
                kind => Err(PodsError::NotAPod {
                    index,
                    kind: kind.into(),
                }),
            }
        })
        .collect()
}

/// "in namespace N with labels S", for errors.
fn describe(choice: &PodChoice) -> String {
    let mut what = String::new();
    if let Some(n) = &choice.namespace {
        let _ = write!(what, "in namespace {n} ");
    }
    match choice.selector.trim().is_empty() {
        true => what.push_str("(any labels)"),
        false => {
            let _ = write!(what, "with labels {}", choice.selector);
        }
    }
    what.trim_end().to_string()
}

fn pod_and_labels(pod: &Pod) -> String {
    let labels: Vec<String> = pod
        .metadata
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!(
        "{}/{} [{}]",
        pod.metadata.namespace,
        pod.metadata.name,
        labels.join(",")
    )
}

/// Why a pod cannot run a worker now, if it cannot.
fn not_running(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return Some("being deleted".into());
    }
    match pod.status.phase.as_deref() {
        Some("Running") => {}
        Some(phase) => return Some(phase.into()),
        None => return Some("no phase yet".into()),
    }
    let waiting: Vec<&str> = pod
        .status
        .container_statuses
        .iter()
        .filter(|c| !c.ready)
        .map(|c| c.name.as_str())
        .collect();
    match waiting.is_empty() {
        true => None,
        false => Some(format!(
            "Running, container {} not ready",
            waiting.join(", ")
        )),
    }
}

fn machine(pod: &Pod, choice: &PodChoice) -> Result<PodMachine, PodsError> {
    let name = &pod.metadata.name;
    let node = pod
        .spec
        .node_name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| PodsError::NoNode { pod: name.clone() })?;
    // With hostNetwork (dist/kubernetes/) the pod's IP is its node's; otherwise the pod's own
    // address is where the other pods reach it.
    let address = [&pod.status.pod_ip, &pod.status.host_ip]
        .into_iter()
        .flatten()
        .find(|a| !a.is_empty())
        .ok_or_else(|| PodsError::NoAddress { pod: name.clone() })?;
    let address = address.parse().map_err(|_| PodsError::BadAddress {
        pod: name.clone(),
        address: address.clone(),
    })?;
    let have: Vec<&str> = pod
        .spec
        .containers
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let container = match &choice.container {
        Some(wanted) if have.contains(&wanted.as_str()) => wanted.clone(),
        Some(wanted) => {
            return Err(PodsError::NoContainer {
                pod: name.clone(),
                wanted: wanted.clone(),
                have: have.join(", "),
            })
        }
        None if have.contains(&DEFAULT_CONTAINER) => DEFAULT_CONTAINER.into(),
        None if have.len() == 1 => have[0].to_string(),
        None => {
            return Err(PodsError::WhichContainer {
                pod: name.clone(),
                have: have.join(", "),
            })
        }
    };
    Ok(PodMachine {
        name: String::new(),
        namespace: pod.metadata.namespace.clone(),
        pod: name.clone(),
        node,
        container,
        address,
    })
}

/// A cluster file's machine name: 1 to 8 letters, digits, - or _ (it prefixes namespaces).
fn fits(name: &str) -> bool {
    (1..=8).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Machines are named after their nodes when every node's name fits a machine name; otherwise
/// (kind's `kind-worker2`, a cloud's `ip-10-0-1-7.ec2.internal`) all are `k1`, `k2`, ... in
/// the nodes' order, the file saying which node each is, so no two are shortened alike.
fn name_machines(machines: &mut [PodMachine]) {
    let by_node = machines.iter().all(|m| fits(&m.node));
    for (i, m) in machines.iter_mut().enumerate() {
        m.name = match by_node {
            true => m.node.clone(),
            false => format!("k{}", i + 1),
        };
    }
}

/// A TOML basic string.
fn quoted(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn cluster_text(machines: &[PodMachine], choice: &PodChoice) -> String {
    let mut text = format!(
        "# netloom's cluster file (docs/cluster.md), made by `netloom cluster from-pods`: each\n# machine is a running pod, its worker started through `kubectl exec`.\n# Pods {}.\n",
        describe(choice)
    );
    for m in machines {
        let mut launcher: Vec<&str> = choice.kubectl.iter().map(String::as_str).collect();
        launcher.extend([
            "exec",
            "-i",
            "-n",
            &m.namespace,
            &m.pod,
            "-c",
            &m.container,
            "--",
        ]);
        let launcher: Vec<String> = launcher.into_iter().map(quoted).collect();
        let _ = write!(
            text,
            "\n# pod {}/{} on node {}\n[[machine]]\nname = {}\naddress = {}\nlauncher = [{}]\n",
            m.namespace,
            m.pod,
            m.node,
            quoted(&m.name),
            quoted(&m.address.to_string()),
            launcher.join(", ")
        );
        if let Some(netloom) = &choice.netloom {
            let _ = writeln!(text, "netloom = {}", quoted(netloom));
        }
        if let Some(port) = choice.port {
            let _ = writeln!(text, "port = {port}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Cluster, GENEVE_PORT};
    use serde_json::{json, Value};

    /// kubectl's JSON of netloom's DaemonSet on kind's three workers, the third pod Pending
    /// (its container being created), with another Running pod of the namespace (app=iperf).
    const DAEMONSET: &str = include_str!("../../tests/data/pods-daemonset.json");

    fn fixture() -> Value {
        serde_json::from_str(DAEMONSET).unwrap()
    }

    fn made(list: &Value, choice: &PodChoice) -> Result<FromPods, PodsError> {
        from_pods(&list.to_string(), choice)
    }

    fn error(list: &Value, choice: &PodChoice) -> String {
        made(list, choice).unwrap_err().to_string()
    }

    /// The pod named `name` in the list.
    fn pod<'a>(list: &'a mut Value, name: &str) -> &'a mut Value {
        list["items"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|p| p["metadata"]["name"] == name)
            .unwrap()
    }

    #[test]
    fn the_running_pods_of_the_daemonset_become_machines_started_by_kubectl_exec() {
        let out = from_pods(DAEMONSET, &PodChoice::default()).unwrap();
        assert_eq!(out.skipped, ["netloom-tz4hb (Pending)"]);
        let cluster = Cluster::parse(&out.text, "pods.toml").unwrap();
        let seen: Vec<(&str, String, &[String])> = cluster
            .machines
            .iter()
            .map(|m| {
                (
                    m.name.as_str(),
                    m.address.to_string(),
                    m.launcher.as_slice(),
                )
            })
            .collect();
        let launcher = |pod: &str| {
            [
                "kubectl", "exec", "-i", "-n", "netloom", pod, "-c", "netloom", "--",
            ]
            .map(String::from)
        };
        // kind's node names are longer than a machine name: k1, k2 in the nodes' order.
        assert_eq!(
            seen,
            [
                ("k1", "172.18.0.3".into(), &launcher("netloom-5xq7d")[..]),
                ("k2", "172.18.0.4".into(), &launcher("netloom-k2m9w")[..]),
            ]
        );
        for m in &cluster.machines {
            assert_eq!(
                (m.port, m.netloom.as_str(), m.cpus),
                (GENEVE_PORT, "netloom", None)
            );
        }
        assert!(
            out.text
                .contains("# pod netloom/netloom-5xq7d on node kind-worker\n"),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains("# pod netloom/netloom-k2m9w on node kind-worker2\n"),
            "{}",
            out.text
        );
        let command = cluster.machines[1].netloom_command(&["worker"]);
        let args: Vec<_> = command.get_args().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(command.get_program(), "kubectl");
        assert_eq!(
            args,
            [
                "exec",
                "-i",
                "-n",
                "netloom",
                "netloom-k2m9w",
                "-c",
                "netloom",
                "--",
                "netloom",
                "worker"
            ]
        );
    }

    #[test]
    fn nodes_whose_names_fit_name_their_machines() {
        let mut list = fixture();
        pod(&mut list, "netloom-5xq7d")["spec"]["nodeName"] = json!("node-b");
        pod(&mut list, "netloom-k2m9w")["spec"]["nodeName"] = json!("node-a");
        let out = made(&list, &PodChoice::default()).unwrap();
        let names: Vec<(&str, &str)> = out
            .machines
            .iter()
            .map(|m| (m.name.as_str(), m.pod.as_str()))
            .collect();
        assert_eq!(
            names,
            [("node-a", "netloom-k2m9w"), ("node-b", "netloom-5xq7d")]
        );
        Cluster::parse(&out.text, "pods.toml").unwrap();
    }

    #[test]
    fn kubectl_options_and_the_netloom_program_go_into_the_file() {
        let choice = PodChoice {
            namespace: Some("netloom".into()),
            kubectl: ["kubectl", "--context", "lab \"east\""]
                .map(String::from)
                .to_vec(),
            netloom: Some("/usr/bin/netloom".into()),
            port: Some(7081),
            ..PodChoice::default()
        };
        let out = from_pods(DAEMONSET, &choice).unwrap();
        let cluster = Cluster::parse(&out.text, "pods.toml").unwrap();
        let m = &cluster.machines[0];
        assert_eq!(
            m.launcher[..4],
            ["kubectl", "--context", "lab \"east\"", "exec"]
        );
        assert_eq!(m.netloom, "/usr/bin/netloom");
        assert!(cluster.machines.iter().all(|m| m.port == 7081));
    }

    #[test]
    fn a_pod_on_a_node_without_address_or_twice_on_a_node_is_refused() {
        let mut list = fixture();
        let status = &mut pod(&mut list, "netloom-k2m9w")["status"];
        status.as_object_mut().unwrap().remove("podIP");
        status.as_object_mut().unwrap().remove("hostIP");
        assert_eq!(
            error(&list, &PodChoice::default()),
            "pod netloom-k2m9w is running but has no IP address in its status (podIP, hostIP)"
        );
        let mut list = fixture();
        let other = pod(&mut list, "netloom-k2m9w").clone();
        let pending = pod(&mut list, "netloom-tz4hb");
        pending["status"] = other["status"].clone();
        pending["spec"]["nodeName"] = json!("kind-worker");
        assert_eq!(
            error(&list, &PodChoice::default()),
            "pods netloom-5xq7d and netloom-tz4hb are both on node kind-worker: netloom's DaemonSet has one pod a node; narrow the choice with --selector or --namespace"
        );
    }

    #[test]
    fn too_few_running_pods_are_refused_saying_which_were_seen() {
        let list = fixture();
        let only = PodChoice {
            selector: "app=iperf".into(),
            ..PodChoice::default()
        };
        assert_eq!(
            error(&list, &only),
            "only one pod with labels app=iperf is running (iperf-server on node kind-worker); a cluster has at least two machines (on one node, run `netloom run` in the pod without --cluster)"
        );
        let elsewhere = PodChoice {
            namespace: Some("default".into()),
            ..PodChoice::default()
        };
        let e = error(&list, &elsewhere);
        assert!(
            e.starts_with("no pod in namespace default with labels app.kubernetes.io/name=netloom; the list has 4 pod(s): netloom/netloom-5xq7d [app.kubernetes.io/name=netloom,"),
            "{e}"
        );
        let mut list = fixture();
        pod(&mut list, "netloom-5xq7d")["metadata"]["deletionTimestamp"] =
            json!("2026-12-07T08:00:00Z");
        pod(&mut list, "netloom-k2m9w")["status"]["containerStatuses"][0]["ready"] = json!(false);
        assert_eq!(
            error(&list, &PodChoice::default()),
            "no pod with labels app.kubernetes.io/name=netloom is running: netloom-5xq7d (being deleted), netloom-k2m9w (Running, container netloom not ready), netloom-tz4hb (Pending)"
        );
    }

    #[test]
    fn the_container_is_netloom_the_only_one_or_the_one_named() {
        let mut list = fixture();
        for name in ["netloom-5xq7d", "netloom-k2m9w"] {
            pod(&mut list, name)["spec"]["containers"] =
                json!([{"name": "emu"}, {"name": "sidecar"}]);
        }
        assert_eq!(
            error(&list, &PodChoice::default()),
            "pod netloom-5xq7d has containers emu, sidecar; choose the one netloom runs in with --container"
        );
        let emu = PodChoice {
            container: Some("emu".into()),
            ..PodChoice::default()
        };
        assert!(made(&list, &emu)
            .unwrap()
            .machines
            .iter()
            .all(|m| m.container == "emu"));
        let typo = PodChoice {
            container: Some("emul".into()),
            ..PodChoice::default()
        };
        assert_eq!(
            error(&list, &typo),
            "pod netloom-5xq7d has no container \"emul\"; its containers: emu, sidecar"
        );
    }

    #[test]
    fn what_is_not_a_pod_list_is_refused_by_what_it_is() {
        let list = fixture();
        let one = list["items"][0].to_string();
        assert_eq!(
            from_pods(&one, &PodChoice::default()).unwrap_err().to_string(),
            "the input is a Pod, not a list of pods; give the output of `kubectl get pods -o json` (a List or PodList)"
        );
        let mixed = json!({"kind": "List", "items": [list["items"][0], {"kind": "DaemonSet", "metadata": {"name": "netloom"}}]});
        assert_eq!(
            error(&mixed, &PodChoice::default()),
            "item 1 of the list is a DaemonSet, not a Pod; list pods only (`kubectl get pods -o json`)"
        );
        let e = from_pods("NAME  READY  STATUS\n", &PodChoice::default())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("the input is not kubectl's JSON ("), "{e}");
        // The API's own PodList carries no kind on its items.
        let mut api = fixture();
        api["kind"] = json!("PodList");
        for item in api["items"].as_array_mut().unwrap() {
            item.as_object_mut().unwrap().remove("kind");
        }
        assert_eq!(made(&api, &PodChoice::default()).unwrap().machines.len(), 2);
    }
}
