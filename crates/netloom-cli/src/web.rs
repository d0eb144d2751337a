//! `netloom web`, and the `--metrics` and `--web` servers of `netloom run`: binds the addresses
//! (one server when both are the same), serves them from one `netloom_live::RunView` whose
//! snapshots they share, off the workers' CPUs, and prints where, with the token that changes
//! need, and at the end what the servers refused. Glue only: the server is netloom-web's.

use anyhow::{Context, Result};
use clap::Args;
use netloom_live::protocol::{call, socket_path};
use netloom_live::{Client, Request, RunError, RunView, SharedView, Subscription};
use netloom_web::{Bound, Routes, Snapshots, WebServer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Args)]
pub struct WebArgs {
    /// The experiment (needed only when several are running).
    #[arg(long, conflicts_with = "report")]
    name: Option<String>,
    /// Where to serve the page: HOST:PORT, or a port alone for localhost.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    listen: String,
    /// Show this `netloom sim --json` report instead of a running experiment.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

/// A bound address and what it will serve.
pub struct Listener {
    bound: Bound,
    routes: Routes,
}

/// Binds `--metrics` and `--web` (one listener when they are the same address).
pub fn bind(metrics: Option<&str>, web: Option<&str>) -> Result<Vec<Listener>> {
    let web_routes = || -> Result<Routes> {
        Ok(Routes {
            web: Some(netloom_web::token().context("making the web view's token")?),
            ..Routes::default()
        })
    };
    let mut listeners = Vec::new();
    if let Some(addr) = metrics {
        let bound = Bound::bind(addr).context("--metrics")?;
        let mut routes = Routes {
            metrics: true,
            ..Routes::default()
        };
        if web == Some(addr) {
            routes.web = web_routes()?.web;
        }
        listeners.push(Listener { bound, routes });
    }
    if let Some(addr) = web.filter(|&w| Some(w) != metrics) {
        let bound = Bound::bind(addr).context("--web")?;
        listeners.push(Listener {
            bound,
            routes: web_routes()?,
        });
    }
    Ok(listeners)
}

/// Serves every listener from `source` (one snapshot shared by all their readers for
/// `SNAPSHOT_EVERY`), their threads off `worker_cpus`, and says where.
pub fn serve(
    listeners: Vec<Listener>,
    source: SharedView,
    worker_cpus: &[usize],
) -> Result<Vec<WebServer>> {
    let source: SharedView = Arc::new(Snapshots::new(
        source,
        netloom_time::SystemClock::start(),
        netloom_web::SNAPSHOT_EVERY,
    ));
    listeners
        .into_iter()
        .map(|Listener { bound, routes }| {
            let addr = bound.addr();
            if routes.metrics {
                crate::stdout::say(format_args!("netloom: metrics at http://{addr}/metrics"));
            }
            if let Some(token) = &routes.web {
                crate::stdout::say(format_args!(
                    "netloom: web view at http://{addr}/?token={token} (changes need the token)"
                ));
            }
            bound
                .serve(source.clone(), routes, worker_cpus)
                .context("starting the HTTP server's threads")
        })
        .collect()
}

/// Stops the servers, saying what each closed unserved (the connection cap, timeouts,
/// malformed or misdirected requests), if anything.
pub fn stop(servers: Vec<WebServer>) {
    for server in servers {
        let (addr, count) = (server.addr(), server.count());
        drop(server);
        if let Some(sentence) = count.sentence() {
            crate::stdout::say(format_args!("netloom: http://{addr}/: {sentence}"));
        }
    }
}

/// How often `netloom web` looks whether it was interrupted or the run ended.
const LOOK: Duration = Duration::from_millis(200);

pub fn run(args: WebArgs) -> Result<()> {
    let (source, routes, watched): (SharedView, Routes, Option<PathBuf>) = match &args.report {
        Some(file) => {
            let text = netloom_topo::read::read_text(file, netloom_topo::read::SIM_REPORT)
                .with_context(|| format!("reading {}", file.display()))?;
            let json: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", file.display()))?;
            if json.get("flows").is_none() || json.get("pipes").is_none() {
                anyhow::bail!(
                    "{}: not a `netloom sim --json` report (it has no \"flows\" and \"pipes\")",
                    file.display()
                );
            }
            let routes = Routes {
                report: Some(text),
                ..Routes::default()
            };
            (Arc::new(NoRun), routes, None)
        }
        None => {
            let record = crate::live::target(args.name.as_deref())?;
            let path = socket_path(&netloom_os::registry_dir(), &record.name);
            // Answering, or refused here with nothing started.
            call(&path, &Request::Info, crate::live::REPLY_WAIT)
                .with_context(|| format!("experiment {} ({})", record.name, path.display()))?;
            let routes = Routes {
                web: Some(netloom_web::token().context("making the web view's token")?),
                ..Routes::default()
            };
            (Arc::new(Client::new(path.clone())), routes, Some(path))
        }
    };
    let bound = Bound::bind(&args.listen).context("--listen")?;
    let signal = netloom_os::install_stop_handler()?;
    // The run's workers are in another process: nothing here to keep off.
    let servers = serve(vec![Listener { bound, routes }], source, &[])?;
    let mut said = Ok(());
    while !signal.load(std::sync::atomic::Ordering::Relaxed) {
        if watched.as_ref().is_some_and(|path| !path.exists()) {
            // Its error is returned once the servers have stopped.
            said = outln!("netloom: the experiment has stopped");
            break;
        }
        std::thread::sleep(LOOK);
    }
    stop(servers);
    said
}

/// What a report viewer serves: there is no run to read, change or follow.
struct NoRun;

impl RunView for NoRun {
    fn info(&self) -> Result<netloom_live::RunInfo, RunError> {
        Err(RunError::NoRun)
    }

    fn stats(&self) -> Result<netloom_live::Report, RunError> {
        Err(RunError::NoRun)
    }

    fn link_set(
        &self,
        _: &str,
        _: &str,
        _: netloom_live::Direction,
        _: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<netloom_live::LinkChange, RunError> {
        Err(RunError::NoRun)
    }

    fn link_state(&self, _: &str, _: &str, _: bool) -> Result<netloom_live::LinkChange, RunError> {
        Err(RunError::NoRun)
    }

    fn subscribe(&self) -> Result<Subscription, RunError> {
        Err(RunError::NoRun)
    }
}
