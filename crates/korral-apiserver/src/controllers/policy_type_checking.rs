//! The ValidatingAdmissionPolicy status controller (upstream's
//! `validatingadmissionpolicy-status-controller` of kube-controller-manager): every policy
//! whose `metadata.generation` is past its `status.observedGeneration` has its expressions
//! type-checked against the kinds it matches, and `status.observedGeneration` and
//! `status.typeChecking` written through the `/status` write pipeline.
//!
//! What is checked, as upstream's `TypeChecker` does: each `spec.validations[i].expression`
//! and its `messageExpression` (not audit annotations, match conditions or variables
//! themselves), once per matched kind, with `object` and `oldObject` typed from the kind's
//! published OpenAPI schema, `params` typed from `spec.paramKind`'s schema (`dyn` when it has
//! none; undeclared without a `paramKind`), `request` and `namespaceObject` with upstream's
//! hand-written types, and `variables` holding the policy's variables with the types their
//! expressions have (only primitive types, lists and maps of them; anything else is `dyn`).
//!
//! The matched kinds come from `spec.matchConstraints.resourceRules`: a rule with a wildcard
//! group or version is skipped, wildcard resources and subresources are ignored, and at most
//! ten kinds per rule are resolved (the rest are not checked). Kinds without a schema are not
//! checked. Each kind's errors read `<group>/<version>, Kind=<kind>: <cel-go issues>` followed
//! by a newline, and the kinds' texts of one expression are joined with a newline. A policy
//! without warnings gets `typeChecking: {}`. The warnings never change how a policy admits.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::admission::declarations;
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::meta;
use crate::objects::{Objects, Part, WriteOptions};
use crate::registry::Registry;
use crate::storage::collection_prefix;
use crate::validation::cel::check::{self, Ty, schema};
use crate::validation::cel::compile::{env, parse_in};

/// The group of the policies.
const GROUP: &str = "admissionregistration.k8s.io";
/// Their resource.
const RESOURCE: &str = "validatingadmissionpolicies";
/// The controller's name: its field manager and service account, as upstream's.
const CONTROLLER: &str = "validatingadmissionpolicy-status-controller";
/// The most kinds one resource rule contributes (upstream's `maxTypesToCheck`).
const MAX_TYPES_TO_CHECK: usize = 10;
/// The prefix of the component schemas' references in an OpenAPI v3 document.
const COMPONENTS: &str = "#/components/schemas/";
/// Models upstream publishes as a `oneOf` without a type, which its checker does not expose
/// (fields of these types are undefined to it); the built-in models here mark them
/// `x-kubernetes-int-or-string` instead.
const UNTYPED_MODELS: [&str; 2] = [
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
];
/// The schema that stands for an [`UNTYPED_MODELS`] reference: no type, nothing exposed.
static UNTYPED: Value = Value::Null;

/// Whether a change at storage key `key` may need a policy's status written.
pub(super) fn concerns(key: &str) -> bool {
    static PREFIX: LazyLock<String> = LazyLock::new(|| collection_prefix(GROUP, RESOURCE, None));
    key.starts_with(PREFIX.as_str())
}

/// Type-checks every policy whose generation was not observed yet and writes its status.
pub(super) async fn reconcile(objects: &Objects) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", RESOURCE) else {
        return Ok(());
    };
    let snapshot = objects.storage().snapshot();
    let due: Vec<Value> = snapshot
        .range(&collection_prefix(GROUP, RESOURCE, None), None)
        .filter(|(_, p)| meta::generation(p) > observed_generation(p))
        .map(|(_, p)| (**p).clone())
        .collect();
    let options = WriteOptions {
        field_manager: Some(CONTROLLER.to_string()),
        requester: Some(UserInfo::service_account("kube-system", CONTROLLER, "")),
        ..WriteOptions::default()
    };
    let mut failure = None;
    for policy in due {
        let seen = meta::generation(&policy);
        let warnings = expression_warnings(objects.registry(), &policy);
        tracing::debug!(
            policy = meta::name(&policy),
            warnings = warnings.len(),
            "type-checked admission policy"
        );
        // Upstream applies these two fields (server-side apply, forced); applying
        // `typeChecking: {}` here would drop the emptied map, so they are set by an update.
        let status = status_of(seen, &warnings);
        let result = objects
            .update_with(
                &info,
                None,
                meta::name(&policy),
                meta::uid(&policy),
                Part::Status,
                &options,
                move |obj| set_status(obj, seen, &status),
            )
            .await;
        match result {
            Ok(_) => {}
            Err(error) if error.code == 404 => {}
            Err(error) => failure = Some(error),
        }
    }
    failure.map_or(Ok(()), Err)
}

fn observed_generation(obj: &Value) -> i64 {
    meta::path(obj, "status.observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The status fields the controller writes for generation `seen`: `typeChecking` is `{}`
/// when there is nothing to warn about.
fn status_of(seen: i64, warnings: &[Value]) -> Value {
    let type_checking = if warnings.is_empty() {
        json!({})
    } else {
        json!({ "expressionWarnings": warnings })
    };
    json!({"observedGeneration": seen, "typeChecking": type_checking})
}

/// Sets the `status` fields of `status_of` on `obj`, unless its spec moved on past generation
/// `seen` since (the newer generation is checked on its own).
fn set_status(obj: &mut Value, seen: i64, fields: &Value) {
    if meta::generation(obj) != seen {
        return;
    }
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let (Some(status), Some(fields)) = (status.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            status.insert(k.clone(), v.clone());
        }
    }
}

/// A kind a policy matches, with the type of its objects (`None`: its schema exposes
/// nothing, so `object` is `dyn`).
struct Matched {
    group: String,
    version: String,
    kind: String,
    ty: Option<Ty>,
}

impl Matched {
    /// Upstream's `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`.
    fn label(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// The type-checking warnings of `policy` (`ExpressionWarning`s: `fieldRef` and `warning`),
/// in the order of its validations.
pub(super) fn expression_warnings(registry: &Registry, policy: &Value) -> Vec<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let kinds = matched_kinds(registry, spec);
    let params = params_type(registry, spec);
    // A variable that does not compile is `dyn`.
    let variables = declarations::variables(spec);
    let envs: Vec<(String, Vec<(&'static str, Ty)>)> = kinds
        .iter()
        .map(|k| (k.label(), environment(k, params.as_ref(), &variables)))
        .collect();
    let mut warnings = Vec::new();
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, v) in validations.iter().enumerate() {
        for field in ["expression", "messageExpression"] {
            let source = v.get(field).and_then(Value::as_str).unwrap_or("");
            if field == "messageExpression" && source.is_empty() {
                continue;
            }
            let text = check_expression(source, &envs);
            if !text.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": text,
                }));
            }
        }
    }
    warnings
}

/// The issues of `source` in each kind's environment, worded as upstream's
/// `TypeCheckingResults`; empty when there are none.
fn check_expression(source: &str, envs: &[(String, Vec<(&str, Ty)>)]) -> String {
    if envs.is_empty() {
        return String::new();
    }
    let issues: Vec<Option<String>> = match parse_in(env(), source) {
        Err(error) => envs.iter().map(|_| Some(error.to_string())).collect(),
        Ok(program) => envs
            .iter()
            .map(|(_, vars)| check::check(&program, source, vars).err())
            .collect(),
    };
    envs.iter()
        .zip(issues)
        .filter_map(|((label, _), issue)| issue.map(|i| format!("{label}: {i}\n")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The variables of the expressions checked against kind `k`.
fn environment(
    k: &Matched,
    params: Option<&Ty>,
    variables: &[declarations::Variable<'_>],
) -> Vec<(&'static str, Ty)> {
    let object = k.ty.clone().unwrap_or(Ty::Dyn);
    let composed = declarations::compose(object.clone(), params, variables);
    let fields = (!variables.is_empty()).then_some(&composed.fields);
    declarations::environment(object, params, fields, true)
}

/// The kinds `spec.matchConstraints.resourceRules` name, sorted by group, version and kind
/// (upstream's `typesToCheck`), with their object types; kinds without a schema left out.
fn matched_kinds(registry: &Registry, spec: &Value) -> Vec<Matched> {
    let rules = meta::path(spec, "matchConstraints.resourceRules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut gvks = BTreeSet::new();
    'rules: for rule in rules {
        let strings = |field: &str| meta::strings(rule.get(field));
        let mut groups = strings("apiGroups");
        let mut versions = strings("apiVersions");
        if groups.iter().chain(&versions).any(|g| g.contains('*')) {
            continue;
        }
        let mut resources: Vec<String> = strings("resources")
            .into_iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        groups.sort();
        versions.sort();
        resources.sort();
        let mut count = 0;
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some(info) = registry.get(group, version, resource) else {
                        continue;
                    };
                    gvks.insert((group.clone(), version.clone(), info.kind.clone()));
                    count += 1;
                    if count == MAX_TYPES_TO_CHECK {
                        break 'rules;
                    }
                }
            }
        }
    }
    gvks.into_iter()
        .filter_map(|(group, version, kind)| {
            let ty = kind_type(registry, &group, &version, &kind)?;
            Some(Matched {
                group,
                version,
                kind,
                ty,
            })
        })
        .collect()
}

/// The type of `params`: `None` without a `paramKind` (then `params` is undeclared), `dyn`
/// when its kind has no schema.
fn params_type(registry: &Registry, spec: &Value) -> Option<Ty> {
    let param_kind = spec.get("paramKind").filter(|p| p.is_object())?;
    let api_version = param_kind
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = param_kind.get("kind").and_then(Value::as_str).unwrap_or("");
    // Upstream's `ParseGroupVersion`: `v1`, `group/version`; anything else is no paramKind.
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [""] => ("", ""),
        [version] => ("", *version),
        [group, version] => (*group, *version),
        _ => return None,
    };
    if group.is_empty() && version.is_empty() && kind.is_empty() {
        return None;
    }
    Some(
        kind_type(registry, group, version, kind)
            .flatten()
            .unwrap_or(Ty::Dyn),
    )
}

/// The type of the objects of a kind from the schema the server publishes for it (the
/// OpenAPI v3 document of its group version, as upstream's schema resolver reads it), named
/// after the kind; `None` when the kind has no schema, `Some(None)` when the schema exposes
/// nothing.
fn kind_type(registry: &Registry, group: &str, version: &str, kind: &str) -> Option<Option<Ty>> {
    let served = registry
        .resources_in(group, version)
        .into_iter()
        .find(|r| r.kind == kind && !r.resource.contains('/'))?;
    // A built-in kind without a model is published as a permissive placeholder: not a schema.
    if !served.is_custom()
        && crate::openapi_builtin::schema(&crate::openapi::model_name(group, version, kind, false))
            .is_none()
    {
        return None;
    }
    let (doc, _) = crate::openapi::v3_group_version_with_hash(registry, group, version)?;
    let schemas = doc.get("components")?.get("schemas")?.as_object()?;
    let root = schemas
        .values()
        .find(|s| declares_kind(s, group, version, kind))?;
    let resolve = |r: &str| -> Option<&Value> {
        let name = r.strip_prefix(COMPONENTS)?;
        if UNTYPED_MODELS.contains(&name) {
            return Some(&UNTYPED);
        }
        schemas.get(name)
    };
    // Upstream appends a number of its own to the kind; this one is always 0.
    Some(schema::resource_type(root, &format!("{kind}0"), &resolve))
}

/// Whether a component schema's `x-kubernetes-group-version-kind` names this kind.
fn declares_kind(s: &Value, group: &str, version: &str, kind: &str) -> bool {
    s.get("x-kubernetes-group-version-kind")
        .and_then(Value::as_array)
        .is_some_and(|gvks| {
            gvks.iter().any(|g| {
                g.get("group").and_then(Value::as_str) == Some(group)
                    && g.get("version").and_then(Value::as_str) == Some(version)
                    && g.get("kind").and_then(Value::as_str) == Some(kind)
            })
        })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn policy(rules: Value, validations: Value) -> Value {
        json!({
            "metadata": {"name": "p", "generation": 1},
            "spec": {
                "matchConstraints": {"resourceRules": rules},
                "validations": validations,
            },
        })
    }

    fn deployments() -> Value {
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"],
                "operations": ["CREATE"]}])
    }

    fn warnings_of(policy: &Value) -> Vec<(String, String)> {
        expression_warnings(&Registry::with_builtins(), policy)
            .iter()
            .map(|w| {
                (
                    w["fieldRef"].as_str().unwrap_or("").to_string(),
                    w["warning"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    fn one(rules: Value, expression: &str) -> Vec<(String, String)> {
        warnings_of(&policy(rules, json!([{"expression": expression}])))
    }

    #[test]
    fn undefined_field_of_a_deployment() {
        assert_eq!(
            one(deployments(), "object.replicas > 1"),
            [(
                "spec.validations[0].expression".to_string(),
                "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n \
                 | object.replicas > 1\n | ......^\n"
                    .to_string()
            )]
        );
    }

    #[test]
    fn operator_without_an_overload() {
        assert_eq!(
            one(deployments(), "object.spec.replicas > 'one'"),
            [(
                "spec.validations[0].expression".to_string(),
                "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for \
                 '_>_' applied to '(int, string)'\n | object.spec.replicas > 'one'\n \
                 | .....................^\n"
                    .to_string()
            )]
        );
    }

    #[test]
    fn each_matched_kind_is_checked_and_the_texts_joined() {
        let rules = json!([{"apiGroups": ["apps"], "apiVersions": ["v1"],
                            "resources": ["replicasets", "deployments"]}]);
        let issue = "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n \
                     | ......^\n";
        assert_eq!(
            one(rules, "object.replicas > 1"),
            [(
                "spec.validations[0].expression".to_string(),
                format!("apps/v1, Kind=Deployment: {issue}\napps/v1, Kind=ReplicaSet: {issue}")
            )]
        );
        // A field only one of them has: only the other one warns.
        let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"],
                            "resources": ["configmaps", "secrets"]}]);
        let found = one(rules, "has(object.stringData)");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].1.starts_with(
                "/v1, Kind=ConfigMap: ERROR: <input>:1:4: undefined field 'stringData'"
            ),
            "{found:?}"
        );
    }

    #[test]
    fn syntax_errors_are_reported_for_each_kind() {
        let rules = json!([{"apiGroups": ["apps"], "apiVersions": ["v1"],
                            "resources": ["deployments", "replicasets"]}]);
        let found = one(rules, "object.spec.replicas >");
        assert_eq!(found.len(), 1);
        let text = &found[0].1;
        assert!(
            text.starts_with("apps/v1, Kind=Deployment: ERROR: <input>:"),
            "{text}"
        );
        assert!(
            text.contains("\n\napps/v1, Kind=ReplicaSet: ERROR: <input>:"),
            "{text}"
        );
    }

    #[test]
    fn wildcards_are_not_checked() {
        for rules in [
            json!([{"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["deployments"]}]),
            json!([{"apiGroups": ["apps"], "apiVersions": ["*"], "resources": ["deployments"]}]),
            json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*"]}]),
            json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments/status"]}]),
            json!([{"apiGroups": ["example.org"], "apiVersions": ["v1"], "resources": ["widgets"]}]),
        ] {
            assert_eq!(one(rules.clone(), "object.replicas > 1"), [], "{rules}");
        }
        // A wildcard resource beside a named one: the named one is checked.
        let rules = json!([{"apiGroups": ["apps"], "apiVersions": ["v1"],
                            "resources": ["*", "deployments"]}]);
        assert_eq!(one(rules, "object.replicas > 1").len(), 1);
    }

    #[test]
    fn at_most_ten_kinds_per_rule() {
        let resources = [
            "configmaps",
            "endpoints",
            "events",
            "limitranges",
            "namespaces",
            "nodes",
            "persistentvolumeclaims",
            "persistentvolumes",
            "pods",
            "podtemplates",
            "replicationcontrollers",
            "secrets",
        ];
        let rules = json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": resources}]);
        let found = one(rules, "object.nope");
        assert_eq!(found.len(), 1);
        let checked = found[0].1.matches("/v1, Kind=").count();
        assert_eq!(checked, 10, "{found:?}");
        assert!(
            !found[0].1.contains("Kind=Secret"),
            "sorted, the last two are left out"
        );
    }

    #[test]
    fn a_clean_policy_has_no_warnings_and_an_empty_type_checking() {
        let p = policy(
            deployments(),
            json!([{"expression": "object.spec.replicas <= 5 && object.metadata.name != ''",
                    "messageExpression": "'replicas: ' + string(object.spec.replicas)"}]),
        );
        assert_eq!(warnings_of(&p), []);
        let mut stored = p.clone();
        stored["status"] = json!({"conditions": []});
        set_status(&mut stored, 1, &status_of(1, &[]));
        assert_eq!(
            stored["status"],
            json!({"conditions": [], "observedGeneration": 1, "typeChecking": {}})
        );
        // A newer generation than the one checked is left for its own check.
        let mut newer = p;
        newer["metadata"]["generation"] = json!(2);
        set_status(&mut newer, 1, &status_of(1, &[]));
        assert_eq!(newer.get("status"), None);
    }

    #[test]
    fn message_expressions_variables_params_and_request() {
        let p = json!({
            "metadata": {"name": "p", "generation": 1},
            "spec": {
                "matchConstraints": {"resourceRules": deployments()},
                "variables": [
                    {"name": "replicas", "expression": "object.spec.replicas"},
                    {"name": "twice", "expression": "variables.replicas * 2"},
                    {"name": "spec", "expression": "object.spec"},
                ],
                "validations": [
                    {"expression": "variables.twice < 10 && variables.spec.nope == 1",
                     "messageExpression": "variables.replicas + 'x'"},
                    {"expression": "variables.missing"},
                    {"expression": "request.operation == 'CREATE' && request.userInfo.username != ''\
                                    && namespaceObject.metadata.name != ''"},
                    {"expression": "request.nope"},
                    {"expression": "params.x"},
                    {"expression": "authorizer.group('apps').resource('deployments').check('get').allowed()"},
                    {"expression": "authorizer.requestResource.subresource('status').check('patch').allowed()",
                     "messageExpression": "authorizer.serviceAccount('ns', 'sa').path('/x').check('get').reason()"},
                    {"expression": "authorizer.group('apps').check('get').allowed()"},
                ],
            },
        });
        let found = warnings_of(&p);
        let refs: Vec<&str> = found.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            refs,
            [
                "spec.validations[0].messageExpression",
                "spec.validations[1].expression",
                "spec.validations[3].expression",
                "spec.validations[4].expression",
                "spec.validations[7].expression",
            ]
        );
        assert!(
            found[4].1.contains(
                "found no matching overload for 'check' applied to 'kubernetes.authorization.GroupCheck.(string)'"
            ),
            "{found:?}"
        );
        assert!(
            found[0]
                .1
                .contains("found no matching overload for '_+_' applied to '(int, string)'"),
            "{found:?}"
        );
        assert!(
            found[1].1.contains("undefined field 'missing'"),
            "{found:?}"
        );
        assert!(found[2].1.contains("undefined field 'nope'"), "{found:?}");
        assert!(
            found[3]
                .1
                .contains("undeclared reference to 'params' (in container '')"),
            "{found:?}"
        );

        // With a paramKind, params has its kind's type.
        let mut with_params = p.clone();
        with_params["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        with_params["spec"]["validations"] = json!([
            {"expression": "params.data['max'] == string(object.spec.replicas)"},
            {"expression": "params.datum == 1"},
        ]);
        let found = warnings_of(&with_params);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "spec.validations[1].expression");
        assert!(found[0].1.contains("undefined field 'datum'"), "{found:?}");
    }

    #[test]
    fn int_or_string_and_quantity_fields_are_not_exposed_as_upstream() {
        let found = one(
            deployments(),
            "object.spec.template.spec.containers.all(c, has(c.resources.limits))",
        );
        assert_eq!(found.len(), 1);
        assert!(found[0].1.contains("undefined field 'limits'"), "{found:?}");
        // Nested types carry the kind's type name.
        let found = one(deployments(), "object.spec == 1");
        assert!(
            found[0].1.contains("'(Deployment0.spec, int)'"),
            "{found:?}"
        );
    }
}
