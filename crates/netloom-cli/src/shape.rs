//! `netloom shape`: parses the words, starts the shaping process on the first request, sends it
//! the request and prints the answer (docs/shape.md).

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_shape::daemon::{self, Netns, Reply, Request};
use netloom_shape::spec::profile_dirs;
use netloom_shape::LinkSpec;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

#[derive(Args)]
pub struct ShapeArgs {
    /// Shape the traffic of another network namespace: a name (`ip netns`) or the id of a
    /// process in it (a container's); it has a shaping process of its own.
    #[arg(long, value_name = "NAME|PID")]
    netns: Option<String>,
    /// `client|server|service PORTS[@ADDRS] [proto=..] [uid=N] [gid=N] [cgroup=PATH] IN k=v... OUT k=v...`
    /// (or `SHARED k=v...`; `set` before it is optional), `show [--json]`, `delete SELECTOR|ID`,
    /// `stop`, or `daemon [--until-empty]` (run the shaping process in the foreground).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    words: Vec<String>,
}

pub fn run(args: ShapeArgs) -> Result<()> {
    let words = args.words;
    let ns = match &args.netns {
        Some(text) => Netns::parse(text).map_err(|e| anyhow::anyhow!("--netns {e}"))?,
        None => Netns::Own,
    };
    match words[0].as_str() {
        // As a service (dist/netloom-shape.service) it runs until stopped; started by a first
        // request, until its last link is deleted.
        "daemon" => Ok(daemon::run(
            &ns,
            words[1..].iter().any(|w| w == "--until-empty"),
        )?),
        "show" => show(&ns, words[1..].iter().any(|w| w == "--json")),
        "stop" => {
            let pid = std::fs::read_to_string(ns.pid_path()).unwrap_or_default();
            let reply = call(&ns, &Request::Stop)?;
            // Returns once the process has ended (it removes its socket and pid file last).
            let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
            for _ in 0..300 {
                if pid.trim().is_empty() || !proc.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            print_message(reply)
        }
        "delete" => {
            if words.len() < 2 {
                bail!("delete takes a link's id (from `netloom shape show`) or its selector, like `delete client 443@10.0.0.0/8`");
            }
            let reply = call(
                &ns,
                &Request::Delete {
                    words: words[1..].to_vec(),
                },
            )?;
            print_message(reply)
        }
        "set" => set(&ns, &words[1..]),
        _ => set(&ns, &words),
    }
}

fn set(ns: &Netns, words: &[String]) -> Result<()> {
    let profiles = profile_dirs();
    // Checked here first, so bad input starts nothing.
    LinkSpec::parse(words, &profiles)?;
    let request = Request::Set {
        words: words.to_vec(),
        profiles,
    };
    let reply = match daemon::request(ns, &request) {
        Ok(reply) => reply,
        Err(_) if netloom_os::effective_uid() != 0 => bail!(
            "no shaping process answers on {}; root starts it: `systemctl start netloom-shape` (dist/netloom-shape.service) or `netloom shape {}daemon &`",
            ns.socket_path().display(),
            ns.args().iter().map(|a| format!("{a} ")).collect::<String>()
        ),
        Err(_) => {
            start_daemon(ns)?;
            daemon::request(ns, &request).context("the shaping process did not answer")?
        }
    };
    print_message(reply)
}

fn show(ns: &Netns, json: bool) -> Result<()> {
    // No process running means no link.
    let reply = daemon::request(ns, &Request::Show).unwrap_or_default();
    if json {
        outln!("{}", serde_json::to_string_pretty(&reply.links)?)?;
        return Ok(());
    }
    if reply.links.is_empty() {
        outln!("no link is shaped")?;
    }
    for link in &reply.links {
        outln!("link {} (uid {}): {}", link.id, link.owner, link.text)?;
        for p in &link.pipes {
            outln!(
                "  {:<6} {:>10} packets {:>14} bytes {:>8} drops   queue {} packets, {} bytes",
                p.direction,
                p.packets,
                p.bytes,
                p.drops,
                p.queue_packets,
                p.queue_bytes
            )?;
        }
    }
    // What each user's pipes hold, and what their limits (or a full queue) turned away.
    for u in &reply.users {
        outln!(
            "uid {}: holds {} packets, {} bytes ({} bytes copied); dropped over its limits {}, passed unshaped with the queue full {}",
            u.uid, u.held_packets, u.held_bytes, u.memory, u.dropped_over_limit, u.passed_when_full
        )?;
    }
    Ok(())
}

/// Sends a request to a shaping process that must be running.
fn call(ns: &Netns, request: &Request) -> Result<Reply> {
    daemon::request(ns, request).with_context(|| {
        format!(
            "no shaping process answers on {} (no link is shaped)",
            ns.socket_path().display()
        )
    })
}

fn print_message(reply: Reply) -> Result<()> {
    if let Some(error) = reply.error {
        bail!(error);
    }
    if let Some(message) = reply.message {
        outln!("{message}")?;
    }
    Ok(())
}

/// Starts `netloom shape daemon` in its own process group (so the caller's terminal signals do
/// not reach it), logging to the registry directory, and waits until it answers. It outlives
/// its launcher, so it keeps none of the launcher's descriptors beyond 0–2 (a `flock` around
/// the first request would otherwise stay held as long as the shaping process runs).
fn start_daemon(ns: &Netns) -> Result<()> {
    let dir = netloom_os::registry_dir();
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let log = std::fs::File::create(ns.log_path())?;
    let mut command = Command::new(std::env::current_exe()?);
    command
        .arg("shape")
        .args(ns.args())
        .args(["daemon", "--until-empty"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0);
    netloom_os::close_inherited_fds(&mut command);
    let mut child = command.spawn().context("start the shaping process")?;
    for _ in 0..300 {
        if daemon::request(ns, &Request::Show).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(ns.log_path()).unwrap_or_default();
            bail!("the shaping process ended ({status}): {}", log.trim());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    bail!("the shaping process did not answer within 3 s")
}
