//! The machine a report was measured on: CPU, cores, kernel, compiler, date, build profile and
//! source revision.

use serde::Serialize;
use std::process::Command;

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
    /// `rustc --version` of the toolchain on PATH.
    pub rustc: String,
    pub date: String,
    /// "release" or "debug": debug builds are an order of magnitude slower.
    pub build: &'static str,
    /// `git describe --always --dirty` of the working tree the benchmark was run from.
    pub revision: String,
    /// 1-, 5- and 15-minute load averages when the run started: other work skews the figures.
    pub load_average: String,
}

pub fn detect() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string());
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: output("uname", &["-r"]),
        rustc: output("rustc", &["--version"]),
        date: output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        revision: output("git", &["describe", "--always", "--dirty"]),
        load_average: std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".to_string()),
    }
}

/// The trimmed standard output of a command, or "unknown".
fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

impl Machine {
    pub fn markdown(&self, command: &str) -> String {
        format!(
            "- machine: {}, {} cores (`nproc`), kernel {}, load average {} at start\n\
             - toolchain: {}, {} build\n- source: {}\n- date: {}\n- command: `{command}`\n",
            self.cpu,
            self.cores,
            self.kernel,
            self.load_average,
            self.rustc,
            self.build,
            self.revision,
            self.date
        )
    }
}
