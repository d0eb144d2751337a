//! The commands around a running experiment: `stop`, `clean`, `exec` and `shell`. Each finds
//! the experiment on its own when only one is running, or takes `--name`.

use anyhow::Result;
use clap::Args;
use std::time::Duration;

#[derive(Args)]
pub struct StopArgs {
    /// The experiment to stop (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
pub struct CleanArgs {
    /// Clean only this experiment's leftovers (default: every experiment whose process is gone).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Args)]
pub struct ExecArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// The host to run in.
    host: String,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

#[derive(Args)]
pub struct ShellArgs {
    /// The experiment (needed only when several are running).
    #[arg(long)]
    name: Option<String>,
    /// The host to open a shell in.
    host: String,
}

/// How long `stop` waits for the emulator to tear down before removing what is left itself.
const STOP_WAIT: Duration = Duration::from_secs(20);

pub fn stop(args: StopArgs) -> Result<()> {
    let record = netloom_os::stop(args.name.as_deref(), STOP_WAIT)?;
    println!("netloom: stopped experiment {}", record.name);
    Ok(())
}

pub fn clean(args: CleanArgs) -> Result<()> {
    let report = netloom_os::clean(args.name.as_deref())?;
    println!("{report}");
    Ok(())
}

/// Runs the command in the host and returns its exit code, for `main` to pass through.
pub fn exec(args: ExecArgs) -> Result<u8> {
    let (_, host) = netloom_os::find_host(args.name.as_deref(), &args.host)?;
    let status = netloom_os::exec(&host.ns, &args.command)?;
    Ok(exit_code(status))
}

pub fn shell(args: ShellArgs) -> Result<u8> {
    let (_, host) = netloom_os::find_host(args.name.as_deref(), &args.host)?;
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into());
    let status = netloom_os::exec(&host.ns, &[shell])?;
    Ok(exit_code(status))
}

/// A child's exit code, or 128 + signal as shells report a child killed by a signal.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => (128 + signal) as u8,
        (None, None) => 1,
    }
}
