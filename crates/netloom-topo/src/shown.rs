//! A name from the user as an error quotes it: whole when short, else its first `SHOWN_CHARS`
//! characters and its length, so a 64 MB host name costs an error line 100 bytes, not 64 MB.

use std::fmt;

/// The most characters of a name an error quotes (a longer one is cut, with its length).
pub const SHOWN_CHARS: usize = 64;

/// `name` as an error quotes it: `{}` writes it bare, `{:?}` in quotes, as `str` does, each cut
/// after `SHOWN_CHARS` characters with `… (N bytes)` when longer.
#[derive(Clone, Copy)]
pub struct Shown<'a>(pub &'a str);

/// `name` as an error quotes it (`Shown`).
pub fn shown(name: &str) -> Shown<'_> {
    Shown(name)
}

impl Shown<'_> {
    /// The quoted part, and the whole length when it was cut.
    fn parts(&self) -> (&str, Option<usize>) {
        match self.0.char_indices().nth(SHOWN_CHARS) {
            Some((cut, _)) => (&self.0[..cut], Some(self.0.len())),
            None => (self.0, None),
        }
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parts() {
            (all, None) => f.write_str(all),
            (head, Some(len)) => write!(f, "{head}… ({len} bytes)"),
        }
    }
}

impl fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parts() {
            (all, None) => write!(f, "{all:?}"),
            (head, Some(len)) => write!(f, "{head:?}… ({len} bytes)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_whole_and_long_ones_cut_with_their_length() {
        assert_eq!(format!("{} {:?}", shown("h1"), shown("h1")), "h1 \"h1\"");
        let long = "é".repeat(100);
        let cut = format!("{:?}", shown(&long));
        assert_eq!(cut, format!("{:?}… (200 bytes)", "é".repeat(64)));
        assert_eq!(shown(&"h".repeat(64)).to_string(), "h".repeat(64));
    }
}
