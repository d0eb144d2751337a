//! SSH servers with throwaway keys on a lab's nodes, for workers started over SSH: one sshd on
//! each node's address (the last in a network namespace of its own, if given), and the command
//! line that logs in to one, from this namespace or a given one; stopped on drop.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The servers, and the key that logs in to them.
pub struct Servers {
    children: Vec<Child>,
    key: PathBuf,
    port: u16,
    /// The network namespace the clients run in (`None`: this one).
    clients: Option<String>,
    /// sshd's privilege separation directory, made for it and removed after.
    made_run_dir: bool,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for mut child in self.children.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        if self.made_run_dir {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

impl Servers {
    /// An sshd at each of `addresses` (the last in network namespace `netns`, if given), with
    /// keys made in `dir`, on a port of their own; waits until each lets the key in.
    pub fn new(dir: &Path, addresses: &[String], netns: Option<&str>) -> Servers {
        Servers::for_clients_in(dir, addresses, netns, None)
    }

    /// As `new`, for clients in network namespace `clients` (`None`: this one): `ssh` runs
    /// there, so the addresses need only be reachable from there.
    pub fn for_clients_in(
        dir: &Path,
        addresses: &[String],
        netns: Option<&str>,
        clients: Option<&str>,
    ) -> Servers {
        let keygen = |name: &str| {
            let path = dir.join(name);
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(&path)
                .status()
                .unwrap();
            assert!(made.success());
            path
        };
        let (host_key, key) = (keygen("ssh_host_key"), keygen("ssh_id"));
        let authorized = dir.join("ssh_authorized_keys");
        std::fs::copy(key.with_extension("pub"), &authorized).unwrap();
        let port = std::net::TcpListener::bind(("0.0.0.0", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut servers = Servers {
            children: Vec::new(),
            key,
            port,
            clients: clients.map(String::from),
            made_run_dir: std::fs::create_dir("/run/sshd").is_ok(),
        };
        for (k, address) in addresses.iter().enumerate() {
            let mut command = match (k + 1 == addresses.len(), netns) {
                (true, Some(ns)) => {
                    let mut c = Command::new("nsenter");
                    c.arg(format!("--net=/run/netns/{ns}")).arg("--");
                    c.arg("/usr/sbin/sshd");
                    c
                }
                _ => Command::new("/usr/sbin/sshd"),
            };
            command.args(["-D", "-e", "-f", "/dev/null"]);
            for option in [
                format!("HostKey={}", host_key.display()),
                format!("AuthorizedKeysFile={}", authorized.display()),
                format!("ListenAddress={address}:{port}"),
                "PidFile=none".into(),
                "StrictModes=no".into(),
                "UsePAM=no".into(),
                "PermitRootLogin=prohibit-password".into(),
            ] {
                command.args(["-o", &option]);
            }
            command.stdout(Stdio::null()).stderr(Stdio::null());
            servers.children.push(command.spawn().unwrap());
        }
        for address in addresses {
            let ssh = servers.ssh(address);
            let give_up = Instant::now() + Duration::from_secs(10);
            // Quietly: "connection refused" is expected until the server listens.
            while !Command::new(&ssh[0])
                .args(&ssh[1..])
                .arg("true")
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success()
            {
                assert!(
                    Instant::now() < give_up,
                    "sshd at {address} does not answer"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        servers
    }

    /// The port every server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// SSH to root at `address` with the key, from the clients' namespace, as a command line
    /// (a launcher).
    pub fn ssh(&self, address: &str) -> Vec<String> {
        let mut argv = Vec::new();
        if let Some(ns) = &self.clients {
            argv.extend([
                "nsenter".into(),
                format!("--net=/run/netns/{ns}"),
                "--".into(),
            ]);
        }
        argv.extend([
            "ssh".to_string(),
            "-i".into(),
            self.key.display().to_string(),
            "-p".into(),
            self.port.to_string(),
        ]);
        for option in [
            "StrictHostKeyChecking=no",
            "UserKnownHostsFile=/dev/null",
            "BatchMode=yes",
            "ConnectTimeout=3",
            "LogLevel=ERROR",
        ] {
            argv.extend(["-o".into(), option.into()]);
        }
        argv.push(format!("root@{address}"));
        argv
    }
}
