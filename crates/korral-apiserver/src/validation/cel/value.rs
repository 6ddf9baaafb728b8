//! Converting JSON values to CEL values.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use serde_json::Value;

/// The deepest JSON value converted; deeper parts (which request decoding already refuses)
/// become `null`.
const MAX_DEPTH: usize = 256;

/// The CEL value of a JSON value: integers as `int` (or `uint` past `int`'s range), other
/// numbers as `double`, objects as maps with string keys.
pub fn to_cel(value: &Value) -> cel::Value {
    convert(value, 0)
}

fn convert(value: &Value, depth: usize) -> cel::Value {
    if depth > MAX_DEPTH {
        return cel::Value::Null;
    }
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(
            items.iter().map(|i| convert(i, depth + 1)).collect(),
        )),
        Value::Object(map) => {
            let entries: HashMap<Key, cel::Value> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), convert(v, depth + 1)))
                .collect();
            cel::Value::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(to_cel(&json!(3)), cel::Value::Int(3));
        assert_eq!(to_cel(&json!(u64::MAX)), cel::Value::UInt(u64::MAX));
        assert_eq!(to_cel(&json!(1.5)), cel::Value::Float(1.5));
    }

    #[test]
    fn objects_become_maps() {
        let v = to_cel(&json!({"a": [1, "x"], "b": null}));
        let cel::Value::Map(m) = v else {
            panic!("not a map")
        };
        assert_eq!(m.map.len(), 2);
    }
}
