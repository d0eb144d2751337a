use super::*;
use netloom_link::LossModel;

fn parse(text: &str) -> Result<LinkSpec, SpecError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    LinkSpec::parse(&words, &[])
}

#[test]
fn the_issue_line_makes_two_20ms_pipes_of_unlimited_rate() {
    let spec = parse("client 18080@127.0.0.1 IN delay=20ms OUT delay=20ms").unwrap();
    assert_eq!(spec.selector.to_string(), "client 18080@127.0.0.1");
    let Pipes::Split {
        inbound: Some(PipeSpec { config: i, .. }),
        outbound: Some(PipeSpec { config: o, .. }),
    } = spec.pipes
    else {
        panic!("two pipes: {:?}", spec.pipes)
    };
    assert_eq!(i.delay, Duration::from_millis(20));
    assert_eq!((o.delay, o.rate), (Duration::from_millis(20), UNLIMITED));
}

#[test]
fn figure_4s_dsl_line_is_asymmetric_and_its_queue_follows_its_own_rate() {
    let spec = parse(
        "client 80,443@10.21.0.0/24 IN bw=512kbit delay=8ms OUT bw=10Mbit delay=3ms loss.model=gilbert-elliott loss.p=1% loss.r=30%",
    )
    .unwrap();
    let Pipes::Split {
        inbound: Some(PipeSpec { config: i, .. }),
        outbound: Some(PipeSpec { config: o, .. }),
    } = spec.pipes
    else {
        panic!()
    };
    assert_eq!(i.rate, Rate::bps(512_000));
    assert_eq!(o.rate, Rate::bps(10_000_000));
    // Ten 64 KB packets: more than the 512 kbit/s line's bandwidth-delay product.
    assert_eq!(i.queue, QueueLimit::Bytes(655_360));
    let long = parse("client 80@10.0.0.0/8 OUT bw=1Gbit delay=100ms").unwrap();
    let Pipes::Split {
        outbound: Some(PipeSpec { config: l, .. }),
        ..
    } = long.pipes
    else {
        panic!()
    };
    assert_eq!(l.queue, QueueLimit::default_for(l.rate, l.delay));
    assert!(matches!(o.loss, LossModel::GilbertElliott { .. }));
    assert_eq!(spec.selector.ports.len(), 2);
    assert_eq!(spec.selector.peers[0].len, 24);
}

#[test]
fn a_profile_file_sets_a_shared_pipe_and_the_words_override_it() {
    let dir = std::env::temp_dir().join(format!("netloom-shape-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("wifi.toml"),
        "wireless = \"802.11b\"\nbw = \"11Mbit\"\ndelay = \"2ms\"\n",
    )
    .unwrap();
    let words = [
        "client",
        "80@10.20.0.0/16",
        "SHARED",
        "profile=wifi",
        "delay=5ms",
    ];
    let spec = LinkSpec::parse(&words, std::slice::from_ref(&dir)).unwrap();
    let Pipes::Shared(PipeSpec { config: c, .. }) = spec.pipes else {
        panic!()
    };
    assert!(c.wireless.is_some());
    assert_eq!(c.delay, Duration::from_millis(5));
    let missing = LinkSpec::parse(
        &["server", "80", "IN", "profile=nope"],
        std::slice::from_ref(&dir),
    );
    let message = missing.unwrap_err().to_string();
    assert!(
        message.contains("nope.toml") && message.contains("no such file"),
        "{message}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A directory with the profile `cell` naming a delivery trace relative to itself, which
/// holds four opportunities in each 10 ms; removed when dropped.
struct TraceProfile(PathBuf);

impl TraceProfile {
    fn new(tag: &str, profile: &str) -> TraceProfile {
        let dir = std::env::temp_dir().join(format!("netloom-shape-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("traces")).unwrap();
        std::fs::write(dir.join("traces/up.trace"), "1\n2\n2\n10\n").unwrap();
        std::fs::write(dir.join("cell.toml"), profile).unwrap();
        TraceProfile(dir)
    }
}

impl Drop for TraceProfile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_profile_names_a_trace_relative_to_itself_and_its_mean_rate_stands_in_for_bw() {
    let dir = TraceProfile::new("trace", "trace = \"traces/up.trace\"\ndelay = \"5ms\"\n");
    // Looked up by name in a directory, and by path from elsewhere: the trace is found
    // beside the profile either way.
    let by_path = dir.0.join("cell.toml").display().to_string();
    for name in ["cell", by_path.as_str()] {
        let profile = format!("profile={name}");
        let words = ["client", "443@10.0.0.0/8", "IN", profile.as_str()];
        let spec = LinkSpec::parse(&words, std::slice::from_ref(&dir.0)).unwrap();
        let Pipes::Split {
            inbound: Some(pipe),
            ..
        } = spec.pipes
        else {
            panic!("{:?}", spec.pipes)
        };
        let trace = pipe.data.trace.expect("the profile's trace");
        assert_eq!(trace.mean_rate_bps(), 4 * 1500 * 8 * 100);
        assert_eq!(pipe.config.rate, Rate::bps(trace.mean_rate_bps()));
        assert_eq!(pipe.config.delay, Duration::from_millis(5));
    }
}

#[test]
fn a_profile_whose_data_file_cannot_be_read_is_named_with_its_key() {
    let cases = [
        (
            "trace = \"traces/missing.trace\"\n",
            "trace \"traces/missing.trace\"",
        ),
        (
            "wireless = \"802.11b\"\nbw = \"11Mbit\"\nmac_profile = \"nope.csv\"\n",
            "mac_profile \"nope.csv\"",
        ),
        ("trace = \"cell.toml\"\n", "trace \"cell.toml\""),
    ];
    for (profile, expected) in cases {
        let dir = TraceProfile::new("bad-trace", profile);
        let words = ["server", "80", "OUT", "profile=cell"];
        let message = LinkSpec::parse(&words, std::slice::from_ref(&dir.0))
            .unwrap_err()
            .to_string();
        let file = dir.0.join("cell.toml").display().to_string();
        assert!(
            message.starts_with(&format!("OUT: profile \"cell\": {file}: "))
                && message.contains(expected),
            "{message}"
        );
    }
    // Words still cannot name a data file: only a profile can, relative to itself.
    let message = parse("server 80 OUT trace=up.trace")
        .unwrap_err()
        .to_string();
    assert!(message.contains("trace names a data file"), "{message}");
}

#[test]
fn bad_words_are_refused_with_what_is_valid() {
    let cases = [
        ("clent 80@1.2.3.4 IN delay=1ms", "did you mean \"client\""),
        ("client 80 IN delay=1ms", "client PORTS@ADDRS"),
        ("client 0@1.2.3.4 IN delay=1ms", "ports are 1-65535"),
        ("client 90-80@1.2.3.4 IN delay=1ms", "backwards"),
        (
            "client 80@10.0.0.1/8 IN delay=1ms",
            "the network is 10.0.0.0/8",
        ),
        ("client 80@10.0.0.0/33 IN delay=1ms", "0 to 32"),
        ("client 80@1.2.3.4", "no pipe"),
        (
            "client 80@1.2.3.4 IN delay=1ms SHARED delay=1ms",
            "SHARED is one pipe",
        ),
        ("client 80@1.2.3.4 IN dealy=1ms", "did you mean \"delay\""),
        (
            "client 80@1.2.3.4 IN duplicate=1% aqm=fq_codel",
            "IN: duplicate: an FQ-CoDel pipe makes no copies",
        ),
        ("server 80 prot=tcp OUT delay=1ms", "did you mean \"proto\""),
    ];
    for (text, expected) in cases {
        let message = parse(text).expect_err(text).to_string();
        assert!(message.contains(expected), "{text}: {message}");
    }
}

#[test]
fn prefixes_match_their_own_family_only() {
    let p = Prefix::parse("10.20.0.0/16").unwrap();
    assert!(p.contains("10.20.3.4".parse().unwrap()));
    assert!(!p.contains("10.21.0.1".parse().unwrap()));
    assert!(!p.contains("::1".parse().unwrap()));
    let v6 = Prefix::parse("2001:db8::/32").unwrap();
    assert!(v6.contains("2001:db8::7".parse().unwrap()));
    assert!(Prefix::parse("0.0.0.0/0")
        .unwrap()
        .contains("8.8.8.8".parse().unwrap()));
}

#[test]
fn a_cgroup_is_named_by_its_path_from_the_cgroup2_mount_and_must_exist() {
    for (text, why) in [
        ("system.slice", "does not start with /"),
        ("/a//b", "empty, . or .. part"),
        ("/a/../b", "empty, . or .. part"),
        ("/a b", "blank or a quote"),
    ] {
        let words = [
            "server",
            "80",
            &format!("cgroup={text}"),
            "OUT",
            "delay=1ms",
        ];
        let e = LinkSpec::parse(&words, &[]).unwrap_err().to_string();
        assert!(e.contains(why) && e.contains("/proc/PID/cgroup"), "{e}");
    }
    let Some(mount) = netloom_os::cgroup2_mount() else {
        eprintln!("skipped: no cgroup v2 here");
        return;
    };
    let missing = parse("server 80 cgroup=/netloom-no-such-cgroup OUT delay=1ms").unwrap_err();
    assert!(
        missing.to_string().contains("no such cgroup v2")
            && missing.to_string().contains(&mount.display().to_string()),
        "{missing}"
    );
    // A file of a cgroup is not one.
    let file = parse("server 80 cgroup=/cgroup.procs OUT delay=1ms").unwrap_err();
    assert!(
        file.to_string().contains("not a cgroup v2 directory"),
        "{file}"
    );
    // The root cgroup is the mount itself; its id is its inode; IN pipes may name it too.
    let root = parse("server 80 cgroup=/ IN delay=1ms OUT delay=1ms").unwrap();
    let c = root.cgroup.expect("found");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(c.id, std::fs::metadata(&mount).unwrap().ino());
    assert_eq!(root.selector.to_string(), "server 80 cgroup=/");
}
