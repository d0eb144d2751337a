//! The Inet 3.0 generator's output: a `N M` header, `N` lines `id x y` (a router at a point of
//! the plane) and `M` lines `a b w` (a link; Inet's weight `w` is not a delay and is only
//! checked to be a number). Routers are named `r<id>`; delays come from distances on the plane.

use super::fail;
use super::geo::Position;
use super::graph::{Graph, Link, Names, Node};
use crate::error::{ErrorKind, TopoError};
use std::collections::HashMap;

pub(crate) fn read(text: &str, label: &str) -> Result<Graph, TopoError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split_whitespace().collect::<Vec<_>>()))
        .filter(|(_, words)| !words.is_empty());
    let err = |line: Option<usize>, subject: Option<String>, kind, message: String| {
        fail(label, line, subject, kind, message)
    };
    let count = |w: &str| w.parse::<usize>().ok();
    let (n, m) = match lines.next() {
        Some((_, words)) if words.len() == 2 && words.iter().all(|w| count(w).is_some()) => {
            (count(words[0]).unwrap_or(0), count(words[1]).unwrap_or(0))
        }
        Some((line, _)) => {
            return Err(err(
                Some(line),
                Some("header".into()),
                ErrorKind::Syntax,
                "an Inet file starts with \"N M\": the numbers of nodes and links".into(),
            ))
        }
        None => {
            return Err(err(
                None,
                None,
                ErrorKind::Missing,
                "the file is empty; an Inet file starts with \"N M\"".into(),
            ))
        }
    };
    let number = |w: &str| w.parse::<f64>().ok().filter(|v| v.is_finite());
    let mut graph = Graph::default();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut names = Names::default();
    let mut links = 0;
    for (line, words) in lines {
        if graph.nodes.len() < n {
            let subject = Some(format!("node line {}", graph.nodes.len() + 1));
            let (x, y) = match words[..] {
                [_, x, y] => (number(x), number(y)),
                _ => (None, None),
            };
            let (Some(x), Some(y)) = (x, y) else {
                return Err(err(
                    Some(line),
                    subject,
                    ErrorKind::Syntax,
                    "a node line is \"id x y\" (x and y numbers)".into(),
                ));
            };
            if ids.insert(words[0], graph.nodes.len()).is_some() {
                return Err(err(
                    Some(line),
                    subject,
                    ErrorKind::Duplicate,
                    format!("node {} is declared twice", words[0]),
                ));
            }
            graph.nodes.push(Node {
                name: names.claim(&format!("r{}", words[0])),
                position: Some(Position::Plane { x, y }),
                ..Node::default()
            });
            continue;
        }
        links += 1;
        let subject = Some(format!("link line {links}"));
        if links > m {
            return Err(err(
                Some(line),
                subject,
                ErrorKind::BadValue,
                format!("more lines than the header's {n} nodes and {m} links"),
            ));
        }
        let [a, b, w] = words[..] else {
            return Err(err(
                Some(line),
                subject,
                ErrorKind::Syntax,
                "a link line is \"a b w\" (two node ids and a weight)".into(),
            ));
        };
        let node = |id: &str| {
            ids.get(id).copied().ok_or_else(|| {
                err(
                    Some(line),
                    subject.clone(),
                    ErrorKind::UnknownName,
                    format!("node {id} is not declared"),
                )
            })
        };
        let (a, b) = (node(a)?, node(b)?);
        if number(w).is_none() {
            return Err(err(
                Some(line),
                subject,
                ErrorKind::BadValue,
                format!("weight \"{w}\" is not a number"),
            ));
        }
        if a == b {
            return Err(err(
                Some(line),
                subject,
                ErrorKind::SelfLoop,
                "joins a node to itself".into(),
            ));
        }
        graph.links.push(Link {
            a,
            b,
            ..Link::default()
        });
    }
    if graph.nodes.len() < n || links < m {
        return Err(err(
            None,
            None,
            ErrorKind::Missing,
            format!(
                "the header announces {n} nodes and {m} links, the file has {} and {links}",
                graph.nodes.len()
            ),
        ));
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_routers_on_the_plane_and_links() {
        let g = read("3 2\n0 0 0\n1 3 4\n2 10 0\n0 1 5\n1 2 1\n", "t.inet").unwrap();
        assert_eq!(g.nodes[1].name, "r1");
        assert_eq!(
            g.nodes[1].position,
            Some(Position::Plane { x: 3.0, y: 4.0 })
        );
        assert_eq!((g.links[1].a, g.links[1].b), (1, 2));
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases = [
            ("", "t.inet: the file is empty"),
            ("x 1\n", "t.inet:1: header:"),
            ("2 1\n0 0 0\n1 0\n", "t.inet:3: node line 2:"),
            (
                "2 1\n0 0 0\n1 1 1\n0 5 1\n",
                "t.inet:4: link line 1: node 5 is not declared",
            ),
            (
                "2 1\n0 0 0\n1 1 1\n0 1 x\n",
                "t.inet:4: link line 1: weight \"x\"",
            ),
            (
                "2 2\n0 0 0\n1 1 1\n0 1 1\n",
                "the header announces 2 nodes and 2 links",
            ),
            (
                "2 1\n0 0 0\n0 1 1\n",
                "t.inet:3: node line 2: node 0 is declared twice",
            ),
        ];
        for (text, want) in cases {
            let got = read(text, "t.inet").unwrap_err().to_string();
            assert!(got.contains(want), "{text:?}: {got}");
        }
    }
}
