//! API keys: `clrspy agent new-key` makes one (32 random bytes from the kernel, base64url) and
//! its hash (hex SHA-256 of the key's text) — the agent stores and compares only hashes.

use std::io::Read;

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::error::AgentError;

/// A new API key and its hash.
#[derive(Clone, Debug)]
pub(crate) struct NewKey {
    /// The key: the secret the client sends as `Authorization: Bearer KEY`.
    pub(crate) key: String,
    /// Its hash: what the agent's config holds.
    pub(crate) hash: String,
}

/// The SHA-256 of `key`'s text.
pub(crate) fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

/// The hex SHA-256 of `key`'s text.
pub(crate) fn hash_hex(key: &str) -> String {
    digest(key).iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes a key from 32 bytes of `/dev/urandom`.
pub(crate) fn new_key() -> Result<NewKey, AgentError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| AgentError::Io(format!("reading /dev/urandom: {e}")))?;
    Ok(from_bytes(&bytes))
}

/// The key made of `bytes`.
pub(crate) fn from_bytes(bytes: &[u8]) -> NewKey {
    let key = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let hash = hash_hex(&key);
    NewKey { key, hash }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_keys_sha256() {
        // SHA-256("test"), a published test vector.
        assert_eq!(
            hash_hex("test"),
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        );
        let k = from_bytes(&[0xff; 32]);
        assert_eq!(k.key.len(), 43);
        assert!(k
            .key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(k.hash, hash_hex(&k.key));
    }

    #[test]
    fn new_keys_differ() {
        let (a, b) = (new_key().unwrap(), new_key().unwrap());
        assert_ne!(a.key, b.key);
        assert_eq!(crate::config::parse_hash(&a.hash).unwrap(), digest(&a.key));
    }
}
