//! Names and hashes as upstream controllers make them.
//!
//! Upstream hashes a pod template with FNV-32a (plus the collision count), prints the 32-bit
//! sum in decimal and maps every character through `rand.SafeEncodeString`'s alphabet
//! (`bcdfghjklmnpqrstvwxz2456789`, no vowels, no easily confused characters). The template is
//! hashed here in a canonical JSON form (keys sorted), so equal templates get equal hashes.

use serde_json::Value;

/// The alphabet upstream uses for generated names and hashes.
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The label that ties ReplicaSets and their Pods to one Deployment template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// FNV-1a, 32 bits.
#[derive(Debug, Clone, Copy)]
pub struct Fnv32a(u32);

impl Default for Fnv32a {
    fn default() -> Self {
        Self(0x811c_9dc5)
    }
}

impl Fnv32a {
    /// Feeds bytes into the hash.
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }

    /// The hash so far.
    pub fn sum(&self) -> u32 {
        self.0
    }
}

/// Maps every byte of `s` into [`SAFE_ALPHABET`] (upstream's `rand.SafeEncodeString`).
pub fn safe_encode(s: &str) -> String {
    s.bytes()
        .map(|b| SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// Writes `value` as JSON with object keys sorted, so equal documents hash equally whatever
/// order their keys were stored in.
pub fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical_json(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The `pod-template-hash` of a pod template (upstream's `controller.ComputeHash`): FNV-32a of
/// the template, then of the collision count (little-endian) when there is one, rendered safely.
pub fn template_hash(template: &Value, collision_count: Option<u32>) -> String {
    let mut text = String::new();
    canonical_json(template, &mut text);
    let mut hasher = Fnv32a::default();
    hasher.write(text.as_bytes());
    if let Some(count) = collision_count {
        hasher.write(&count.to_le_bytes());
    }
    safe_encode(&hasher.sum().to_string())
}

/// A stable, sha256-looking hex digest of `seed` (for image IDs), 64 hex characters.
pub fn fake_digest(seed: &str) -> String {
    let mut out = String::with_capacity(64);
    for round in 0u8..8 {
        let mut hasher = Fnv32a::default();
        hasher.write(&[round]);
        hasher.write(seed.as_bytes());
        out.push_str(&format!("{:08x}", hasher.sum()));
    }
    out
}

/// A random 64-hex-character container ID.
pub fn random_container_id() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fnv32a_matches_reference_vectors() {
        let mut h = Fnv32a::default();
        assert_eq!(h.sum(), 0x811c_9dc5);
        h.write(b"a");
        assert_eq!(h.sum(), 0xe40c_292c);
        let mut h = Fnv32a::default();
        h.write(b"foobar");
        assert_eq!(h.sum(), 0xbf9c_f968);
    }

    #[test]
    fn safe_encode_maps_digits_like_upstream() {
        // '0' is byte 48: 48 % 27 = 21 -> '4'; '9' is 57: 57 % 27 = 3 -> 'f'.
        assert_eq!(safe_encode("0"), "4");
        assert_eq!(safe_encode("9"), "f");
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
    }

    #[test]
    fn template_hash_is_key_order_independent_and_uses_the_safe_alphabet() {
        let a = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let b: Value = serde_json::from_str(
            r#"{"spec": {"containers": [{"image": "nginx", "name": "c"}]}, "metadata": {"labels": {"app": "x"}}}"#,
        )
        .expect("json");
        let ha = template_hash(&a, None);
        assert_eq!(ha, template_hash(&b, None));
        assert!(!ha.is_empty() && ha.len() <= 10);
        assert!(ha.bytes().all(|c| SAFE_ALPHABET.contains(&c)));
        assert_ne!(ha, template_hash(&a, Some(1)));
        let c = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}});
        assert_ne!(ha, template_hash(&c, None));
    }

    #[test]
    fn digests_are_stable_hex() {
        let d = fake_digest("nginx");
        assert_eq!(d.len(), 64);
        assert_eq!(d, fake_digest("nginx"));
        assert!(d.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(random_container_id().len(), 64);
    }
}
