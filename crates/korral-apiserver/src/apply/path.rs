//! Field paths: the elements that address a field, a list item or a set value inside an
//! object, with upstream's `FieldsV1` keys (`f:`, `k:`, `v:`, `i:`) and its printed form
//! (`.spec.template.spec.containers[name="nginx"].image`).

use std::fmt;

use serde_json::{Map, Value};

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A field of a map or struct (`f:<name>`).
    Field(String),
    /// An item of an associative list, by its key fields (`k:{...}`); the canonical JSON of an
    /// object with the key fields in name order.
    Key(String),
    /// An item of a set list, by its value (`v:<json>`); the canonical JSON of the value.
    Value(String),
    /// An item of a list addressed by position (`i:<n>`).
    Index(usize),
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

impl PathElement {
    /// The element for an associative-list item with these key fields.
    pub fn key(fields: &Map<String, Value>) -> PathElement {
        // serde_json's Map is ordered by key unless `preserve_order` is on: sort explicitly.
        let mut sorted: Vec<(&String, &Value)> = fields.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = String::from("{");
        for (i, (k, v)) in sorted.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&Value::String((*k).clone()).to_string());
            out.push(':');
            out.push_str(&canonical(v));
        }
        out.push('}');
        PathElement::Key(out)
    }

    /// The element for a set item.
    pub fn value(v: &Value) -> PathElement {
        PathElement::Value(canonical(v))
    }

    /// The `FieldsV1` key of the element.
    pub fn fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(json) => format!("k:{json}"),
            PathElement::Value(json) => format!("v:{json}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key (`f:`, `k:`, `v:`, `i:`).
    pub fn from_fields_v1_key(key: &str) -> Result<PathElement, String> {
        let (prefix, rest) = key
            .split_once(':')
            .ok_or_else(|| format!("unexpected key {key:?}: missing type prefix"))?;
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => Ok(PathElement::key(&m)),
                _ => Err(format!("unexpected key {key:?}: invalid key fields")),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(|v| PathElement::value(&v))
                .map_err(|_| format!("unexpected key {key:?}: invalid value")),
            "i" => rest
                .parse::<usize>()
                .map(PathElement::Index)
                .map_err(|_| format!("unexpected key {key:?}: invalid index")),
            _ => Err(format!("unexpected key {key:?}: unknown type prefix")),
        }
    }
}

/// Compact JSON with object keys sorted, so equal values give equal text.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut sorted: Vec<(&String, &Value)> = m.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{}", Value::String((*k).clone()), canonical(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

impl fmt::Display for PathElement {
    /// Upstream's `PathElement.String()`: `.name`, `[k1=v1,k2=v2]`, `[=value]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(json) => {
                let parsed: Map<String, Value> = serde_json::from_str(json).unwrap_or_default();
                let mut sorted: Vec<(&String, &Value)> = parsed.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(b.0));
                let parts: Vec<String> = sorted
                    .iter()
                    .map(|(k, v)| format!("{k}={}", canonical(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(json) => write!(f, "[={json}]"),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Upstream's printed form of a path (`.spec.containers[name="a"].image`).
pub fn display(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_round_trip_and_print_as_upstream() {
        let m = json!({"protocol": "TCP", "containerPort": 80});
        let pe = PathElement::key(m.as_object().expect("object"));
        assert_eq!(
            pe.fields_v1_key(),
            r#"k:{"containerPort":80,"protocol":"TCP"}"#
        );
        assert_eq!(pe.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        assert_eq!(
            PathElement::from_fields_v1_key(&pe.fields_v1_key()).expect("parse"),
            pe
        );
        let v = PathElement::value(&json!("example.com/f"));
        assert_eq!(v.fields_v1_key(), r#"v:"example.com/f""#);
        assert_eq!(v.to_string(), r#"[="example.com/f"]"#);
        let path = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::key(json!({"name": "nginx"}).as_object().expect("object")),
            PathElement::Field("image".into()),
        ];
        assert_eq!(display(&path), r#".spec.containers[name="nginx"].image"#);
        assert!(PathElement::from_fields_v1_key("x:1").is_err());
        assert!(PathElement::from_fields_v1_key("k:[1]").is_err());
        assert!(PathElement::from_fields_v1_key("nocolon").is_err());
    }
}
