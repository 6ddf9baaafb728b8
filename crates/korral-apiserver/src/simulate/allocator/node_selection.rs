//! Whether a Node matches a `NodeSelector`, as upstream's `nodeaffinity.NodeSelector`: the
//! terms are ORed and the requirements of a term ANDed; label requirements use `In`,
//! `NotIn`, `Exists`, `DoesNotExist`, `Gt` and `Lt`; field requirements name
//! `metadata.name` (with `In` or `NotIn`). A term without requirements matches no Node, and
//! neither does a requirement upstream would refuse (an unknown operator or field).

use serde_json::Value;

/// Whether `node` (a Node object) matches `selector`.
pub fn matches(selector: &Value, node: &Value) -> bool {
    selector["nodeSelectorTerms"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|term| term_matches(term, node))
}

/// Whether `node` matches every requirement of `term` (and the term has one).
fn term_matches(term: &Value, node: &Value) -> bool {
    let expressions = requirements(&term["matchExpressions"]);
    let fields = requirements(&term["matchFields"]);
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = &node["metadata"]["labels"];
    expressions.iter().all(|r| {
        let key = r["key"].as_str().unwrap_or_default();
        satisfied(r, labels.get(key).and_then(Value::as_str))
    }) && fields.iter().all(|r| {
        r["key"].as_str() == Some("metadata.name")
            && matches!(r["operator"].as_str(), Some("In" | "NotIn"))
            && satisfied(r, node["metadata"]["name"].as_str())
    })
}

fn requirements(list: &Value) -> &[Value] {
    list.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// Whether `value` (absent: the label is not set) satisfies requirement `r`.
fn satisfied(r: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = r["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let compare = |want: std::cmp::Ordering| {
        let (Some(value), [bound]) = (value, values.as_slice()) else {
            return false;
        };
        match (value.parse::<i64>(), bound.parse::<i64>()) {
            (Ok(value), Ok(bound)) => value.cmp(&bound) == want,
            _ => false,
        }
    };
    match r["operator"].as_str() {
        Some("In") => value.is_some_and(|v| values.contains(&v)),
        Some("NotIn") => value.is_none_or(|v| !values.contains(&v)),
        Some("Exists") => value.is_some(),
        Some("DoesNotExist") => value.is_none(),
        Some("Gt") => compare(std::cmp::Ordering::Greater),
        Some("Lt") => compare(std::cmp::Ordering::Less),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node() -> Value {
        json!({"metadata": {"name": "korral-node", "labels": {"zone": "a", "gpus": "4"}}})
    }

    fn selector(terms: Value) -> Value {
        json!({"nodeSelectorTerms": terms})
    }

    #[test]
    fn terms_are_ored_and_requirements_anded() {
        let n = node();
        let expr = |key: &str, op: &str, values: Value| json!({"key": key, "operator": op, "values": values});
        for (term, want) in [
            (
                json!({"matchExpressions": [expr("zone", "In", json!(["a", "b"]))]}),
                true,
            ),
            (
                json!({"matchExpressions": [expr("zone", "NotIn", json!(["a"]))]}),
                false,
            ),
            (
                json!({"matchExpressions": [expr("rack", "NotIn", json!(["x"]))]}),
                true,
            ),
            (
                json!({"matchExpressions": [expr("zone", "Exists", json!([]))]}),
                true,
            ),
            (
                json!({"matchExpressions": [expr("zone", "DoesNotExist", json!([]))]}),
                false,
            ),
            (
                json!({"matchExpressions": [expr("gpus", "Gt", json!(["3"]))]}),
                true,
            ),
            (
                json!({"matchExpressions": [expr("gpus", "Lt", json!(["3"]))]}),
                false,
            ),
            (
                json!({"matchExpressions": [expr("zone", "Gt", json!(["3"]))]}),
                false,
            ),
            (
                json!({"matchFields": [expr("metadata.name", "In", json!(["korral-node"]))]}),
                true,
            ),
            (
                json!({"matchFields": [expr("metadata.name", "NotIn", json!(["korral-node"]))]}),
                false,
            ),
            (
                json!({"matchFields": [expr("metadata.uid", "In", json!(["x"]))]}),
                false,
            ),
            (
                json!({"matchExpressions": [expr("zone", "In", json!(["a"]))],
                    "matchFields": [expr("metadata.name", "In", json!(["other"]))]}),
                false,
            ),
            (json!({}), false),
        ] {
            assert_eq!(
                matches(&selector(json!([term.clone()])), &n),
                want,
                "{term}"
            );
        }
        let none = json!({"matchExpressions": [expr("zone", "In", json!(["b"]))]});
        let some = json!({"matchExpressions": [expr("zone", "In", json!(["a"]))]});
        assert!(matches(&selector(json!([none, some])), &n));
        assert!(!matches(&selector(json!([])), &n));
    }
}
