//! An `Experiment` through the library alone, as a client other than the CLI would use it (root,
//! namespaces, TUN; skipped, saying why, elsewhere): it starts from a `Plan`, a subscriber sees
//! it start, change and stop, typed calls, the `Run` traits (its own view, the control-socket
//! client) and the control socket answer the same, a program runs in a host through it, and
//! stopping leaves nothing behind.

use crate::common::{live_registry, unavailable};
use netloom_link::PipeConfig;
use netloom_live::protocol::{call, socket_path};
use netloom_live::{
    Client, Direction, Ending, Event, Experiment, LiveError, Options, Plan, Request, Run, RunView,
};
use netloom_time::{Duration, Rate};
use netloom_topo::{NodeKind, RoutingMetric, Topology};

/// h1 - h2 over one 1 Gbit/s link of 1 ms.
fn two_hosts() -> Topology {
    let mut t = Topology::new("two", RoutingMetric::Delay);
    let h1 = t.add_node("h1", NodeKind::Host, None);
    let h2 = t.add_node("h2", NodeKind::Host, None);
    let c = PipeConfig::new(Rate::bps(1_000_000_000), Duration::from_millis(1));
    t.add_link(h1, h2, None, c, Some(c));
    t
}

/// The subscription's next event but accuracy alarms (a late release on a busy machine raises
/// one between any two others), within 5 s.
fn next_event(
    events: &netloom_live::Subscription,
) -> Result<Event, std::sync::mpsc::RecvTimeoutError> {
    loop {
        match events
            .events()
            .recv_timeout(std::time::Duration::from_secs(5))?
        {
            Event::AccuracyAlarm { .. } => continue,
            event => return Ok(event),
        }
    }
}

#[test]
fn an_experiment_runs_observed_changed_and_stopped_through_the_library() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: needs root and TUN: {why}");
        return;
    }
    let registry = live_registry("lib");
    let run_dir = &registry.dir;
    let name = format!("lib{}", std::process::id() % 100_000);
    let plan = Plan::new(two_hosts(), Options::new(&name), 2).unwrap();
    let experiment = Experiment::start(plan).unwrap();
    let events = experiment.subscribe();
    assert!(matches!(
        events.events().try_recv(),
        Ok(Event::Started {
            hosts: 2,
            workers: 1,
            ..
        })
    ));

    // A program in a host, through the experiment, over the emulated link.
    let ping = ["ping", "-c", "2", "-i", "0.1", "h2"].map(String::from);
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v ping"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        let out = experiment.command("h1", &ping).unwrap().output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    assert!(matches!(
        experiment.command("h3", &ping),
        Err(LiveError::UnknownHost { .. })
    ));

    // A typed change, seen by the subscriber; the same figures typed and over the socket.
    let mut set = serde_json::Map::new();
    set.insert("delay".into(), "5ms".into());
    let change = experiment
        .link_set("h1", "h2", Direction::Both, &set)
        .unwrap();
    assert_eq!(change.link, "h1-h2");
    match next_event(&events) {
        Ok(Event::LinkChanged(seen)) => assert_eq!(seen, change),
        other => panic!("expected the change, got {other:?}"),
    }
    let typed = experiment.stats().unwrap();
    let socket = socket_path(run_dir, &name);
    let wire = call(&socket, &Request::Stats, std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(wire["experiment"], typed.experiment);
    assert_eq!(wire["pipes"].as_array().unwrap().len(), typed.pipes.len());
    let info = call(&socket, &Request::Info, std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(info["hosts"][1]["name"], "h2");
    assert_eq!(info["protocol"], 1);

    // Through the `Run` traits: the control-socket client and the run's own view answer as the
    // run does, and their changes reach the subscriber.
    let client = Client::new(socket.clone());
    assert_eq!(&client.info().unwrap(), experiment.info());
    let down = client.link_state("h1", "h2", false).unwrap();
    assert_eq!(down.up, Some(false));
    let view = Run::view(&experiment);
    let up = view.link_state("h1", "h2", true).unwrap();
    for (change, is_up) in [(down, false), (up, true)] {
        match next_event(&events) {
            Ok(Event::LinkChanged(seen)) => assert_eq!(seen, change),
            other => panic!("expected the change, got {other:?}"),
        }
        match next_event(&events) {
            Ok(Event::RoutesRecomputed { up, .. }) => assert_eq!(up, is_up),
            other => panic!("expected the routes, got {other:?}"),
        }
    }
    assert!(matches!(
        client.link_set("h1", "h9", Direction::Both, &set),
        Err(netloom_live::RunError::Call { .. })
    ));

    let run: Box<dyn Run> = Box::new(experiment);
    let report = run.stop(&Ending::Done).unwrap();
    assert!(report.accuracy.physical_drops == 0);
    match next_event(&events) {
        Ok(Event::Stopped { reason, .. }) => assert_eq!(reason, "done"),
        other => panic!("expected the stop, got {other:?}"),
    }
    assert!(!socket.exists(), "the control socket is gone");
    // A view that outlived the run says so; a subscription is refused, not silent for ever.
    assert!(view.stats().is_err());
    let late = view.subscribe().expect_err("the run stopped");
    assert_eq!(late.to_string(), "the emulator has stopped");
    assert!(client.subscribe().is_err(), "no socket any more");
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    assert!(!namespaces.contains(&name), "left behind: {namespaces}");
    let left: Vec<_> = std::fs::read_dir(run_dir).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in the registry: {left:?}");
}
