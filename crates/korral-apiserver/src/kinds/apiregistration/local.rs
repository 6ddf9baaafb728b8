//! The local APIServices a server should have: one per group version it serves itself, as
//! kube-apiserver's autoregistration (`cmd/kube-apiserver/app/aggregator.go`, with its group
//! priority table) and CRD registration (`pkg/controlplane/controller/crdregistration`)
//! controllers keep them.
//!
//! Built-in group versions get upstream's priorities and the label
//! `kube-aggregator.kubernetes.io/automanaged: onstart`; each served version of a CRD group
//! (unless a built-in group version of that name exists) gets priorities 1000/100 and the label
//! value `true`. An APIService without the label belongs to whoever created it and is left
//! alone.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{GROUP, local_spec};
use crate::kinds::printer::text;
use crate::registry::Registry;
use crate::storage::{Snapshot, collection_prefix};

/// The label marking an APIService the server manages.
pub(crate) const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";
/// The label value of built-in group versions (upstream syncs them on start).
pub(crate) const ON_START: &str = "onstart";
/// The label value of CRD group versions (kept in step continuously).
pub(crate) const CONTINUOUSLY: &str = "true";

/// Upstream's priorities of built-in group versions: (group, version, group priority minimum,
/// version priority). A served group version missing here gets no APIService, as upstream
/// skips it.
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1beta1", 17200, 9),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("resource.k8s.io", "v1", 16200, 21),
    ("resource.k8s.io", "v1beta2", 16200, 15),
    ("resource.k8s.io", "v1beta1", 16200, 9),
    ("resource.k8s.io", "v1alpha3", 16200, 1),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("storagemigration.k8s.io", "v1alpha1", 15800, 9),
];

/// The group priority minimum of CRD group versions ("relatively low").
const CRD_GROUP_PRIORITY: i64 = 1000;
/// The version priority of CRD group versions (sorted by kube-like version among equals).
const CRD_VERSION_PRIORITY: i64 = 100;

/// The name of the APIService of a group version: `<version>.<group>` (`v1.` for core).
pub(crate) fn name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// The priorities upstream gives a built-in group version.
fn priorities(group: &str, version: &str) -> Option<(i64, i64)> {
    PRIORITIES
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map(|(_, _, gp, vp)| (*gp, *vp))
}

/// Every local APIService the server should have, by name: the built-in group versions the
/// registry serves, then the served versions of the CRDs in `snapshot`.
pub(crate) fn desired(registry: &Registry, snapshot: &Snapshot) -> BTreeMap<String, Value> {
    let mut wanted = BTreeMap::new();
    for info in registry.all() {
        if info.is_custom() {
            continue;
        }
        let Some((gp, vp)) = priorities(&info.group, &info.version) else {
            continue;
        };
        wanted.insert(
            name(&info.group, &info.version),
            object(&info.group, &info.version, gp, vp, ON_START),
        );
    }
    let crds = collection_prefix("apiextensions.k8s.io", "customresourcedefinitions", None);
    for (_, crd) in snapshot.range(&crds, None) {
        let group = text(crd, "spec.group");
        let versions = crate::meta::path(crd, "spec.versions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for v in versions {
            let version = text(v, "name");
            let served = v.get("served").and_then(Value::as_bool).unwrap_or(false);
            if group.is_empty() || version.is_empty() || !served {
                continue;
            }
            let key = name(group, version);
            wanted.entry(key).or_insert_with(|| {
                object(
                    group,
                    version,
                    CRD_GROUP_PRIORITY,
                    CRD_VERSION_PRIORITY,
                    CONTINUOUSLY,
                )
            });
        }
    }
    wanted
}

/// A local APIService with its managed label.
fn object(group: &str, version: &str, gp: i64, vp: i64, managed: &str) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "APIService",
        "metadata": {
            "name": name(group, version),
            "labels": {MANAGED_LABEL: managed},
        },
        "spec": local_spec(group, version, gp, vp),
    })
}

/// The value of the managed label of a stored APIService (`None` when it is not managed).
pub(crate) fn managed(obj: &Value) -> Option<&str> {
    crate::meta::labels(obj)
        .and_then(|l| l.get(MANAGED_LABEL))
        .and_then(Value::as_str)
        .filter(|v| *v == ON_START || *v == CONTINUOUSLY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_builtin_group_version_has_priorities() {
        let registry = Registry::with_builtins();
        for info in registry.all() {
            assert!(
                priorities(&info.group, &info.version).is_some(),
                "{}/{} has no APIService priority",
                info.group,
                info.version
            );
        }
        let snapshot = Snapshot {
            revision: 0,
            objects: imbl::OrdMap::new(),
        };
        let wanted = desired(&registry, &snapshot);
        assert_eq!(wanted["v1."]["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(wanted["v1."]["spec"]["group"], "");
        assert_eq!(wanted["v2.autoscaling"]["spec"]["versionPriority"], 30);
        assert_eq!(
            wanted["v1.apps"]["metadata"]["labels"][MANAGED_LABEL],
            ON_START
        );
        let errs = super::super::validate_api_service(&wanted["v1."]);
        assert!(errs.is_empty(), "{errs:?}");
    }
}
