//! A run's secret and the tag it puts on every datagram between the run's machines, so that
//! only its own workers take part: BLAKE3 in its keyed mode (a MAC) over the whole datagram,
//! 16 bytes after it. The tag authenticates, it does not hide: what crosses stays readable
//! (tshark still shows it), and an on-path attacker can still drop or delay it.

use std::fmt;

/// Bytes of the tag after a sealed datagram.
pub const TAG_LEN: usize = 16;

/// A run's secret: 32 random bytes, made by its coordinator and handed to each worker over the
/// channel that started it. Never printed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Key(..)")
    }
}

/// Bytes that are not a sealed datagram of this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unsealed {
    /// Fewer bytes than a tag.
    #[error("{0} bytes cannot hold a tag")]
    Short(usize),
    /// The tag is not the one the run's secret makes: another sender, or changed bytes.
    #[error("the tag does not match the run's secret")]
    Forged,
}

/// A key that is not 64 hexadecimal digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a run's secret is 64 hexadecimal digits")]
pub struct BadKey;

impl Key {
    /// A new secret from the operating system's random source.
    pub fn random() -> Key {
        use rand::RngCore;
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Key(bytes)
    }

    /// The key as 64 hexadecimal digits, to hand to a worker.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A key from `to_hex`'s form.
    pub fn from_hex(text: &str) -> Result<Key, BadKey> {
        let text = text.as_bytes();
        if text.len() != 64 {
            return Err(BadKey);
        }
        let mut bytes = [0u8; 32];
        for (b, pair) in bytes.iter_mut().zip(text.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| BadKey)?;
            *b = u8::from_str_radix(pair, 16).map_err(|_| BadKey)?;
        }
        Ok(Key(bytes))
    }

    /// The tag of `bytes`.
    fn tag(&self, bytes: &[u8]) -> [u8; TAG_LEN] {
        let hash = blake3::keyed_hash(&self.0, bytes);
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&hash.as_bytes()[..TAG_LEN]);
        tag
    }

    /// Appends the tag of `datagram`'s bytes to it.
    pub fn seal(&self, datagram: &mut Vec<u8>) {
        let tag = self.tag(datagram);
        datagram.extend_from_slice(&tag);
    }

    /// The datagram inside `bytes` if its tag is this key's.
    pub fn open<'a>(&self, bytes: &'a [u8]) -> Result<&'a [u8], Unsealed> {
        let at = bytes
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(Unsealed::Short(bytes.len()))?;
        let (datagram, tag) = bytes.split_at(at);
        // Compared in full whatever differs, so that the time taken tells nothing of the tag.
        let differ = self
            .tag(datagram)
            .iter()
            .zip(tag)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        match differ {
            0 => Ok(datagram),
            _ => Err(Unsealed::Forged),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_datagram_opens_with_its_key_only_and_not_once_changed() {
        let (key, other) = (Key::random(), Key::random());
        assert_ne!(key, other);
        let mut d = b"a datagram".to_vec();
        key.seal(&mut d);
        assert_eq!(d.len(), 10 + TAG_LEN);
        assert_eq!(key.open(&d).unwrap(), b"a datagram");
        assert_eq!(other.open(&d).unwrap_err(), Unsealed::Forged);
        for i in 0..d.len() {
            let mut changed = d.clone();
            changed[i] ^= 1;
            assert_eq!(
                key.open(&changed).unwrap_err(),
                Unsealed::Forged,
                "byte {i}"
            );
        }
        assert_eq!(
            key.open(&d[..TAG_LEN - 1]).unwrap_err(),
            Unsealed::Short(15)
        );
        assert_eq!(key.open(&d[1..]).unwrap_err(), Unsealed::Forged);
    }

    #[test]
    fn a_key_travels_as_hex_and_never_shows_in_debug() {
        let key = Key::random();
        assert_eq!(Key::from_hex(&key.to_hex()).unwrap(), key);
        assert_eq!(format!("{key:?}"), "Key(..)");
        assert_eq!(Key::from_hex("00"), Err(BadKey));
        assert_eq!(Key::from_hex(&"g".repeat(64)), Err(BadKey));
        assert_eq!(Key::from_hex(&"é".repeat(32)), Err(BadKey));
    }
}
