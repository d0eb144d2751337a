//! `netloom cluster`: commands that write a cluster file for `run --cluster` and `sim --cluster`
//! (docs/cluster.md); `from-pods` makes one from Kubernetes pods. Glue only: the reading is
//! netloom-live's `cluster::from_pods`.

use crate::stdout::say;
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use netloom_live::cluster::{from_pods, PodChoice, DEFAULT_SELECTOR};
use std::io::{IsTerminal, Read};
use std::path::PathBuf;

#[derive(Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Subcommand)]
enum ClusterCommand {
    /// Write a cluster file whose machines are the running pods of netloom's DaemonSet
    /// (dist/kubernetes/), from `kubectl get pods -o json`; each worker is started with
    /// `kubectl exec -i`: `kubectl get pods -n netloom -o json | netloom cluster from-pods -o
    /// cluster.toml`.
    FromPods(FromPodsArgs),
}

#[derive(Args)]
struct FromPodsArgs {
    /// The output of `kubectl get pods -o json`; `-`: standard input.
    #[arg(default_value = "-")]
    input: PathBuf,
    /// Only pods of this namespace (when the list is of every namespace, `get pods -A`).
    #[arg(short, long)]
    namespace: Option<String>,
    /// The pods' labels, as `kubectl get -l` takes them (key=value, key!=value, key, !key,
    /// joined by commas); "" takes every pod.
    #[arg(short = 'l', long, default_value = DEFAULT_SELECTOR)]
    selector: String,
    /// The container the worker runs in [default: `netloom`, or a pod's only container].
    #[arg(short, long)]
    container: Option<String>,
    /// The kubectl program the launchers run.
    #[arg(long, default_value = "kubectl")]
    kubectl: String,
    /// kubectl's context for the launchers (`kubectl --context NAME exec ...`).
    #[arg(long)]
    context: Option<String>,
    /// kubectl's configuration file for the launchers (`kubectl --kubeconfig FILE exec ...`).
    #[arg(long)]
    kubeconfig: Option<String>,
    /// The netloom program in the container, if not `netloom` on its PATH.
    #[arg(long)]
    netloom: Option<String>,
    /// The machines' hand-off port (UDP), if not 6081: where the cluster's own network uses
    /// GENEVE on 6081 (Antrea, OVN-Kubernetes).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    port: Option<u16>,
    /// Write the cluster file here instead of to standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub fn run(args: ClusterArgs) -> Result<()> {
    match args.command {
        ClusterCommand::FromPods(args) => pods(args),
    }
}

fn pods(args: FromPodsArgs) -> Result<()> {
    let from_stdin = args.input.as_os_str() == "-";
    // kubectl writes about 8 KB a pod: the limit of a JSON input file is 8,000 pods.
    let limit = netloom_topo::read::SIDE_JSON.limit;
    let json = match from_stdin {
        true => {
            if std::io::stdin().is_terminal() {
                bail!("cluster from-pods reads `kubectl get pods -o json` on standard input: pipe it in (kubectl get pods -n netloom -o json | netloom cluster from-pods) or name a file");
            }
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(limit + 1)
                .read_to_end(&mut bytes)
                .context("reading standard input")?;
            if bytes.len() as u64 > limit {
                bail!(
                    "standard input: more than {} MiB, the most read of a JSON input file",
                    limit >> 20
                );
            }
            String::from_utf8(bytes).context("standard input is not UTF-8 text")?
        }
        false => netloom_topo::read::read_text(&args.input, netloom_topo::read::SIDE_JSON)
            .with_context(|| args.input.display().to_string())?,
    };
    let mut kubectl = vec![args.kubectl];
    if let Some(context) = args.context {
        kubectl.extend(["--context".into(), context]);
    }
    if let Some(file) = args.kubeconfig {
        kubectl.extend(["--kubeconfig".into(), file]);
    }
    let choice = PodChoice {
        namespace: args.namespace,
        selector: args.selector,
        container: args.container,
        kubectl,
        netloom: args.netloom,
        port: args.port,
    };
    let source = match from_stdin {
        true => "standard input".to_string(),
        false => args.input.display().to_string(),
    };
    let made = from_pods(&json, &choice).with_context(|| source.clone())?;
    match &args.output {
        Some(path) => std::fs::write(path, &made.text)
            .with_context(|| format!("writing {}", path.display()))?,
        None => out!("{}", made.text)?,
    }
    for m in &made.machines {
        say(format_args!(
            "netloom: machine {}: pod {}/{} on node {} at {}",
            m.name, m.namespace, m.pod, m.node, m.address
        ));
    }
    if !made.skipped.is_empty() {
        say(format_args!(
            "netloom: left out (not running): {}",
            made.skipped.join(", ")
        ));
    }
    Ok(())
}
