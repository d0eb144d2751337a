//! Which core owns which pipe, as a ModelNet `.model` says: one entry per pipe, numbered the
//! way `resolve` numbers them (see `pipe_ids`), which is the `pipes` list of the partition
//! crate's assignment file; plus the cores' names. Knows nothing of how cores were chosen.

use crate::doc::TopologyFile;

/// The core of each pipe (`None`: the input did not say) and the cores' names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreMap {
    /// Core names, indexed by core number (ModelNet's emulator host names).
    pub cores: Vec<String>,
    /// `pipes[p]`: the core of pipe `p`.
    pub pipes: Vec<Option<u32>>,
}

/// The pipes of each `[[link]]` as `resolve` numbers them: `(a→b, b→a)`, in link order, one
/// number for both directions of a shared link.
pub fn pipe_ids(file: &TopologyFile) -> Vec<(u32, u32)> {
    let mut next = 0;
    file.links
        .iter()
        .map(|l| {
            let ab = next;
            next += if l.shared == Some(true) { 1 } else { 2 };
            (ab, next - 1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_are_numbered_like_resolve_numbers_them() {
        let file: TopologyFile = toml::from_str(
            r#"hosts = ["h1", "h2"]
routers = ["r"]
[defaults]
bw = "1Mbit"
delay = "1ms"
[[link]]
a = "h1"
b = "r"
shared = true
[[link]]
a = "r"
b = "h2"
"#,
        )
        .unwrap();
        let ids = pipe_ids(&file);
        assert_eq!(ids, [(0, 0), (1, 2)]);
        let topo = crate::resolve(&file, "t").unwrap();
        for (l, (ab, ba)) in topo.links.iter().zip(ids) {
            assert_eq!((l.ab, l.ba), (ab, ba));
        }
    }
}
