//! The static tests of operator-sdk's `olm` suite and the spec check of `basic-check-spec`,
//! each a function of the bundle's CSV, CRDs and example custom resources.

use serde_json::Value;

use super::bundle::{Bundle, describe, group_version, owned_of};
use super::report::TestResult;

/// `olm-bundle-validation`: the checks of `korral bundle validate`.
pub fn bundle_validation(bundle: &Bundle) -> TestResult {
    let mut result = TestResult::pass("olm-bundle-validation");
    result.log_line(format!("Validating bundle {}", bundle.dir.display()));
    match crate::bundle::validate_dir(&bundle.dir) {
        Ok(problems) => {
            for problem in problems {
                result.fail(problem.to_string());
            }
        }
        Err(err) => result.error(format!("validating the bundle: {err:#}")),
    }
    result
}

/// The spec check of `basic-check-spec`: every custom resource has a `spec`.
pub fn check_spec(result: &mut TestResult, crs: &[Value]) {
    for cr in crs {
        if cr.get("spec").is_none_or(Value::is_null) {
            result.fail(format!(
                "error spec does not exist for the custom resource {}",
                describe(cr)
            ));
        }
    }
}

/// The CRD of a custom resource (same group and kind) among `crds`.
fn crd_of<'a>(cr: &Value, crds: &'a [Value]) -> Option<&'a Value> {
    let (group, _) = group_version(cr);
    crds.iter().find(|crd| {
        crd["spec"]["group"].as_str() == Some(group)
            && crd["spec"]["names"]["kind"].as_str().is_some()
            && crd["spec"]["names"]["kind"] == cr["kind"]
    })
}

/// The version entry `name` of a CRD.
fn crd_version<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    crd["spec"]["versions"].as_array()?.iter().find(|v| {
        v["name"]
            .as_str()
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
    })
}

/// `olm-crds-have-validation`: every owned CRD version has an `openAPIV3Schema` with `spec`
/// (and, when it has a status subresource, `status`) properties, and every top-level spec and
/// status field of the example custom resources is in its version's schema.
pub fn crds_have_validation(csv: &Value, crds: &[Value], crs: &[Value]) -> TestResult {
    let mut result = TestResult::pass("olm-crds-have-validation");
    result.log_line(format!(
        "Loaded {} Custom Resources from alm-examples",
        crs.len()
    ));
    for entry in owned_of(csv) {
        let name = entry["name"].as_str().unwrap_or("?");
        let version = entry["version"].as_str().unwrap_or("?");
        let Some(crd) = crds.iter().find(|c| c["metadata"]["name"] == name) else {
            result.fail(format!(
                "owned CRD {name} has no CustomResourceDefinition in the bundle"
            ));
            continue;
        };
        let Some(v) = crd_version(crd, version) else {
            result.fail(format!("CRD {name} has no version {version}"));
            continue;
        };
        let schema = &v["schema"]["openAPIV3Schema"];
        if !schema.is_object() {
            result.fail(format!(
                "CRD {name} version {version} has no openAPIV3Schema"
            ));
            result.suggest(format!("Add CRD validation for {name}/{version}"));
            continue;
        }
        if !schema["properties"]["spec"]["properties"].is_object()
            && schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] != true
        {
            result.fail(format!(
                "CRD {name} version {version}: openAPIV3Schema has no spec properties"
            ));
            result.suggest(format!(
                "Add CRD validation for the spec of {name}/{version}"
            ));
        }
        let has_status_subresource = v["subresources"]["status"].is_object();
        if !schema["properties"]["status"]["properties"].is_object()
            && schema["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] != true
        {
            let message =
                format!("CRD {name} version {version}: openAPIV3Schema has no status properties");
            if has_status_subresource {
                result.fail(message);
            } else {
                result.suggest(message);
            }
        }
    }
    for cr in crs {
        let Some(crd) = crd_of(cr, crds) else {
            result.fail(format!(
                "no CRD in the bundle for custom resource {} ({})",
                describe(cr),
                cr["apiVersion"].as_str().unwrap_or("?")
            ));
            continue;
        };
        let (_, version) = group_version(cr);
        let kind = cr["kind"].as_str().unwrap_or("?");
        let Some(v) = crd_version(crd, version) else {
            result.fail(format!(
                "custom resource {} uses version {version}, which its CRD does not have",
                describe(cr)
            ));
            continue;
        };
        let schema = &v["schema"]["openAPIV3Schema"];
        if !schema.is_object() {
            continue; // reported above for owned CRDs
        }
        for block in ["spec", "status"] {
            let Some(fields) = cr[block].as_object() else {
                continue;
            };
            let block_schema = &schema["properties"][block];
            if block_schema["x-kubernetes-preserve-unknown-fields"] == true {
                continue;
            }
            for key in fields.keys() {
                if block_schema["properties"].get(key).is_none() {
                    result.fail(format!(
                        "{block} field `{key}` of custom resource {} is not in the schema of {kind}/{version}",
                        describe(cr)
                    ));
                    result.suggest(format!(
                        "Add CRD validation for {block} field `{key}` in {kind}/{version}"
                    ));
                }
            }
        }
    }
    result
}

/// `olm-crds-have-resources`: every owned CRD lists the `resources` (kinds) it creates.
pub fn crds_have_resources(csv: &Value) -> TestResult {
    let mut result = TestResult::pass("olm-crds-have-resources");
    result.log_line(format!(
        "Loaded ClusterServiceVersion: {}",
        csv["metadata"]["name"].as_str().unwrap_or("?")
    ));
    for (i, entry) in owned_of(csv).iter().enumerate() {
        if entry["resources"].as_array().is_none_or(Vec::is_empty) {
            let name = entry["name"].as_str().unwrap_or("?");
            result.fail(format!(
                "owned CRD {name} does not have resources specified (spec.customresourcedefinitions.owned[{i}].resources)"
            ));
            result.suggest(format!(
                "List the kinds a {} creates in spec.customresourcedefinitions.owned[{i}].resources of the base CSV (e.g. {{kind: Deployment, version: v1}})",
                entry["kind"].as_str().unwrap_or(name)
            ));
        }
    }
    result
}

/// Which descriptors a descriptor test checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Descriptors {
    /// `specDescriptors` against the examples' `spec`.
    Spec,
    /// `statusDescriptors` against the examples' `status`.
    Status,
}

impl Descriptors {
    fn block(self) -> &'static str {
        match self {
            Descriptors::Spec => "spec",
            Descriptors::Status => "status",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Descriptors::Spec => "specDescriptors",
            Descriptors::Status => "statusDescriptors",
        }
    }
}

/// Whether a descriptor `path` covers the top-level field `key` (`size`, or a path below it
/// such as `resources.limits`).
fn covers(path: &str, key: &str) -> bool {
    path == key
        || path
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// `olm-spec-descriptors` / `olm-status-descriptors`: every top-level spec (status) field of the
/// example custom resources has a spec (status) descriptor in the CSV's owned entry of its kind.
pub fn descriptors(csv: &Value, crs: &[Value], which: Descriptors) -> TestResult {
    let name = match which {
        Descriptors::Spec => "olm-spec-descriptors",
        Descriptors::Status => "olm-status-descriptors",
    };
    let mut result = TestResult::pass(name);
    result.log_line(format!(
        "Loaded ClusterServiceVersion: {}",
        csv["metadata"]["name"].as_str().unwrap_or("?")
    ));
    result.log_line(format!(
        "Loaded {} Custom Resources from alm-examples",
        crs.len()
    ));
    let owned = owned_of(csv);
    let block = which.block();
    for cr in crs {
        let (group, version) = group_version(cr);
        let candidates: Vec<&Value> = owned
            .iter()
            .filter(|o| o["kind"] == cr["kind"])
            .filter(|o| {
                o["name"]
                    .as_str()
                    .is_none_or(|n| n.ends_with(&format!(".{group}")))
            })
            .collect();
        let entry = candidates
            .iter()
            .find(|o| o["version"] == version)
            .or(candidates.first());
        let Some(entry) = entry else {
            result.fail(format!(
                "failed to find an owned CRD in the CSV for custom resource {} ({})",
                describe(cr),
                cr["apiVersion"].as_str().unwrap_or("?")
            ));
            continue;
        };
        let crd_name = entry["name"].as_str().unwrap_or("?");
        let fields = match cr.get(block) {
            Some(Value::Object(fields)) => fields.clone(),
            None | Some(Value::Null) => {
                match which {
                    Descriptors::Spec => result.fail(format!(
                        "custom resource {} has no spec",
                        describe(cr)
                    )),
                    Descriptors::Status => result.suggest(format!(
                        "custom resource {} has no status in alm-examples, so no status descriptor is checked; objects whose state may vary from the desired intent should have a spec and a status",
                        describe(cr)
                    )),
                }
                continue;
            }
            Some(_) => {
                result.fail(format!(
                    "the {block} of custom resource {} is not an object",
                    describe(cr)
                ));
                continue;
            }
        };
        let paths: Vec<&str> = entry[which.field()]
            .as_array()
            .map(|ds| ds.iter().filter_map(|d| d["path"].as_str()).collect())
            .unwrap_or_default();
        for key in fields.keys() {
            if !paths.iter().any(|p| covers(p, key)) {
                result.fail(format!(
                    "{block} field `{key}` of custom resource {} does not have a {block} descriptor (no {} entry with path `{key}` for {crd_name})",
                    describe(cr),
                    which.field()
                ));
                result.suggest(format!(
                    "Add a {block} descriptor for {key} to {crd_name} in spec.customresourcedefinitions.owned"
                ));
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scorecard::report::State;
    use serde_json::json;

    fn crd(schema: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "memcacheds.cache.example.com"},
            "spec": {
                "group": "cache.example.com",
                "names": {"kind": "Memcached", "plural": "memcacheds"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}}}],
            },
        })
    }

    fn good_schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"nodes": {"type": "array"}}},
        }})
    }

    fn csv(owned: Value) -> Value {
        json!({"metadata": {"name": "memcached-operator.v0.1.0"},
               "spec": {"customresourcedefinitions": {"owned": [owned]}}})
    }

    fn owned_entry() -> Value {
        json!({
            "name": "memcacheds.cache.example.com", "version": "v1", "kind": "Memcached",
            "resources": [{"kind": "Deployment", "version": "v1"}],
            "specDescriptors": [{"path": "size", "displayName": "Size"}],
            "statusDescriptors": [{"path": "nodes", "displayName": "Nodes"}],
        })
    }

    fn cr(spec: Value) -> Value {
        json!({"apiVersion": "cache.example.com/v1", "kind": "Memcached",
               "metadata": {"name": "memcached-sample"}, "spec": spec})
    }

    #[test]
    fn check_spec_passes_with_a_spec_and_fails_without() {
        let mut result = TestResult::pass("basic-check-spec");
        check_spec(&mut result, &[cr(json!({"size": 1}))]);
        assert_eq!(result.state, State::Pass);
        let mut no_spec = cr(json!({}));
        no_spec.as_object_mut().map(|o| o.remove("spec"));
        check_spec(&mut result, &[no_spec]);
        assert_eq!(result.state, State::Fail);
        assert_eq!(
            result.errors,
            ["error spec does not exist for the custom resource Memcached memcached-sample"]
        );
    }

    #[test]
    fn crds_have_validation_passes_on_a_complete_schema() {
        let result = crds_have_validation(
            &csv(owned_entry()),
            &[crd(good_schema())],
            &[cr(json!({"size": 3}))],
        );
        assert_eq!(result.state, State::Pass, "{:?}", result.errors);
    }

    #[test]
    fn crds_have_validation_names_a_field_missing_from_the_schema() {
        let result = crds_have_validation(
            &csv(owned_entry()),
            &[crd(good_schema())],
            &[cr(json!({"size": 3, "replicas": 2}))],
        );
        assert_eq!(result.state, State::Fail);
        assert_eq!(result.errors.len(), 1, "{:?}", result.errors);
        assert!(
            result.errors[0].contains("spec field `replicas`"),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn crds_have_validation_fails_without_a_schema_or_spec_properties() {
        let no_schema = crd(Value::Null);
        let result = crds_have_validation(&csv(owned_entry()), &[no_schema], &[]);
        assert_eq!(result.state, State::Fail);
        assert!(
            result.errors[0].contains("no openAPIV3Schema"),
            "{:?}",
            result.errors
        );

        let bare = crd(json!({"type": "object"}));
        let result = crds_have_validation(&csv(owned_entry()), &[bare], &[]);
        assert_eq!(result.state, State::Fail);
        assert!(
            result
                .errors
                .iter()
                .any(|e| e.contains("no spec properties")),
            "{:?}",
            result.errors
        );
        assert!(
            result
                .errors
                .iter()
                .any(|e| e.contains("no status properties")),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn crds_have_resources_passes_with_resources_and_fails_without() {
        assert_eq!(crds_have_resources(&csv(owned_entry())).state, State::Pass);
        let mut entry = owned_entry();
        entry.as_object_mut().map(|o| o.remove("resources"));
        let result = crds_have_resources(&csv(entry));
        assert_eq!(result.state, State::Fail);
        assert!(
            result.errors[0].contains("memcacheds.cache.example.com"),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn spec_descriptors_pass_when_every_field_has_one() {
        let result = descriptors(
            &csv(owned_entry()),
            &[cr(json!({"size": 3}))],
            Descriptors::Spec,
        );
        assert_eq!(result.state, State::Pass, "{:?}", result.errors);
    }

    #[test]
    fn spec_descriptors_name_the_field_without_one() {
        let result = descriptors(
            &csv(owned_entry()),
            &[cr(json!({"size": 3, "image": "memcached:1.6"}))],
            Descriptors::Spec,
        );
        assert_eq!(result.state, State::Fail);
        assert_eq!(result.errors.len(), 1, "{:?}", result.errors);
        assert!(
            result.errors[0].starts_with("spec field `image`"),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn spec_descriptors_fail_for_a_kind_the_csv_does_not_own() {
        let mut other = cr(json!({"size": 1}));
        other["kind"] = json!("Redis");
        let result = descriptors(&csv(owned_entry()), &[other], Descriptors::Spec);
        assert_eq!(result.state, State::Fail);
        assert!(result.errors[0].contains("Redis"), "{:?}", result.errors);
    }

    #[test]
    fn status_descriptors_check_status_fields_and_suggest_when_there_is_none() {
        let result = descriptors(
            &csv(owned_entry()),
            &[cr(json!({"size": 3}))],
            Descriptors::Status,
        );
        assert_eq!(result.state, State::Pass);
        assert_eq!(result.suggestions.len(), 1);

        let mut with_status = cr(json!({"size": 3}));
        with_status["status"] = json!({"nodes": [], "phase": "Ready"});
        let result = descriptors(&csv(owned_entry()), &[with_status], Descriptors::Status);
        assert_eq!(result.state, State::Fail);
        assert_eq!(result.errors.len(), 1, "{:?}", result.errors);
        assert!(
            result.errors[0].starts_with("status field `phase`"),
            "{:?}",
            result.errors
        );
    }

    #[test]
    fn a_nested_descriptor_path_covers_its_top_level_field() {
        assert!(covers("resources.limits", "resources"));
        assert!(covers("containers[0]", "containers"));
        assert!(!covers("sizes", "size"));
    }
}
