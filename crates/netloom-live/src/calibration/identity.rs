//! Which machine a calibration belongs to (hostname, a hash of its machine id, CPU model, kernel
//! release, CPU count), and its CPUs as the calibration reports them.

use super::{Cache, Cpus};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What must match for a calibration's figures to hold on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The host name.
    pub hostname: String,
    /// SHA-256 of "netloom calibration" and /etc/machine-id (else the DMI product UUID), hex:
    /// the same machine gives the same hash, and the id itself is not written anywhere.
    pub machine_id_sha256: String,
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: String,
    /// The kernel release.
    pub kernel: String,
    /// CPUs this process may run on.
    pub cpus: usize,
}

impl Identity {
    /// This machine.
    pub fn here() -> Identity {
        let id = read("/etc/machine-id")
            .filter(|s| !s.is_empty())
            .or_else(|| read("/sys/class/dmi/id/product_uuid"))
            .unwrap_or_default();
        let mut hash = Sha256::new();
        hash.update(b"netloom calibration\0");
        hash.update(id.as_bytes());
        Identity {
            hostname: read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".to_string()),
            machine_id_sha256: hash.finalize().iter().map(|b| format!("{b:02x}")).collect(),
            cpu_model: cpu_model(),
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".to_string()),
            cpus: netloom_os::machine_cpus().0.len(),
        }
    }

    /// What differs from `here`, "field file's, here here's", in field order.
    pub fn differences(&self, here: &Identity) -> Vec<String> {
        let mut out = Vec::new();
        let mut compare = |what: &str, file: &str, here: &str| {
            if file != here {
                out.push(format!("{what} {file}, here {here}"));
            }
        };
        compare("hostname", &self.hostname, &here.hostname);
        compare(
            "machine id hash",
            &self.machine_id_sha256,
            &here.machine_id_sha256,
        );
        compare("cpu model", &self.cpu_model, &here.cpu_model);
        compare("kernel", &self.kernel, &here.kernel);
        compare("CPU count", &self.cpus.to_string(), &here.cpus.to_string());
        out
    }
}

/// A small system file, trimmed.
fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// A field of /proc/cpuinfo's first CPU.
fn cpuinfo(field: &str) -> Option<String> {
    read("/proc/cpuinfo")?
        .lines()
        .find(|l| l.split(':').next().is_some_and(|k| k.trim() == field))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn cpu_model() -> String {
    cpuinfo("model name").unwrap_or_else(|| "unknown".to_string())
}

/// This machine's CPUs: count, model, frequency, and each cache once.
pub(super) fn cpus() -> Cpus {
    let (cpus, caches) = netloom_os::machine_cpus();
    let khz = read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .and_then(|k| k.parse::<f64>().ok());
    let mhz = khz
        .map(|k| k / 1e3)
        .or_else(|| cpuinfo("cpu MHz").and_then(|m| m.parse().ok()));
    let mut unique: Vec<Cache> = Vec::new();
    for c in caches {
        let cache = Cache {
            level: c.level,
            size_bytes: c.size_bytes,
            cpus: c.cpus,
        };
        if !unique.contains(&cache) {
            unique.push(cache);
        }
    }
    unique.sort_by(|a, b| (a.level, &a.cpus).cmp(&(b.level, &b.cpus)));
    Cpus {
        count: cpus.len(),
        model: cpu_model(),
        mhz,
        caches: unique,
    }
}
