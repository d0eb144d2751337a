//! Link speeds written in words, as the Topology Zoo's `LinkLabel` gives them where it has no
//! `LinkSpeed`: "OC-192c", "45 Mbps DS-3", "2.5G", "ANS CO+RE T1", "8*GbE". docs/import.md lists
//! the forms and the rules for labels with several speeds or none.

/// SONET's STS-1 line rate: OC-n is n times this.
const OC1_BPS: u64 = 51_840_000;
/// SDH's STM-1 line rate: STM-n is n times this (STM-n is OC-3n).
const STM1_BPS: u64 = 155_520_000;

/// The telephone carriers' lines, by their names as labels write them (`T1`, `DS-3`, `E1`):
/// the letters, then the level and its rate in bit/s.
const CARRIERS: [(&str, &[(u64, u64)]); 3] = [
    (
        "ds",
        &[(0, 64_000), (1, 1_544_000), (2, 6_312_000), (3, 44_736_000)],
    ),
    ("t", &[(1, 1_544_000), (2, 6_312_000), (3, 44_736_000)]),
    (
        "e",
        &[
            (1, 2_048_000),
            (2, 8_448_000),
            (3, 34_368_000),
            (4, 139_264_000),
        ],
    ),
];

/// Words that are a speed by themselves: Gigabit Ethernet, and 10GBASE-W (WAN PHY), which runs
/// at OC-192's line rate.
const WORDS: [(&str, u64); 5] = [
    ("gbe", 1_000_000_000),
    ("gige", 1_000_000_000),
    ("wanphy", 192 * OC1_BPS),
    ("wan phy", 192 * OC1_BPS),
    ("wan-phy", 192 * OC1_BPS),
];

/// The first speed `label` names, in bit/s; `None` when it names none ("Blue", "Dark Fibre",
/// "CANARIE N*10Gbit/s", whose count is unknown). Case does not matter.
pub(crate) fn rate(label: &str) -> Option<u64> {
    let c: Vec<char> = label.to_lowercase().chars().collect();
    let mut i = 0;
    while i < c.len() {
        // A speed starts a word: "Link2 10G" has one, at "10G"; "2,5 Gbps" (a decimal comma)
        // has none rather than a wrong one.
        let starts = i == 0 || !(c[i - 1].is_alphanumeric() || matches!(c[i - 1], '.' | ','));
        if starts && !counted_by_unknown(&c, i) {
            if let Some((bps, _)) = term(&c, i) {
                return Some(bps);
            }
        }
        i += 1;
    }
    None
}

/// Whether the text before `i` is "N*" or "N×": a count that is not a number, so the speed at
/// `i` is not the link's.
fn counted_by_unknown(c: &[char], i: usize) -> bool {
    c[..i]
        .iter()
        .rev()
        .find(|ch| **ch != ' ')
        .is_some_and(|ch| matches!(ch, '*' | '×'))
}

/// A speed at `i`, possibly with a count in front ("8*GbE", "4 x 10GE"), and where it ends.
fn term(c: &[char], i: usize) -> Option<(u64, usize)> {
    if let Some((count, j)) = whole(c, i) {
        let k = skip_spaces(c, j);
        if k < c.len() && matches!(c[k], '*' | 'x' | '×') {
            if let Some((bps, end)) = speed(c, skip_spaces(c, k + 1)) {
                return Some((count.checked_mul(bps)?, end));
            }
        }
    }
    speed(c, i)
}

/// One speed at `i` (a named line, a number with a unit, or a word) that ends a word.
fn speed(c: &[char], i: usize) -> Option<(u64, usize)> {
    let (bps, end) = named(c, i).or_else(|| with_unit(c, i)).or_else(|| {
        WORDS
            .iter()
            .find_map(|(w, bps)| Some((*bps, word(c, i, w)?)))
    })?;
    let ends = end == c.len() || !c[end].is_alphanumeric();
    (ends && bps > 0).then_some((bps, end))
}

/// OC-n (optionally concatenated, "OC-192c"), STM-n, and the carriers' T1, DS-3, E1 ...
fn named(c: &[char], i: usize) -> Option<(u64, usize)> {
    for (prefix, unit) in [("oc", OC1_BPS), ("stm", STM1_BPS)] {
        if let Some(j) = word(c, i, prefix) {
            // "OC-48", "OC48" and "OC 48" are all written.
            let j = if j < c.len() && matches!(c[j], '-' | ' ') {
                j + 1
            } else {
                j
            };
            let (n, mut end) = whole(c, j)?;
            if end < c.len() && c[end] == 'c' {
                end += 1;
            }
            return Some((n.checked_mul(unit)?, end));
        }
    }
    CARRIERS.iter().find_map(|(prefix, levels)| {
        let j = word(c, i, prefix)?;
        let j = if j < c.len() && c[j] == '-' { j + 1 } else { j };
        let (n, end) = whole(c, j)?;
        let (_, bps) = levels.iter().find(|(level, _)| *level == n)?;
        Some((*bps, end))
    })
}

/// A number and its unit: "45 Mbps", "10Gbit/s", "2.5G", "1GE", "64 kb/s", "100 Mb".
fn with_unit(c: &[char], i: usize) -> Option<(u64, usize)> {
    let (digits, j) = number(c, i)?;
    let k = skip_spaces(c, j);
    let prefixes = [("", 1.0), ("k", 1e3), ("m", 1e6), ("g", 1e9), ("t", 1e12)];
    let mut best: Option<(f64, usize)> = None;
    for (prefix, scale) in prefixes {
        let Some(after) = word(c, k, prefix) else {
            continue;
        };
        let mut units = vec!["bits/s", "bit/s", "bps", "b/s", "bits", "bit"];
        if !prefix.is_empty() {
            // "100 Mb" is megabits too: labels do not give bytes.
            units.push("b");
        }
        match prefix {
            // Ethernet: "1GE", "10 GbE", "10GigE"; and "10 Gigabit".
            "g" => units.extend(["e", "be", "ige", "igabit"]),
            "m" => units.push("egabit"),
            _ => {}
        }
        let mut ends: Vec<usize> = units.iter().filter_map(|u| word(c, after, u)).collect();
        // A prefix alone is a unit only right after the number: "2.5G", "155M", not "5 m".
        if !prefix.is_empty() && k == j {
            ends.push(after);
        }
        for end in ends {
            let whole_word = end == c.len() || !c[end].is_alphanumeric();
            if whole_word && best.is_none_or(|(_, e)| end > e) {
                best = Some((scale, end));
            }
        }
    }
    let (scale, end) = best?;
    let bps = (digits.parse::<f64>().ok()? * scale).round();
    (1.0..1e18).contains(&bps).then_some((bps as u64, end))
}

/// The decimal number at `i` ("2.5", "155") and where it ends.
fn number(c: &[char], i: usize) -> Option<(String, usize)> {
    let mut j = i;
    while j < c.len() && c[j].is_ascii_digit() {
        j += 1;
    }
    if j == i {
        return None;
    }
    if j + 1 < c.len() && c[j] == '.' && c[j + 1].is_ascii_digit() {
        j += 1;
        while j < c.len() && c[j].is_ascii_digit() {
            j += 1;
        }
    }
    Some((c[i..j].iter().collect(), j))
}

/// The whole number at `i` and where it ends.
fn whole(c: &[char], i: usize) -> Option<(u64, usize)> {
    let mut j = i;
    while j < c.len() && c[j].is_ascii_digit() {
        j += 1;
    }
    let n = c[i..j].iter().collect::<String>().parse().ok()?;
    Some((n, j))
}

/// Where `w` ends if the text at `i` starts with it.
fn word(c: &[char], i: usize, w: &str) -> Option<usize> {
    let mut j = i;
    for ch in w.chars() {
        if c.get(j) != Some(&ch) {
            return None;
        }
        j += 1;
    }
    Some(j)
}

fn skip_spaces(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i] == ' ' {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::rate;

    #[test]
    fn label_forms() {
        let m = 1_000_000;
        let g = 1_000_000_000;
        let table: &[(&str, Option<u64>)] = &[
            // SONET and SDH at their line rates; concatenated or not, however dashed.
            ("OC-192c", Some(9_953_280_000)),
            ("OC-192", Some(9_953_280_000)),
            ("OC-192 (Future)", Some(9_953_280_000)),
            ("OC48", Some(2_488_320_000)),
            ("oc 12", Some(622_080_000)),
            ("OC-3c", Some(155_520_000)),
            ("STM-1", Some(155_520_000)),
            ("STM-16", Some(2_488_320_000)),
            ("STM64", Some(9_953_280_000)),
            // The carriers' lines.
            ("T1", Some(1_544_000)),
            ("ANS CO+RE T1", Some(1_544_000)),
            ("internetMCI T3", Some(44_736_000)),
            ("DS-0", Some(64_000)),
            ("DS-1", Some(1_544_000)),
            ("DS3", Some(44_736_000)),
            ("E1", Some(2_048_000)),
            ("E3", Some(34_368_000)),
            // Numbers with units.
            ("45 Mbps", Some(45 * m)),
            ("10 Gbps", Some(10 * g)),
            ("Peering, 4Gbps", Some(4 * g)),
            ("2.5G", Some(2_500 * m)),
            ("155M", Some(155 * m)),
            ("100 Mb/s", Some(100 * m)),
            ("100 Mb", Some(100 * m)),
            ("64 kbps", Some(64_000)),
            ("64000 bps", Some(64_000)),
            ("CSTNet 2.5 Gbit/s", Some(2_500 * m)),
            ("KreoNet2  10Gbit/s", Some(10 * g)),
            ("1GE Primary Link", Some(g)),
            ("10GE", Some(10 * g)),
            ("10 GE", Some(10 * g)),
            ("10GbE", Some(10 * g)),
            ("10 Gigabit Ethernet", Some(10 * g)),
            ("100 Megabit", Some(100 * m)),
            ("WANPHY", Some(9_953_280_000)),
            // Counts of lines.
            ("8*GbE", Some(8 * g)),
            ("4 x 10GE", Some(40 * g)),
            // Several speeds: the first; a bound: the bound.
            ("45 Mbps DS-3", Some(45 * m)),
            ("10 Gbps / 2.5 Gbps", Some(10 * g)),
            ("< 155 Mbps", Some(155 * m)),
            ("< 10Gbps", Some(10 * g)),
            // No speed.
            ("Link to Amsterdam", None),
            ("Blue Line", None),
            ("Ethernet", None),
            ("Fibre ottica spenta (Dark Fibre)", None),
            ("Leased Wavelength/Managed Service", None),
            ("CANARIE N*10Gbit/s", None),
            ("Nx10G", None),
            ("2,5 Gbps", None),
            ("Route 66", None),
            ("5 m", None),
            ("0 Mbps", None),
            ("OC-", None),
            ("T4", None),
            ("E1a", None),
            ("Exchange1 10 Gbps", Some(10 * g)),
            ("Telstra", None),
            ("10 Gbpsx", None),
            ("", None),
        ];
        for (label, want) in table {
            assert_eq!(rate(label), *want, "{label:?}");
        }
    }
}
