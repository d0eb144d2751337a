//! Helpers shared by the CLI's integration tests: the built binary, the repository root, scratch
//! directories that clean up after themselves, and JSON key trees.

#![allow(dead_code)] // the offline binary and sim_mpi each use their own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The `netloom` binary cargo built for these tests.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_netloom")
}

/// The repository root (where `examples/` and `docs/` live).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// A file under the repository root.
pub fn repo_file(rel: &str) -> PathBuf {
    repo_root().join(rel)
}

/// A fresh directory under the system temp dir, removed (with its contents) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "netloom-cli-test-{label}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `text` to `name` inside the directory and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).expect("write temp file");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a run of the binary gave.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The command line, for failure messages.
    pub cmd: String,
}

impl Run {
    /// Panics with the full output unless the exit code is `code`.
    pub fn expect_code(self, code: i32) -> Run {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` exited with {:?}, expected {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.cmd,
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }

    pub fn ok(self) -> Run {
        self.expect_code(0)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "`{}` printed no valid JSON ({e}):\n{}",
                self.cmd, self.stdout
            )
        })
    }
}

/// Runs the binary with `args` in `dir` (the repository root if `None`), stdin closed and
/// stdout and stderr captured (so both are pipes, not terminals).
pub fn run_in<S: AsRef<std::ffi::OsStr>>(dir: Option<&Path>, args: &[S]) -> Run {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir.map_or_else(repo_root, Path::to_path_buf))
        .stdin(Stdio::null());
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run netloom");
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        cmd: std::iter::once("netloom".to_string())
            .chain(
                args.iter()
                    .map(|a| a.as_ref().to_string_lossy().into_owned()),
            )
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Runs the binary with `args` from the repository root.
pub fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    run_in(None, args)
}

/// The key tree of a JSON value: every object key path, arrays described by their first element
/// (`flows[].src`). Scalars and `null` are leaves; an empty array is the leaf `path[]`.
pub fn key_paths(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    out.insert(p.clone());
                    walk(v, &p, out);
                }
            }
            serde_json::Value::Array(items) => {
                let p = format!("{prefix}[]");
                if let Some(first) = items.first() {
                    walk(first, &p, out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(v, "", &mut out);
    out
}
