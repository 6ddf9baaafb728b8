//! Rules Secrets and ConfigMaps share: data keys (`IsConfigMapKey`), the 1 MiB total size, and
//! the `immutable: true` lock (`ValidateSecretUpdate`, `ValidateConfigMapUpdate`).

use serde_json::{Value, json};

use crate::error::Cause;
use crate::validation::names::invalid_value;
use crate::validation::podspec::config_map_key;

/// The largest total size of a Secret's or ConfigMap's data (`core.MaxSecretSize`).
pub(super) const MAX_SIZE: usize = 1024 * 1024;

/// Upstream's message for a change to a locked object.
const LOCKED: &str = "field is immutable when `immutable` is set";

/// The keys of the map at `field` of `obj` with their values.
pub(super) fn entries<'a>(
    obj: &'a Value,
    field: &str,
) -> impl Iterator<Item = (&'a String, &'a Value)> {
    obj.get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

/// `field[key]: Invalid value: "key": …` for every key of the map at `field` that is not a valid
/// config key.
pub(super) fn validate_keys(obj: &Value, field: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (key, _) in entries(obj, field) {
        for msg in config_map_key(key) {
            errs.push(invalid_value(&format!("{field}[{key}]"), &json!(key), &msg));
        }
    }
    errs
}

/// Whether the object is locked (`immutable: true`).
fn locked(obj: &Value) -> bool {
    obj.get("immutable").and_then(Value::as_bool) == Some(true)
}

/// The update rules of a locked object: `immutable` may not be unset and none of the
/// `fields` (`data`, `binaryData`, `stringData` folded in) may change.
pub(super) fn validate_locked_update(new: &Value, old: &Value, fields: &[&str]) -> Vec<Cause> {
    if !locked(old) {
        return Vec::new();
    }
    let mut errs = Vec::new();
    if !locked(new) {
        errs.push(Cause::forbidden("immutable", LOCKED));
    }
    let empty = Value::Object(Default::default());
    for field in fields {
        let normal = |v: &Value| {
            v.get(*field)
                .filter(|d| !d.is_null())
                .cloned()
                .unwrap_or(empty.clone())
        };
        if normal(new) != normal(old) {
            errs.push(Cause::forbidden(*field, LOCKED));
        }
    }
    errs
}
