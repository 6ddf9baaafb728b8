//! Duplicate fields in JSON request bodies.
//!
//! `serde_json` keeps the last of repeated object keys silently; kube-apiserver's strict decoder
//! reports them (`duplicate field "spec.replicas"`): a 400 under `fieldValidation=Strict`, a
//! warning under `Warn`. This scans the raw body once, without building a value.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The paths of repeated object keys in a JSON document (`spec.replicas`, `items[0].name`), in
/// document order. Malformed JSON yields no paths (decoding reports it).
pub fn find(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Scan {
        path: String::new(),
        out: &mut out,
    };
    if seed.deserialize(&mut de).is_err() {
        return Vec::new();
    }
    out
}

struct Scan<'a> {
    path: String,
    out: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Scan {
                path: format!("{}[{i}]", self.path),
                out: &mut *self.out,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = join(&self.path, &key);
            if !seen.insert(key) {
                if !self.out.contains(&path) {
                    self.out.push(path);
                }
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            map.next_value_seed(Scan {
                path,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }
}

/// The strict-decoding / warning text for a duplicate: `duplicate field "spec.replicas"`.
pub fn message(path: &str) -> String {
    format!("duplicate field {}", super::names::go_quote(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_duplicates_with_paths() {
        let body = br#"{"kind":"Widget","spec":{"replicas":1,"color":"red","replicas":2},
            "items":[{"a":1},{"a":1,"a":2}],"kind":"Widget"}"#;
        assert_eq!(find(body), ["spec.replicas", "items[1].a", "kind"]);
    }

    #[test]
    fn clean_and_malformed_documents_have_none() {
        assert!(find(br#"{"a":{"a":1},"b":[{"a":1},{"a":2}]}"#).is_empty());
        assert!(find(b"{not json").is_empty());
    }

    #[test]
    fn message_quotes_the_path() {
        assert_eq!(message("spec.x"), "duplicate field \"spec.x\"");
    }
}
