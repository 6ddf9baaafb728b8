//! `apps/v1` ControllerRevisions: immutable snapshots of a workload's state (upstream's
//! `pkg/registry/apps/controllerrevision` and `ValidateControllerRevision`).

use serde_json::{Value, json};

use crate::error::Cause;
use crate::kinds::printer::{AGE, Column, Printer, age, int};
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::nonnegative;
use crate::validation::names::{go_bytes, invalid_rendered};

/// ControllerRevisions: `data` is required and immutable, `revision` non-negative.
#[derive(Debug, Clone, Copy)]
pub(super) struct RevisionStrategy;

impl Strategy for RevisionStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_revision(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_revision_update(obj, old)
    }
}

/// Upstream's `ValidateControllerRevisionUpdate`: the new object's rules, then `data` unchanged
/// (`revision` may change).
fn validate_revision_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_revision(obj);
    if obj.get("data") != old.get("data") {
        errs.push(invalid_rendered(
            "data",
            &unknown(obj.get("data")),
            "field is immutable",
        ));
    }
    errs
}

/// Whether a `data` value is absent (upstream's nil `runtime.Object`: missing or `null`).
fn absent(data: Option<&Value>) -> bool {
    data.is_none_or(Value::is_null)
}

/// Upstream's `ValidateControllerRevision` (object metadata is checked by the store).
fn validate_revision(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    if absent(obj.get("data")) {
        errs.push(Cause::required("data", "data is mandatory"));
    }
    errs.extend(nonnegative(obj, "revision", ""));
    errs
}

/// How upstream prints the internal `data` in a field error: the `*runtime.Unknown` holding the
/// request's JSON, dereferenced and printed with Go's `%#v`.
fn unknown(data: Option<&Value>) -> String {
    match data.filter(|d| !d.is_null()) {
        None => "null".to_string(),
        Some(d) => {
            let raw = serde_json::to_vec(d).unwrap_or_default();
            format!(
                "runtime.Unknown{{TypeMeta:runtime.TypeMeta{{APIVersion:\"\", Kind:\"\"}}, Raw:{}, ContentEncoding:\"\", ContentType:\"application/json\"}}",
                go_bytes("[]uint8", &raw)
            )
        }
    }
}

/// `NAME CONTROLLER REVISION AGE`, as upstream's `printControllerRevision`.
pub(super) const REVISIONS: Printer = Printer {
    columns: &[
        Column::new("Controller", "Controller of the object"),
        Column::new(
            "Revision",
            "Revision indicates the revision of the state represented by Data.",
        ),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(controller(obj)),
            json!(int(obj, "revision")),
            age(obj),
        ]
    },
};

/// The controller owner as `kind.group/name` (lower-cased kind), `<none>` without one.
fn controller(obj: &Value) -> String {
    let owner = crate::meta::owner_references(obj)
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
    let Some(owner) = owner else {
        return "<none>".to_string();
    };
    let text = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or("");
    let group = text("apiVersion")
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or("");
    let kind = if group.is_empty() {
        text("kind").to_string()
    } else {
        format!("{}.{group}", text("kind"))
    };
    format!("{}/{}", kind.to_lowercase(), text("name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[Cause]) -> Vec<String> {
        errs.iter().map(Cause::summary).collect()
    }

    #[test]
    fn data_is_required_and_revision_nonnegative() {
        assert!(validate_revision(&json!({"data": {"a": 1}, "revision": 2})).is_empty());
        assert_eq!(
            messages(&validate_revision(&json!({"data": null, "revision": -1}))),
            vec![
                "data: Required value: data is mandatory",
                "revision: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn data_is_immutable_but_revision_is_not() {
        let old = json!({"data": {"a": 1}, "revision": 1});
        let errs = |new: Value| messages(&validate_revision_update(&new, &old));
        assert!(errs(json!({"data": {"a": 1}, "revision": 7})).is_empty());
        assert_eq!(
            errs(json!({"data": {"b": 2}, "revision": 1})),
            vec![
                "data: Invalid value: runtime.Unknown{TypeMeta:runtime.TypeMeta{APIVersion:\"\", Kind:\"\"}, Raw:[]uint8{0x7b, 0x22, 0x62, 0x22, 0x3a, 0x32, 0x7d}, ContentEncoding:\"\", ContentType:\"application/json\"}: field is immutable"
            ]
        );
    }

    #[test]
    fn controller_column_names_the_owner() {
        let obj = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p"},
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true},
        ]}});
        assert_eq!(controller(&obj), "statefulset.apps/web");
        assert_eq!(controller(&json!({})), "<none>");
    }
}
