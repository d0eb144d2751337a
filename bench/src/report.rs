//! Report pieces shared by the subcommands: the median, min and max of repeats, and Markdown tables.

use serde::Serialize;

/// The spread of a figure over repeated runs.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// Panics on an empty slice (every benchmark runs at least once).
    pub fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    /// `median (min–max)`, each divided by `unit` and shown with `decimals` decimals.
    pub fn show(&self, unit: f64, decimals: usize) -> String {
        format!(
            "{:.d$} ({:.d$}–{:.d$})",
            self.median / unit,
            self.min / unit,
            self.max / unit,
            d = decimals
        )
    }
}

/// A Markdown table.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n", headers.join(" | "));
    out += &format!("|{}\n", "---|".repeat(headers.len()));
    for row in rows {
        out += &format!("| {} |\n", row.join(" | "));
    }
    out
}
