//! Out-of-range MTUs given to the binary, in a topology file (TOML and JSON, `check`, `sim` and
//! `run`) or as `run --mtu`: each is refused with exit code 2 and one error naming the file, the
//! line, the link and the valid range, before anything is made.

use crate::common::{run_in, TempDir};

/// h1 - r1 - h2; the r1-h2 link's table starts on line 12 and its `mtu` is on line 15.
fn chain(mtu: &str) -> String {
    format!(
        "hosts = [\"h1\", \"h2\"]\nrouters = [\"r1\"]\n\n[defaults]\nbw = \"10Mbit\"\ndelay = \"1ms\"\n\n\
         [[link]]\na = \"h1\"\nb = \"r1\"\n\n[[link]]\na = \"r1\"\nb = \"h2\"\nmtu = {mtu}\n"
    )
}

/// What `netloom args...` says on standard error, after checking it exits with 2 and says one
/// thing (one line).
fn refused(dir: &TempDir, args: &[&str]) -> String {
    let out = run_in(Some(dir.path()), args).expect_code(2);
    assert_eq!(out.stdout, "", "{args:?}");
    assert_eq!(out.stderr.trim_end().lines().count(), 1, "{}", out.stderr);
    out.stderr
}

#[test]
fn a_link_mtu_out_of_range_is_one_error_with_the_link_line_and_range() {
    let dir = TempDir::new("bad-mtu");
    let range = "write a number of bytes from 1280 to 65535 (Ethernet's is 1500)";
    for (mtu, why) in [
        (
            "1279",
            "mtu 1279 is too small: every link carries IPv6 (each host has an IPv6 address), which needs at least 1280",
        ),
        (
            "67",
            "mtu 67 is below 68, the smallest MTU IPv4 allows, and every link carries IPv6",
        ),
        ("0", "mtu 0 is below 68"),
        (
            "65536",
            "mtu 65536 is above 65535, the largest IP packet and TUN device MTU",
        ),
        ("100000000000", "mtu 100000000000 is above 65535"),
    ] {
        dir.write("t.toml", &chain(mtu));
        for args in [
            &["check", "t.toml"][..],
            &["sim", "t.toml", "--traffic", "pattern=random-k k=1"],
        ] {
            let err = refused(&dir, args);
            assert!(
                err.starts_with(&format!("netloom: t.toml:15: link r1-h2: {why}")),
                "{args:?} mtu={mtu}: {err}"
            );
            assert!(err.contains(range), "{err}");
        }
    }
}

#[test]
fn a_json_file_is_located_the_same_way() {
    let dir = TempDir::new("bad-mtu-json");
    dir.write(
        "t.json",
        "{\n  \"hosts\": [\"h1\", \"h2\"],\n  \"link\": [\n    { \"a\": \"h1\", \"b\": \"h2\", \"bw\": \"1Gbit\", \"delay\": \"1ms\",\n      \"a_to_b\": { \"mtu\": 576 } }\n  ]\n}\n",
    );
    let err = refused(&dir, &["check", "t.json"]);
    assert!(
        err.starts_with("netloom: t.json:5: link h1-h2: a_to_b.mtu 576 is too small"),
        "{err}"
    );
}

#[test]
fn a_wrongly_typed_mtu_says_what_to_write() {
    let dir = TempDir::new("bad-mtu-type");
    dir.write("t.toml", &chain("\"9k\""));
    let err = refused(&dir, &["check", "t.toml"]);
    assert!(
        err.contains("t.toml:15: link r1-h2: mtu must be a whole number, not the string \"9k\""),
        "{err}"
    );
}

/// `run` refuses a bad file or flag before it needs root or makes anything: the error comes
/// from the loader or the flag parser, and no experiment of this name is left registered.
#[test]
fn run_refuses_a_bad_mtu_in_the_file_or_the_flag_before_making_anything() {
    let dir = TempDir::new("bad-mtu-run");
    dir.write("bad.toml", &chain("1000"));
    let err = refused(
        &dir,
        &[
            "run",
            "bad.toml",
            "--name",
            "i-mtu-bad-file",
            "--duration",
            "1s",
        ],
    );
    assert!(
        err.contains("bad.toml:15: link r1-h2: mtu 1000 is too small"),
        "{err}"
    );
    dir.write("good.toml", &chain("1500"));
    for flag in ["--mtu=1000", "--mtu=65536", "--mtu=-1"] {
        let out = run_in(
            Some(dir.path()),
            &[
                "run",
                "good.toml",
                "--name",
                "i-mtu-bad-flag",
                "--duration",
                "1s",
                flag,
            ],
        )
        .expect_code(2);
        assert!(out.stderr.contains("--mtu"), "{}", out.stderr);
        assert!(
            out.stderr.contains("1280..=65535") || out.stderr.contains("invalid digit"),
            "{}",
            out.stderr
        );
    }
    for name in ["i-mtu-bad-file", "i-mtu-bad-flag"] {
        assert!(!std::path::Path::new("/run/netloom").join(name).exists());
        assert!(!std::path::Path::new("/run/netns")
            .join(format!("nl-{name}-h1"))
            .exists());
    }
}
