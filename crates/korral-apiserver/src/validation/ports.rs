//! Port numbers and port names, as upstream's `IsValidPortNum` and `IsValidPortName`
//! (`k8s.io/apimachinery/pkg/util/validation`), shared by Pods, Services, probes and
//! NetworkPolicies.

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::invalid_value;

/// The longest port name (an IANA service name).
const MAX_PORT_NAME_LENGTH: usize = 15;

/// Upstream `IsValidPortNum`: 1 to 65535.
pub(crate) fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range(1, 65535)]
    }
}

/// Upstream `InclusiveRangeError`: `must be between LO and HI, inclusive`.
pub(crate) fn inclusive_range(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// Upstream `IsValidPortName` (an IANA_SVC_NAME): at most 15 lowercase alphanumerics and
/// hyphens, at least one letter, no `--`, no leading or trailing hyphen.
pub(crate) fn port_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > MAX_PORT_NAME_LENGTH {
        errs.push(format!(
            "must be no more than {MAX_PORT_NAME_LENGTH} characters"
        ));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// Upstream `ValidatePortNumOrName` for an int-or-string port at `field`.
pub(crate) fn port_num_or_name(port: &Value, field: &str) -> Vec<Cause> {
    let msgs = match port {
        Value::String(s) => port_name(s),
        Value::Number(n) => port_num(n.as_i64().unwrap_or(0)),
        _ => port_num(0),
    };
    let shown = match port {
        Value::String(_) | Value::Number(_) => port.clone(),
        _ => Value::from(0),
    };
    msgs.iter()
        .map(|m| invalid_value(field, &shown, m))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn port_numbers() {
        assert!(port_num(1).is_empty());
        assert!(port_num(65535).is_empty());
        assert_eq!(port_num(0), vec!["must be between 1 and 65535, inclusive"]);
        assert_eq!(
            port_num(70000),
            vec!["must be between 1 and 65535, inclusive"]
        );
    }

    #[test]
    fn port_names() {
        assert!(port_name("http").is_empty());
        assert!(port_name("metrics-8080").is_empty());
        assert_eq!(
            port_name("8080"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            port_name("Http"),
            vec!["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]
        );
        assert_eq!(
            port_name("a--b"),
            vec!["must not contain consecutive hyphens"]
        );
        assert_eq!(port_name("-a"), vec!["must not begin or end with a hyphen"]);
        assert_eq!(
            port_name("abcdefghijklmnop"),
            vec!["must be no more than 15 characters"]
        );
    }

    #[test]
    fn int_or_string_ports() {
        assert!(port_num_or_name(&json!(80), "p").is_empty());
        assert!(port_num_or_name(&json!("http"), "p").is_empty());
        let causes = port_num_or_name(&json!(0), "spec.port");
        assert_eq!(
            causes[0].message,
            "Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        let causes = port_num_or_name(&json!("HTTP"), "spec.port");
        assert_eq!(causes[0].field, "spec.port");
        assert!(causes[0].message.starts_with("Invalid value: \"HTTP\": "));
    }
}
