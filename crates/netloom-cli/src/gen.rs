//! `netloom gen KIND [options] -o FILE`: maps command-line flags onto the generators' parameters
//! and writes the topology file (TOML, or JSON for a .json name).

use anyhow::{bail, Context, Result};
use clap::Args;
use netloom_topo::gen::{self, GenKind, LinkClass};
use netloom_topo::Format;
use std::path::PathBuf;

#[derive(Args)]
pub struct GenArgs {
    /// chain, star, ring, mesh, dumbbell, fishbone, tree-mesh or inet.
    kind: String,
    /// Output file (.toml or .json); standard output (TOML) if omitted.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Routers (chain, ring, mesh, fishbone; inet: all routers, transit and stub).
    #[arg(long)]
    routers: Option<usize>,
    /// Hosts (star, inet).
    #[arg(long)]
    hosts: Option<usize>,
    /// Hosts per router (ring, mesh), per side (dumbbell), per spur (fishbone), per leaf (tree-mesh).
    #[arg(long)]
    hosts_per: Option<usize>,
    /// Trees hanging off the meshed core (tree-mesh).
    #[arg(long)]
    trees: Option<usize>,
    /// Children per tree node (tree-mesh).
    #[arg(long)]
    arity: Option<usize>,
    /// Tree height (tree-mesh: the paper's h2 and h5).
    #[arg(long)]
    height: Option<usize>,
    /// Stub routers (inet).
    #[arg(long)]
    stubs: Option<usize>,
    /// Random seed (inet).
    #[arg(long)]
    seed: Option<u64>,
    /// Set a link class, e.g. `--class access=10Mbit/1ms`; repeatable. Classes per kind:
    /// chain, ring, mesh, fishbone: access, backbone; star: access; dumbbell: access, bottleneck;
    /// tree-mesh: core, tree, last-mile; inet: client-stub, stub-stub, stub-transit, transit-transit
    /// (which replaces inet's per-link random transit delays).
    #[arg(long = "class", value_name = "NAME=BW/DELAY")]
    classes: Vec<String>,
}

/// The flags `args` sets, by name, so that flags a kind does not take can be refused by name.
fn given(args: &GenArgs) -> Vec<&'static str> {
    let mut v = Vec::new();
    let flags: [(&'static str, bool); 8] = [
        ("--routers", args.routers.is_some()),
        ("--hosts", args.hosts.is_some()),
        ("--hosts-per", args.hosts_per.is_some()),
        ("--trees", args.trees.is_some()),
        ("--arity", args.arity.is_some()),
        ("--height", args.height.is_some()),
        ("--stubs", args.stubs.is_some()),
        ("--seed", args.seed.is_some()),
    ];
    for (name, set) in flags {
        if set {
            v.push(name);
        }
    }
    v
}

pub fn run(args: GenArgs) -> Result<()> {
    // The name says the format; anything else would be TOML under a name that says otherwise.
    let format = args.output.as_deref().map(|path| {
        Format::from_path(path).with_context(|| {
            format!(
                "-o {}: the output name must end in .toml or .json",
                path.display()
            )
        })
    });
    let format = format.transpose()?;
    let Some(mut kind) = GenKind::with_defaults(&args.kind) else {
        bail!(
            "unknown topology kind {:?}; valid kinds: {}",
            args.kind,
            GenKind::NAMES.join(", ")
        );
    };
    let accepted = apply(&mut kind, &args)?;
    if let Some(flag) = given(&args).into_iter().find(|f| !accepted.contains(f)) {
        bail!(
            "gen {}: {flag} does not apply; this kind takes {}",
            args.kind,
            if accepted.is_empty() {
                "no size flags".to_string()
            } else {
                accepted.join(", ")
            }
        );
    }
    let file = gen::generate(&kind)?;
    // Validate what we are about to write, so a bad --class never produces a broken file.
    let label = args
        .output
        .as_ref()
        .map_or("<generated>".to_string(), |p| p.display().to_string());
    netloom_topo::resolve(&file, &label)?;
    match &args.output {
        Some(path) => {
            let text = match format {
                Some(Format::Json) => netloom_topo::write::to_json(&file),
                _ => netloom_topo::write::to_toml(&file),
            };
            netloom_os::write_output(path, text.as_bytes()).context("-o")?;
            eprintln!(
                "wrote {}: {} hosts, {} routers, {} links",
                path.display(),
                file.hosts.len(),
                file.routers.len(),
                file.links.len()
            );
        }
        None => out!("{}", netloom_topo::write::to_toml(&file))?,
    }
    Ok(())
}

/// Applies the flags to the kind's parameters; returns the size flags this kind accepts.
fn apply(kind: &mut GenKind, args: &GenArgs) -> Result<Vec<&'static str>> {
    fn set<T: Copy>(field: &mut T, v: Option<T>) {
        if let Some(v) = v {
            *field = v;
        }
    }
    let mut classes: Vec<(&str, &mut LinkClass)> = Vec::new();
    let accepted: Vec<&'static str> = match kind {
        GenKind::Chain(p) => {
            set(&mut p.routers, args.routers);
            classes.extend([("access", &mut p.access), ("backbone", &mut p.backbone)]);
            vec!["--routers"]
        }
        GenKind::Star(p) => {
            set(&mut p.hosts, args.hosts);
            classes.push(("access", &mut p.access));
            vec!["--hosts"]
        }
        GenKind::Ring(p) => {
            set(&mut p.routers, args.routers);
            set(&mut p.hosts_per_router, args.hosts_per);
            classes.extend([("access", &mut p.access), ("backbone", &mut p.backbone)]);
            vec!["--routers", "--hosts-per"]
        }
        GenKind::Mesh(p) => {
            set(&mut p.routers, args.routers);
            set(&mut p.hosts_per_router, args.hosts_per);
            classes.extend([("access", &mut p.access), ("backbone", &mut p.backbone)]);
            vec!["--routers", "--hosts-per"]
        }
        GenKind::Dumbbell(p) => {
            set(&mut p.hosts_per_side, args.hosts_per);
            classes.extend([("access", &mut p.access), ("bottleneck", &mut p.bottleneck)]);
            vec!["--hosts-per"]
        }
        GenKind::Fishbone(p) => {
            set(&mut p.routers, args.routers);
            set(&mut p.hosts_per_spur, args.hosts_per);
            classes.extend([("access", &mut p.access), ("backbone", &mut p.backbone)]);
            vec!["--routers", "--hosts-per"]
        }
        GenKind::TreeMesh(p) => {
            set(&mut p.trees, args.trees);
            set(&mut p.arity, args.arity);
            set(&mut p.height, args.height);
            set(&mut p.hosts_per_leaf, args.hosts_per);
            classes.extend([
                ("core", &mut p.core),
                ("tree", &mut p.tree),
                ("last-mile", &mut p.last_mile),
            ]);
            vec!["--trees", "--arity", "--height", "--hosts-per"]
        }
        GenKind::Inet(p) => {
            set(&mut p.routers, args.routers);
            set(&mut p.stubs, args.stubs);
            set(&mut p.hosts, args.hosts);
            set(&mut p.seed, args.seed);
            // A delay given for transit-transit replaces the per-link random delays.
            if args
                .classes
                .iter()
                .any(|c| c.starts_with("transit-transit="))
            {
                p.transit_delay_ms = None;
            }
            classes.extend([
                ("client-stub", &mut p.client_stub),
                ("stub-stub", &mut p.stub_stub),
                ("stub-transit", &mut p.stub_transit),
                ("transit-transit", &mut p.transit_transit),
            ]);
            vec!["--routers", "--stubs", "--hosts", "--seed"]
        }
    };
    for spec in &args.classes {
        let parsed = spec
            .split_once('=')
            .and_then(|(name, v)| v.split_once('/').map(|(bw, delay)| (name, bw, delay)));
        let Some((name, bw, delay)) = parsed else {
            bail!("--class {spec:?}: write NAME=BW/DELAY, for example access=10Mbit/1ms");
        };
        let names: Vec<&str> = classes.iter().map(|(n, _)| *n).collect();
        let Some((_, class)) = classes.iter_mut().find(|(n, _)| *n == name) else {
            bail!(
                "--class {spec:?}: this kind has no class {name:?}; its classes are {}",
                names.join(", ")
            );
        };
        netloom_topo::units::parse_rate(bw).with_context(|| format!("--class {spec:?}"))?;
        netloom_topo::units::parse_duration(delay).with_context(|| format!("--class {spec:?}"))?;
        **class = LinkClass::new(bw, delay);
    }
    Ok(accepted)
}
