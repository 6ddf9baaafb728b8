//! `admissionregistration.k8s.io/v1`: webhook configurations, Validating- and
//! MutatingAdmissionPolicies (see [`mutating`]),
//! with upstream's defaults (`pkg/apis/admissionregistration/v1/defaults.go`) and validation
//! (`pkg/apis/admissionregistration/validation`).

use k8s_openapi::api::admissionregistration::v1 as api;
use serde_json::{Map, Value, json};

use super::lists::{APPLY_CONDITIONS, ListAt, ListRule};
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use super::{API_EXTENSIONS, KindDef};
use base64::Engine;

use crate::admission::cel::{self, Returns};
use crate::admission::declarations;
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::cel::check::Ty;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1035_label, dns1123_subdomain, go_string_slice, index, invalid_rendered,
    path_segment_name, validate_qualified_name,
};
use crate::validation::selectors::validate_label_selector;

mod mutating;

/// The group these kinds are served in.
const GROUP: &str = "admissionregistration.k8s.io";

/// Webhook configurations' `webhooks`, keyed by `name` (a patch or apply of one webhook, a
/// CA bundle injector's say, leaves the others as they are), and their match conditions.
const WEBHOOK_LISTS: &[ListAt] = &[
    ListAt {
        path: "webhooks",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "webhooks.matchConditions",
        rule: ListRule::keyed(&["name"]),
    },
];

/// ValidatingAdmissionPolicy: match conditions and variables keyed by `name`; its status
/// conditions keyed by `type` for applies only.
const VALIDATING_POLICY_LISTS: &[ListAt] = &[
    ListAt {
        path: "spec.matchConditions",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "spec.variables",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "status.conditions",
        rule: APPLY_CONDITIONS,
    },
];

/// ValidatingAdmissionPolicyBinding `spec.validationActions`: a set for applies only.
const VALIDATING_BINDING_LISTS: &[ListAt] = &[ListAt {
    path: "spec.validationActions",
    rule: ListRule::ApplySet,
}];

/// MutatingAdmissionPolicy `spec.matchConditions`, keyed by `name` (its variables are atomic).
const MUTATING_POLICY_LISTS: &[ListAt] = &[ListAt {
    path: "spec.matchConditions",
    rule: ListRule::keyed(&["name"]),
}];

/// The kinds of `admissionregistration.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            GROUP,
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            Webhooks { mutating: false },
        )
        .lists(WEBHOOK_LISTS)
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .schema::<api::ValidatingWebhookConfiguration>()
        .printer(WEBHOOKS),
        KindDef::new(
            GROUP,
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            Webhooks { mutating: true },
        )
        .lists(WEBHOOK_LISTS)
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .schema::<api::MutatingWebhookConfiguration>()
        .printer(WEBHOOKS),
        KindDef::new(
            GROUP,
            "v1",
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            Policy,
        )
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .status()
        .schema::<api::ValidatingAdmissionPolicy>()
        .lists(VALIDATING_POLICY_LISTS)
        .printer(POLICIES),
        KindDef::new(
            GROUP,
            "v1",
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            Binding,
        )
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .schema::<api::ValidatingAdmissionPolicyBinding>()
        .lists(VALIDATING_BINDING_LISTS)
        .printer(BINDINGS),
        KindDef::new(
            GROUP,
            "v1",
            "mutatingadmissionpolicies",
            "MutatingAdmissionPolicy",
            mutating::Policy,
        )
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .schema::<api::MutatingAdmissionPolicy>()
        .lists(MUTATING_POLICY_LISTS)
        // GA in v1.36, still stored as v1beta1 upstream.
        .upstream_storage_version("v1beta1")
        .printer(mutating::POLICIES),
        KindDef::new(
            GROUP,
            "v1",
            "mutatingadmissionpolicybindings",
            "MutatingAdmissionPolicyBinding",
            mutating::Binding,
        )
        .cluster_scoped()
        .category(API_EXTENSIONS)
        .generation()
        .schema::<api::MutatingAdmissionPolicyBinding>()
        // GA in v1.36, still stored as v1beta1 upstream.
        .upstream_storage_version("v1beta1")
        .printer(BINDINGS),
    ]
}

const WEBHOOKS: Printer = Printer {
    columns: &[
        Column::new(
            "Webhooks",
            "Webhooks indicates the number of webhooks in this configuration.",
        )
        .typed("integer"),
        AGE,
    ],
    cells: |obj| {
        let n = obj
            .get("webhooks")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![json!(n), age(obj)]
    },
};

const POLICIES: Printer = Printer {
    columns: &[
        Column::new(
            "Validations",
            "Validations indicates the number of validation rules defined in this configuration",
        )
        .typed("integer"),
        Column::new(
            "ParamKind",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        AGE,
    ],
    cells: |obj| {
        let n = crate::meta::path(obj, "spec.validations")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![json!(n), json!(param_kind_cell(obj)), age(obj)]
    },
};

/// A policy's `ParamKind` cell: `apiVersion/kind`, `<unset>` without one.
fn param_kind_cell(obj: &Value) -> String {
    match crate::meta::path(obj, "spec.paramKind") {
        Some(pk) if pk.is_object() => format!("{}/{}", text(pk, "apiVersion"), text(pk, "kind")),
        _ => "<unset>".to_string(),
    }
}

const BINDINGS: Printer = Printer {
    columns: &[
        Column::new(
            "PolicyName",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        Column::new(
            "ParamRef",
            "ParamRef indicates the param resource which sets the configration param",
        ),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(text(obj, "spec.policyName")),
            json!(param_ref_cell(obj)),
            age(obj),
        ]
    },
};

/// A binding's `ParamRef` cell as upstream prints it: `namespace/name` (`*/name` without a
/// namespace), else the selector in its Go (protobuf `String()`) form, else `<unset>`.
fn param_ref_cell(obj: &Value) -> String {
    let Some(pr) = crate::meta::path(obj, "spec.paramRef").filter(|p| p.is_object()) else {
        return "<unset>".to_string();
    };
    let name = text(pr, "name");
    let namespace = text(pr, "namespace");
    if !name.is_empty() {
        let namespace = if namespace.is_empty() { "*" } else { namespace };
        return format!("{namespace}/{name}");
    }
    match pr.get("selector").filter(|s| s.is_object()) {
        Some(selector) => go_label_selector(selector),
        None => "<unset>".to_string(),
    }
}

/// A `metav1.LabelSelector` as its generated Go `String()` renders it.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let expressions: String = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(e, "key"),
                text(e, "operator"),
                strings(e, "values").join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// The strategy of Validating- and MutatingWebhookConfigurations.
#[derive(Debug, Clone, Copy)]
struct Webhooks {
    /// Whether the configuration is a MutatingWebhookConfiguration (`reinvocationPolicy`).
    mutating: bool,
}

impl Strategy for Webhooks {
    fn finalizer_names(&self) -> super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::FinalizerNames::Qualified
    }

    /// A `caBundle` that is not base64 makes the object undecodable (400), as upstream's
    /// decoder answers for a `[]byte` field.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let warnings = crate::openapi_builtin::decode_builtin(info, obj, validation)?;
        let hooks = obj
            .get("webhooks")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for hook in hooks {
            if let Some(bundle) = meta::path(hook, "clientConfig.caBundle").and_then(Value::as_str)
            {
                decode_base64(&info.kind, bundle)?;
            }
        }
        Ok(warnings)
    }

    fn default(&self, obj: &mut Value) {
        let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
            return;
        };
        for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
            default_webhook(hook, self.mutating);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_webhooks(obj, self.mutating)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_webhooks_with(obj, self.mutating, Relaxed::of(obj, old))
    }
}

/// Refuses a `[]byte` field (`caBundle`) that is not base64 as upstream's decoder does: 400,
/// `illegal base64 data at input byte N`.
pub(crate) fn decode_base64(kind: &str, value: &str) -> Result<Vec<u8>, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(value)
        .map_err(|e| {
            let at = match e {
                base64::DecodeError::InvalidByte(offset, _) => offset,
                base64::DecodeError::InvalidLastSymbol(offset, _) => offset,
                _ => value.len() / 4 * 4,
            };
            ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: illegal base64 data at input byte {at}"
            ))
        })
}

/// Sets `key` to `value` when it is absent or null.
fn or_insert(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

/// Upstream's `SetDefaults_ValidatingWebhook` / `SetDefaults_MutatingWebhook`, with the rules'
/// scope and the service port.
fn default_webhook(hook: &mut Map<String, Value>, mutating: bool) {
    or_insert(hook, "failurePolicy", json!("Fail"));
    or_insert(hook, "matchPolicy", json!("Equivalent"));
    or_insert(hook, "namespaceSelector", json!({}));
    or_insert(hook, "objectSelector", json!({}));
    or_insert(hook, "timeoutSeconds", json!(10));
    if mutating {
        or_insert(hook, "reinvocationPolicy", json!("Never"));
    }
    if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
        for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
            or_insert(rule, "scope", json!("*"));
        }
    }
    if let Some(service) = hook
        .get_mut("clientConfig")
        .and_then(|c| c.get_mut("service"))
        .and_then(Value::as_object_mut)
    {
        or_insert(service, "port", json!(443));
    }
}

/// A list of strings at `key` (non-strings skipped; absent is empty).
fn strings<'a>(obj: &'a Value, key: &str) -> Vec<&'a str> {
    obj.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `items` holds `*` among other entries.
fn wildcard_with_others(items: &[&str]) -> bool {
    items.len() > 1 && items.contains(&"*")
}

/// The supported values of an enum field, as a cause's list.
fn values(list: &[&str]) -> Vec<Value> {
    list.iter().map(|s| json!(s)).collect()
}

/// Checks `obj[key]`, when set, is one of `supported`.
fn check_enum(errs: &mut Vec<Cause>, obj: &Value, key: &str, path: &str, supported: &[&str]) {
    if let Some(v) = obj.get(key).and_then(Value::as_str)
        && !supported.contains(&v)
    {
        errs.push(Cause::not_supported(
            child(path, key),
            &json!(v),
            &values(supported),
        ));
    }
}

/// Every cause of an invalid Validating- or MutatingWebhookConfiguration.
fn validate_webhooks(obj: &Value, mutating: bool) -> Vec<Cause> {
    validate_webhooks_with(obj, mutating, Relaxed::default())
}

/// What an update may keep of an old configuration that is invalid today (upstream's
/// validation options for updates).
#[derive(Debug, Clone, Copy, Default)]
struct Relaxed {
    /// Some old webhook had no recognized review version.
    unrecognized_versions: bool,
    /// The old webhooks' names were not unique.
    duplicate_names: bool,
    /// The webhooks' match conditions are those stored (as many webhooks, each with the same
    /// conditions): upstream does not compile them again.
    unchanged_match_conditions: bool,
}

impl Relaxed {
    /// The relaxations an update of `old` to `obj` gets.
    fn of(obj: &Value, old: &Value) -> Self {
        let webhooks = |o: &'_ Value| -> Vec<Value> {
            o.get("webhooks")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let hooks = old
            .get("webhooks")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let (new, stored) = (webhooks(obj), webhooks(old));
        let unchanged_match_conditions = new.len() == stored.len()
            && new
                .iter()
                .zip(&stored)
                .all(|(n, o)| n.get("matchConditions") == o.get("matchConditions"));
        let mut seen = std::collections::HashSet::new();
        Self {
            unchanged_match_conditions,
            unrecognized_versions: hooks.iter().any(|h| {
                !strings(h, "admissionReviewVersions")
                    .iter()
                    .any(|v| ACCEPTED_VERSIONS.contains(v))
            }),
            duplicate_names: !hooks
                .iter()
                .all(|h| seen.insert(h.get("name").and_then(Value::as_str).unwrap_or(""))),
        }
    }
}

/// The AdmissionReview (and ConversionReview) versions the server speaks.
pub(crate) const ACCEPTED_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// [`validate_webhooks`] with an update's relaxations.
fn validate_webhooks_with(obj: &Value, mutating: bool, relaxed: Relaxed) -> Vec<Cause> {
    let mut errs = Vec::new();
    let hooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut seen = std::collections::HashSet::new();
    for (i, hook) in hooks.iter().enumerate() {
        let path = index("webhooks", i);
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        if !seen.insert(name) && !relaxed.duplicate_names {
            errs.push(Cause::duplicate(child(&path, "name"), &json!(name)));
        }
        validate_webhook(&mut errs, hook, &path, mutating, relaxed);
    }
    errs
}

/// One webhook of a configuration at `path`.
fn validate_webhook(
    errs: &mut Vec<Cause>,
    hook: &Value,
    path: &str,
    mutating: bool,
    relaxed: Relaxed,
) {
    let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
    errs.extend(fully_qualified_name(name, &child(path, "name")));
    let rules = hook
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (j, rule) in rules.iter().enumerate() {
        validate_rule_with_operations(errs, rule, &index(&child(path, "rules"), j));
    }
    check_enum(
        errs,
        hook,
        "failurePolicy",
        path,
        &enums::FAILURE_POLICY_TYPE.sorted(),
    );
    check_enum(
        errs,
        hook,
        "matchPolicy",
        path,
        &enums::MATCH_POLICY_TYPE.sorted(),
    );
    match hook.get("sideEffects").and_then(Value::as_str) {
        None => errs.push(Cause::required(
            child(path, "sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(_) => check_enum(errs, hook, "sideEffects", path, &["None", "NoneOnDryRun"]),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        errs.push(Cause::invalid(
            child(path, "timeoutSeconds"),
            &json!(t),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(key) {
            errs.extend(validate_label_selector(sel, &child(path, key)));
        }
    }
    validate_review_versions(
        errs,
        &strings(hook, "admissionReviewVersions"),
        &child(path, "admissionReviewVersions"),
        !relaxed.unrecognized_versions,
    );
    validate_client_config(errs, hook.get("clientConfig"), &child(path, "clientConfig"));
    if !relaxed.unchanged_match_conditions {
        validate_match_conditions(
            errs,
            hook,
            &child(path, "matchConditions"),
            &declarations::webhook_environment(),
        );
    }
    if mutating {
        check_enum(
            errs,
            hook,
            "reinvocationPolicy",
            path,
            &enums::REINVOCATION_POLICY_TYPE.sorted(),
        );
    }
}

/// Upstream's `IsFullyQualifiedName`: a DNS subdomain of at least three segments.
fn fully_qualified_name(name: &str, path: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::required(path, "")];
    }
    if name.split('.').count() < 3 {
        return vec![Cause::invalid(
            path,
            &json!(name),
            "should be a domain with at least three segments separated by dots",
        )];
    }
    dns1123_subdomain(name)
        .into_iter()
        .map(|e| Cause::invalid(path, &json!(name), &e))
        .collect()
}

/// A rule with operations (webhook rules, policy resource rules).
fn validate_rule_with_operations(errs: &mut Vec<Cause>, rule: &Value, path: &str) {
    let ops = strings(rule, "operations");
    let ops_path = child(path, "operations");
    if ops.is_empty() {
        errs.push(Cause::required(&ops_path, ""));
    }
    if wildcard_with_others(&ops) {
        errs.push(invalid_rendered(
            &ops_path,
            &go_string_slice(&ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !enums::OPERATION_TYPE.contains(op) {
            errs.push(enums::OPERATION_TYPE.not_supported(
                index(&ops_path, i),
                &json!(op),
                Order::Sorted,
            ));
        }
    }
    validate_rule(errs, rule, path);
}

/// A rule's groups, versions, resources and scope.
fn validate_rule(errs: &mut Vec<Cause>, rule: &Value, path: &str) {
    let groups = strings(rule, "apiGroups");
    let groups_path = child(path, "apiGroups");
    if groups.is_empty() {
        errs.push(Cause::required(&groups_path, ""));
    }
    if wildcard_with_others(&groups) {
        errs.push(invalid_rendered(
            &groups_path,
            &go_string_slice(&groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule, "apiVersions");
    let versions_path = child(path, "apiVersions");
    if versions.is_empty() {
        errs.push(Cause::required(&versions_path, ""));
    }
    if wildcard_with_others(&versions) {
        errs.push(invalid_rendered(
            &versions_path,
            &go_string_slice(&versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(Cause::required(index(&versions_path, i), ""));
        }
    }
    validate_resources(errs, &strings(rule, "resources"), &child(path, "resources"));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !enums::SCOPE_TYPE.contains(scope)
    {
        errs.push(enums::SCOPE_TYPE.not_supported(
            child(path, "scope"),
            &json!(scope),
            Order::Sorted,
        ));
    }
}

/// Upstream's `validateResources`: `resource[/subresource]` with its wildcard rules.
fn validate_resources(errs: &mut Vec<Cause>, resources: &[&str], path: &str) {
    if resources.is_empty() {
        errs.push(Cause::required(path, ""));
    }
    let mut wildcard_sub = std::collections::HashSet::new();
    let mut wildcard_res = std::collections::HashSet::new();
    let mut double = false;
    let mut single = false;
    let mut plain = false;
    for (i, entry) in resources.iter().enumerate() {
        if entry.is_empty() {
            errs.push(Cause::required(index(path, i), ""));
            continue;
        }
        double |= *entry == "*/*";
        single |= *entry == "*";
        let Some((res, sub)) = entry.split_once('/') else {
            plain = *entry != "*";
            continue;
        };
        if wildcard_sub.contains(res) {
            errs.push(Cause::invalid(
                index(path, i),
                &json!(entry),
                &format!("if '{res}/*' is present, must not specify {entry}"),
            ));
        }
        if wildcard_res.contains(sub) {
            errs.push(Cause::invalid(
                index(path, i),
                &json!(entry),
                &format!("if '*/{sub}' is present, must not specify {entry}"),
            ));
        }
        if sub == "*" {
            wildcard_sub.insert(res);
        }
        if res == "*" {
            wildcard_res.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        errs.push(invalid_rendered(
            path,
            &go_string_slice(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(invalid_rendered(
            path,
            &go_string_slice(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
}

/// Upstream's `validateAdmissionReviewVersions` (a recognized version required).
pub(crate) fn validate_review_versions(
    errs: &mut Vec<Cause>,
    versions: &[&str],
    path: &str,
    require_recognized: bool,
) {
    if versions.is_empty() {
        errs.push(Cause::required(path, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(Cause::invalid(
                index(path, i),
                &json!(v),
                "duplicate version",
            ));
            continue;
        }
        for e in dns1035_label(v) {
            errs.push(Cause::invalid(index(path, i), &json!(v), &e));
        }
    }
    if require_recognized && !versions.iter().any(|v| ACCEPTED_VERSIONS.contains(v)) {
        errs.push(invalid_rendered(
            path,
            &go_string_slice(versions),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// Exactly one of `url` (https, no user info, fragment or query) and `service`.
pub(crate) fn validate_client_config(errs: &mut Vec<Cause>, config: Option<&Value>, path: &str) {
    let config = config.unwrap_or(&Value::Null);
    let url = config.get("url").and_then(Value::as_str);
    let service = config.get("service").filter(|s| s.is_object());
    match (url, service) {
        (Some(url), None) => validate_url(errs, url, &child(path, "url")),
        (None, Some(service)) => validate_service(errs, service, &child(path, "service")),
        _ => errs.push(Cause::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

/// Upstream's `ValidateWebhookURL` with https forced.
fn validate_url(errs: &mut Vec<Cause>, url: &str, path: &str) {
    const FORM: &str = "; desired format: https://host[/path]";
    let parsed = crate::admission::url::WebhookUrl::parse(url);
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            errs.push(Cause::required(
                path,
                &format!("url must be a valid URL: {e}{FORM}"),
            ));
            return;
        }
    };
    if parsed.scheme != "https" {
        errs.push(Cause::invalid(
            path,
            &json!(parsed.scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if parsed.host.is_empty() {
        errs.push(Cause::invalid(
            path,
            &json!(""),
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = &parsed.user {
        errs.push(Cause::invalid(
            path,
            &json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if let Some(fragment) = parsed.fragment.as_deref().filter(|f| !f.is_empty()) {
        errs.push(Cause::invalid(
            path,
            &json!(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if let Some(query) = parsed.query.as_deref().filter(|q| !q.is_empty()) {
        errs.push(Cause::invalid(
            path,
            &json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

/// Upstream's `ValidateWebhookService`.
fn validate_service(errs: &mut Vec<Cause>, service: &Value, path: &str) {
    if text(service, "name").is_empty() {
        errs.push(Cause::required(
            child(path, "name"),
            "service name is required",
        ));
    }
    if text(service, "namespace").is_empty() {
        errs.push(Cause::required(
            child(path, "namespace"),
            "service namespace is required",
        ));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(Cause::invalid(
            child(path, "port"),
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = service.get("path").and_then(Value::as_str) else {
        return;
    };
    let at = child(path, "path");
    if url_path.is_empty() || url_path == "/" {
        return;
    }
    if url_path == "//" {
        errs.push(Cause::invalid(
            &at,
            &json!(url_path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !url_path.starts_with('/') {
        errs.push(Cause::invalid(
            &at,
            &json!(url_path),
            "must start with a '/'",
        ));
    }
    let rest = url_path.get(1..).unwrap_or("");
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(Cause::invalid(
                &at,
                &json!(url_path),
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for e in dns1123_subdomain(step) {
            errs.push(Cause::invalid(
                &at,
                &json!(url_path),
                &format!("segment[{i}]: {e}"),
            ));
        }
    }
}

/// `matchConditions`: at most 64, unique qualified names, expressions that compile to a bool
/// with `declared` (upstream compiles them without a policy's `variables`).
fn validate_match_conditions(
    errs: &mut Vec<Cause>,
    hook: &Value,
    path: &str,
    declared: &[(&str, Ty)],
) {
    let conditions = hook
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if conditions.len() > 64 {
        errs.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!("Too many: {}: must have at most 64 items", conditions.len()),
        ));
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for (i, cond) in conditions.iter().enumerate() {
        let at = index(path, i);
        let name = text(cond, "name");
        let name_path = child(&at, "name");
        if name.is_empty() {
            errs.push(Cause::required(&name_path, ""));
        } else {
            for e in validate_qualified_name(name) {
                errs.push(Cause::invalid(&name_path, &json!(name), &e));
            }
            if !seen.insert(name) {
                errs.push(Cause::duplicate(&name_path, &json!(name)));
            }
        }
        let expression = text(cond, "expression");
        let expr_path = child(&at, "expression");
        if expression.trim().is_empty() {
            errs.push(Cause::required(&expr_path, ""));
        } else if let Err(e) = cel::check(expression, declared, Returns::Bool) {
            errs.push(Cause::invalid(&expr_path, &json!(expression), &e));
        }
    }
}

/// The strategy of ValidatingAdmissionPolicies.
#[derive(Debug, Clone, Copy)]
struct Policy;

impl Strategy for Policy {
    fn finalizer_names(&self) -> super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::FinalizerNames::Qualified
    }

    fn default(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            or_insert(map, "status", json!({}));
        }
        default_policy_spec(obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_policy(obj, false)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_policy(obj, match_conditions_unchanged(obj, old))
    }
}

/// Whether an update of an admission policy keeps its `paramKind` and `matchConditions`
/// (upstream's `ignore...AdmissionPolicyMatchConditions`): its match conditions are then not
/// compiled again, so a stored policy stays updatable whatever the compiler says today.
fn match_conditions_unchanged(obj: &Value, old: &Value) -> bool {
    let spec_field = |o: &Value, key: &str| o.get("spec").and_then(|s| s.get(key)).cloned();
    ["paramKind", "matchConditions"]
        .iter()
        .all(|key| spec_field(obj, key) == spec_field(old, key))
}

/// Upstream's `SetDefaults_MatchResources` and the rules' scope.
/// The defaults of an admission policy's spec (validating or mutating): `failurePolicy: Fail`
/// and the match constraints' defaults.
fn default_policy_spec(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    or_insert(spec, "failurePolicy", json!("Fail"));
    if let Some(m) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        default_match_resources(m);
    }
}

/// The defaults of an admission policy binding's spec (validating or mutating): those of its
/// `matchResources`.
fn default_binding_spec(obj: &mut Value) {
    if let Some(m) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("matchResources"))
        .and_then(Value::as_object_mut)
    {
        default_match_resources(m);
    }
}

fn default_match_resources(m: &mut Map<String, Value>) {
    or_insert(m, "matchPolicy", json!("Equivalent"));
    or_insert(m, "namespaceSelector", json!({}));
    or_insert(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(key).and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                or_insert(rule, "scope", json!("*"));
            }
        }
    }
}

/// A policy's match resources at `path` (`require_rules` for a policy's constraints).
fn validate_match_resources(errs: &mut Vec<Cause>, m: &Value, path: &str, require_rules: bool) {
    check_enum(
        errs,
        m,
        "matchPolicy",
        path,
        &enums::MATCH_POLICY_TYPE.sorted(),
    );
    for key in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = m.get(key) {
            errs.extend(validate_label_selector(sel, &child(path, key)));
        }
    }
    let rules = m
        .get("resourceRules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if require_rules && rules.is_empty() {
        errs.push(Cause::required(child(path, "resourceRules"), ""));
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        let list = m
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for (i, rule) in list.iter().enumerate() {
            validate_rule_with_operations(errs, rule, &index(&child(path, key), i));
        }
    }
}

/// Every cause of an invalid ValidatingAdmissionPolicy; the match conditions are left alone
/// when `stored_match_conditions` (an update that keeps them).
fn validate_policy(obj: &Value, stored_match_conditions: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => errs.push(Cause::required("spec.matchConstraints", "")),
        Some(m) => validate_match_resources(&mut errs, m, "spec.matchConstraints", true),
    }
    check_enum(
        &mut errs,
        spec,
        "failurePolicy",
        "spec",
        &enums::FAILURE_POLICY_TYPE.sorted(),
    );
    validate_param_kind(&mut errs, spec);
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let audits = spec
        .get("auditAnnotations")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if validations.is_empty() && audits == 0 {
        for field in ["spec.validations", "spec.auditAnnotations"] {
            errs.push(Cause::required(
                field,
                "validations or auditAnnotations must contain at least one item",
            ));
        }
    }
    // The variables are checked once: their types serve every expression, their errors
    // are the variables' own.
    let composed = declarations::policy_composition(spec, &declarations::variables(spec));
    let declared = declarations::policy_environment(spec, Some(&composed), true);
    let for_messages = declarations::policy_environment(spec, Some(&composed), false);
    for (i, v) in validations.iter().enumerate() {
        let at = index("spec.validations", i);
        let expression = text(v, "expression");
        if expression.trim().is_empty() {
            errs.push(Cause::required(
                child(&at, "expression"),
                "expression is not specified",
            ));
        } else if let Err(e) = cel::check(expression, &declared, Returns::Bool) {
            errs.push(Cause::invalid(
                child(&at, "expression"),
                &json!(expression),
                &e,
            ));
        }
        let message_expression = text(v, "messageExpression");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            errs.push(Cause::invalid(
                child(&at, "messageExpression"),
                &json!(message_expression),
                "must be non-empty if specified",
            ));
        } else if !message_expression.trim().is_empty()
            && let Err(e) = cel::check(message_expression, &for_messages, Returns::String)
        {
            errs.push(Cause::invalid(
                child(&at, "messageExpression"),
                &json!(message_expression),
                &e,
            ));
        }
        let message = text(v, "message");
        if !message.is_empty() && message.trim().is_empty() {
            errs.push(Cause::invalid(
                child(&at, "message"),
                &json!(message),
                "message must be non-empty if specified",
            ));
        } else if message.trim().contains(['\n', '\r']) {
            errs.push(Cause::invalid(
                child(&at, "message"),
                &json!(message),
                "message must not contain line breaks",
            ));
        }
        // Upstream's `supportedValidationPolicyReason`, listed sorted.
        const REASONS: &[&str] = &[
            "Forbidden",
            "Invalid",
            "RequestEntityTooLarge",
            "Unauthorized",
        ];
        check_enum(&mut errs, v, "reason", &at, REASONS);
    }
    validate_audit_annotations(&mut errs, obj, &declared);
    validate_variables(&mut errs, spec, &composed);
    if !stored_match_conditions {
        validate_policy_match_conditions(&mut errs, spec);
    }
    errs
}

/// The most audit annotations of a policy (upstream's `maxAuditAnnotations`).
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// The longest audit annotation value expression, in bytes.
const MAX_AUDIT_ANNOTATION_EXPRESSION: usize = 5 * 1024;

/// `spec.auditAnnotations` (upstream's `validateAuditAnnotation`): at most 20, keys unique and
/// qualified names once prefixed with the policy's name, value expressions that compile to a
/// string or null.
fn validate_audit_annotations(errs: &mut Vec<Cause>, obj: &Value, declared: &[(&str, Ty)]) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let Some(annotations) = spec.get("auditAnnotations").and_then(Value::as_array) else {
        return;
    };
    if annotations.len() > MAX_AUDIT_ANNOTATIONS {
        errs.push(Cause::invalid(
            "spec.auditAnnotations",
            &Value::Array(annotations.clone()),
            &format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
        ));
    }
    let name = meta::name(obj);
    let mut keys = std::collections::HashSet::new();
    for (i, annotation) in annotations.iter().enumerate() {
        let at = index("spec.auditAnnotations", i);
        let key = text(annotation, "key");
        let key_path = child(&at, "key");
        if name.is_empty() {
            errs.push(Cause::invalid(
                &key_path,
                &json!(key),
                "requires metadata.name be non-empty",
            ));
        } else {
            let qualified = format!("{name}/{key}");
            for e in validate_qualified_name(&qualified) {
                errs.push(Cause::invalid(&key_path, &json!(qualified), &e));
            }
        }
        let expression = text(annotation, "valueExpression");
        let value_path = child(&at, "valueExpression");
        let trimmed = expression.trim();
        if trimmed.is_empty() {
            errs.push(Cause::required(
                &value_path,
                "valueExpression is not specified",
            ));
        } else if trimmed.len() > MAX_AUDIT_ANNOTATION_EXPRESSION {
            errs.push(Cause::required(
                &value_path,
                &format!("must not exceed {MAX_AUDIT_ANNOTATION_EXPRESSION} bytes in length"),
            ));
        } else if let Err(e) = cel::check(trimmed, declared, Returns::StringOrNull) {
            errs.push(Cause::invalid(&value_path, &json!(expression), &e));
        }
        if !keys.insert(key) {
            errs.push(Cause::duplicate(&key_path, &json!(key)));
        }
    }
}

/// A policy's `spec.matchConditions`, compiled with `params` when it has a `paramKind` and
/// without its variables, as upstream's stateless compiler does.
fn validate_policy_match_conditions(errs: &mut Vec<Cause>, spec: &Value) {
    let conds =
        json!({"matchConditions": spec.get("matchConditions").cloned().unwrap_or(json!([]))});
    let declared = declarations::policy_environment(spec, None, true);
    validate_match_conditions(errs, &conds, "spec.matchConditions", &declared);
}

/// The strategy of ValidatingAdmissionPolicyBindings.
#[derive(Debug, Clone, Copy)]
struct Binding;

impl Strategy for Binding {
    fn finalizer_names(&self) -> super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::FinalizerNames::Qualified
    }

    fn default(&self, obj: &mut Value) {
        default_binding_spec(obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_binding(obj)
    }
}

/// Every cause of an invalid ValidatingAdmissionPolicyBinding.
fn validate_binding(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    validate_policy_name(&mut errs, spec);
    validate_param_ref(&mut errs, spec);
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        // Upstream's field path is misspelt; clients see it as written.
        validate_match_resources(&mut errs, m, "spec.matchResouces", false);
    }
    let actions = strings(spec, "validationActions");
    if actions.is_empty() {
        errs.push(Cause::required("spec.validationActions", ""));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, action) in actions.iter().enumerate() {
        let at = index("spec.validationActions", i);
        if !seen.insert(*action) {
            errs.push(Cause::duplicate(&at, &json!(action)));
        }
        if !enums::VALIDATION_ACTION.contains(action) {
            errs.push(enums::VALIDATION_ACTION.not_supported(&at, &json!(action), Order::Sorted));
        }
    }
    if actions.contains(&"Deny") && actions.contains(&"Warn") {
        errs.push(invalid_rendered(
            "spec.validationActions",
            &go_string_slice(&actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    errs
}

/// A binding's `spec.policyName`: required, a DNS subdomain.
fn validate_policy_name(errs: &mut Vec<Cause>, spec: &Value) {
    let policy = text(spec, "policyName");
    if policy.is_empty() {
        errs.push(Cause::required("spec.policyName", ""));
    } else {
        for e in dns1123_subdomain(policy) {
            errs.push(Cause::invalid("spec.policyName", &json!(policy), &e));
        }
    }
}

/// Upstream's `validateParamRef` of a binding's `spec.paramRef`.
fn validate_param_ref(errs: &mut Vec<Cause>, spec: &Value) {
    const PATH: &str = "spec.paramRef";
    let Some(pr) = spec.get("paramRef").filter(|p| p.is_object()) else {
        return;
    };
    let name = text(pr, "name");
    let selector = pr.get("selector").filter(|s| s.is_object());
    if !name.is_empty() {
        for e in path_segment_name(name) {
            errs.push(Cause::invalid(child(PATH, "name"), &json!(name), &e));
        }
        if selector.is_some() {
            errs.push(Cause::forbidden(
                child(PATH, "name"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if let Some(selector) = selector {
        errs.extend(validate_label_selector(selector, &child(PATH, "selector")));
        if !name.is_empty() {
            errs.push(Cause::forbidden(
                child(PATH, "selector"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(Cause::required(
            PATH,
            "one of name or selector must be specified",
        ));
    }
    match pr.get("parameterNotFoundAction").and_then(Value::as_str) {
        None | Some("") => errs.push(Cause::required(child(PATH, "parameterNotFoundAction"), "")),
        Some(action) if action != "Deny" && action != "Allow" => {
            errs.push(Cause::not_supported(
                child(PATH, "parameterNotFoundAction"),
                &json!(action),
                &values(&["Deny", "Allow"]),
            ));
        }
        Some(_) => {}
    }
}

/// Upstream's `validateParamKind` of a policy's `spec.paramKind`.
fn validate_param_kind(errs: &mut Vec<Cause>, spec: &Value) {
    let Some(pk) = spec.get("paramKind").filter(|p| p.is_object()) else {
        return;
    };
    let at = "spec.paramKind.apiVersion";
    let api_version = text(pk, "apiVersion");
    if api_version.is_empty() {
        errs.push(Cause::required(at, ""));
    } else {
        match crate::validation::names::parse_group_version(api_version) {
            Err(e) => errs.push(Cause::invalid(at, &json!(api_version), &e)),
            Ok((group, version)) => {
                let group_errs = dns1123_subdomain(&group);
                if !group.is_empty() && !group_errs.is_empty() {
                    errs.push(Cause::invalid(at, &json!(group), &group_errs.join(",")));
                }
                if version.is_empty() {
                    errs.push(Cause::invalid(
                        at,
                        &json!(api_version),
                        "version must be specified",
                    ));
                } else {
                    let version_errs = dns1035_label(&version);
                    if !version_errs.is_empty() {
                        errs.push(Cause::invalid(at, &json!(version), &version_errs.join(",")));
                    }
                }
            }
        }
    }
    let kind = text(pk, "kind");
    if kind.is_empty() {
        errs.push(Cause::required("spec.paramKind.kind", ""));
    } else {
        let kind_errs = dns1035_label(&kind.to_ascii_lowercase());
        if !kind_errs.is_empty() {
            errs.push(Cause::invalid(
                "spec.paramKind.kind",
                &json!(kind),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    kind_errs.join(",")
                ),
            ));
        }
    }
}

/// Upstream's `isCELIdentifier`: `[_a-zA-Z][_a-zA-Z0-9]*`, not a CEL reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !crate::validation::cel::check::schema::RESERVED.contains(&name)
}

/// A policy's `spec.variables`: each named, with an expression that compiles with the
/// variables before it (`composed`: their errors, found in one pass).
fn validate_variables(errs: &mut Vec<Cause>, spec: &Value, composed: &declarations::Composed) {
    let variables = spec
        .get("variables")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, var) in variables.iter().enumerate() {
        let at = index("spec.variables", i);
        let name = text(var, "name");
        if name.trim().is_empty() {
            errs.push(Cause::required(child(&at, "name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            errs.push(Cause::invalid(
                child(&at, "name"),
                &json!(name),
                "name is not a valid CEL identifier",
            ));
        }
        let expression = text(var, "expression");
        if expression.trim().is_empty() {
            errs.push(Cause::required(
                child(&at, "expression"),
                "expression is not specified",
            ));
        } else if let Some(Some(e)) = composed.errors.get(i) {
            errs.push(Cause::invalid(
                child(&at, "expression"),
                &json!(expression),
                e,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(extra: Value) -> Value {
        let mut h = json!({
            "name": "a.b.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        if let (Some(h), Some(e)) = (h.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                h.insert(k.clone(), v.clone());
            }
        }
        h
    }

    fn messages(obj: Value, mutating: bool) -> Vec<String> {
        let mut obj = obj;
        Webhooks { mutating }.default(&mut obj);
        validate_webhooks(&obj, mutating)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn defaults_as_captured() {
        let mut obj = json!({"webhooks": [hook(json!({}))]});
        Webhooks { mutating: true }.default(&mut obj);
        let h = &obj["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["objectSelector"], json!({}));
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["rules"][0]["scope"], "*");
        assert!(validate_webhooks(&obj, true).is_empty());
    }

    #[test]
    fn refusals_with_upstream_messages() {
        let cases = [
            (
                hook(json!({"name": "short.name"})),
                "webhooks[0].name: Invalid value: \"short.name\": should be a domain with at least three segments separated by dots",
            ),
            (
                hook(json!({"sideEffects": null})),
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            ),
            (
                hook(json!({"sideEffects": "Some"})),
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            ),
            (
                hook(json!({"timeoutSeconds": 31})),
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            ),
            (
                hook(json!({"clientConfig": {"url": "http://x.example.com/a"}})),
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            ),
            (
                hook(json!({"clientConfig": {"url": "https://x.example.com/a?b=c"}})),
                "webhooks[0].clientConfig.url: Invalid value: \"b=c\": query parameters are not permitted in the URL",
            ),
            (
                hook(json!({"clientConfig": {}})),
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ),
            (
                hook(json!({"admissionReviewVersions": ["v2"]})),
                "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
            ),
            (
                hook(
                    json!({"rules": [{"operations": ["*", "CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*", "pods"]}]}),
                ),
                "webhooks[0].rules[0].operations: Invalid value: []string{\"*\", \"CREATE\"}: if '*' is present, must not specify other operations",
            ),
            (
                hook(
                    json!({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*", "pods"]}]}),
                ),
                "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is present, must not specify other resources without subresources",
            ),
            (
                hook(
                    json!({"rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "Global"}]}),
                ),
                "webhooks[0].rules[0].scope: Unsupported value: \"Global\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
            ),
            (
                hook(
                    json!({"clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "foo"}}}),
                ),
                "webhooks[0].clientConfig.service.path: Invalid value: \"foo\": must start with a '/'",
            ),
            (
                hook(json!({"matchConditions": [{"name": "a", "expression": "object.("}]})),
                "webhooks[0].matchConditions[0].expression: Invalid value: \"object.(\": compilation failed: ",
            ),
        ];
        for (h, want) in cases {
            let got = messages(json!({"webhooks": [h]}), false);
            assert!(
                got.iter().any(|m| m.starts_with(want)),
                "want {want}\n got {got:?}"
            );
        }
        let dup = messages(
            json!({"webhooks": [hook(json!({})), hook(json!({}))]}),
            false,
        );
        assert_eq!(
            dup,
            vec!["webhooks[1].name: Duplicate value: \"a.b.example.com\"".to_string()]
        );
        // An update may keep what an old configuration already had.
        let old = json!({"webhooks": [hook(json!({"admissionReviewVersions": ["v0"]})), hook(json!({}))]});
        assert!(validate_webhooks_with(&old, false, Relaxed::of(&old, &old)).is_empty());
        assert_eq!(validate_webhooks(&old, false).len(), 2);
        let m = messages(
            json!({"webhooks": [hook(json!({"reinvocationPolicy": "Always"}))]}),
            true,
        );
        assert_eq!(
            m,
            vec!["webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"".to_string()]
        );
    }

    #[test]
    fn policy_and_binding() {
        let mut policy = json!({"spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.metadata.name != 'x'"}],
        }});
        Policy.default(&mut policy);
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
        assert_eq!(policy["status"], json!({}));
        assert_eq!(
            policy["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
        assert!(
            validate_policy(&policy, false).is_empty(),
            "{:?}",
            validate_policy(&policy, false)
        );
        let binding = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}});
        let got: Vec<String> = validate_binding(&binding)
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("spec.validationActions: Invalid value: []string{\"Deny\", \"Warn\"}: must not contain both Deny and Warn"));
    }

    /// A policy for `configmaps` with `spec` fields added.
    fn configmap_policy(extra: Value) -> Value {
        let mut policy = json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "true"}],
        }});
        if let (Some(spec), Some(extra)) = (policy["spec"].as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                spec.insert(k.clone(), v.clone());
            }
        }
        Policy.default(&mut policy);
        policy
    }

    fn summaries(policy: &Value) -> Vec<String> {
        validate_policy(policy, false)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    /// Expressions are type-checked when a policy is written, as upstream's admission CEL
    /// compiler does (cases from its compile tests): `object`, `oldObject` and `params` are
    /// `dyn`, `request` and `namespaceObject` have their declared fields, a validation must be
    /// exactly `bool`.
    #[test]
    fn policy_expressions_are_type_checked_when_written() {
        let valid = [
            "object.foo == oldObject.foo",
            "object == null || oldObject == null || object.foo == oldObject.foo",
            "object.spec.string.matches('[0-9]+')",
            "object.spec.string.findAll('[0-9]+').size() > 0",
            "object.spec.list.isSorted()",
            "url(object.spec.endpoint).getHostname() in ['ok1', 'ok2']",
            "request.kind.group == 'example.com' && request.kind.version == 'v1' && request.kind.kind == 'Fake'",
            "request.requestResource.group == 'example.com' && request.requestSubResource == 'scale'",
            "request.userInfo.groups == ['system:authenticated', 'my-admin-group']",
            "request.userInfo.extra == {'some-key': ['some-value1', 'some-value2']}",
            "request.dryRun == false",
            "request.options == {'whatever': 'you want'}",
            "namespaceObject.metadata.name.startsWith('test')",
            "'test' in namespaceObject.metadata.labels",
            "namespaceObject.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')",
            "namespaceObject.status.conditions[0].reason == 'Invalid'",
            "authorizer.group('') != null",
        ];
        for expression in valid {
            let policy = configmap_policy(json!({"validations": [{"expression": expression}]}));
            assert_eq!(summaries(&policy), Vec::<String>::new(), "{expression}");
        }
        let invalid = [
            (
                "1 < 'asdf'",
                "found no matching overload for '_<_' applied to '(int, string)",
            ),
            ("'asdf'.contains('x'", "Syntax error: missing ')' at"),
            ("object.foo < params.x", "undeclared reference to 'params'"),
            (
                "object.foo < invalid.x",
                "undeclared reference to 'invalid'",
            ),
            ("request.foo1 == 'nope'", "undefined field 'foo1'"),
            ("request.resource.foo2 == 'nope'", "undefined field 'foo2'"),
            ("request.userInfo.foo5 == 'nope'", "undefined field 'foo5'"),
            (
                "namespaceObject.metadata.foo2 == 'nope'",
                "undefined field 'foo2'",
            ),
            (
                "namespaceObject.status.conditions[0].foo5 == 'nope'",
                "undefined field 'foo5'",
            ),
            ("variables.x == 1", "undeclared reference to 'variables'"),
            // Exactly bool: a `dyn` result is refused.
            ("object.spec.paused", "must evaluate to bool but got dyn"),
            ("'x'", "must evaluate to bool but got string"),
        ];
        for (expression, want) in invalid {
            let policy = configmap_policy(json!({"validations": [{"expression": expression}]}));
            let got = summaries(&policy);
            assert!(
                got.len() == 1
                    && got[0].starts_with("spec.validations[0].expression: Invalid value: ")
                    && got[0].contains(want),
                "{expression}: {got:?}"
            );
        }
        // Message expressions: strings, without the authorizer.
        let policy = configmap_policy(json!({"validations": [
            {"expression": "true", "messageExpression": "object.metadata.name"},
            {"expression": "true", "messageExpression": "'name: ' + object.metadata.name"},
        ]}));
        assert_eq!(
            summaries(&policy),
            [
                "spec.validations[0].messageExpression: Invalid value: \"object.metadata.name\": must evaluate to string but got dyn"
            ]
        );
        // With a paramKind, params may be read everywhere, match conditions included; a
        // variable sees the ones before it, and match conditions see no variables.
        let policy = configmap_policy(json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "variables": [
                {"name": "max", "expression": "int(params.data.max)"},
                {"name": "twice", "expression": "variables.max * 2"},
                {"name": "early", "expression": "variables.late"},
                {"name": "late", "expression": "1"},
            ],
            "matchConditions": [
                {"name": "with-params", "expression": "params.data.enabled == 'true'"},
                {"name": "no-variables", "expression": "variables.max > 1"},
            ],
            "validations": [{"expression": "size(object.data) <= variables.twice"}],
        }));
        assert_eq!(
            summaries(&policy)
                .iter()
                .map(|s| s.split(": Invalid value").next().unwrap_or("").to_string())
                .collect::<Vec<_>>(),
            [
                "spec.variables[2].expression",
                "spec.matchConditions[1].expression"
            ],
            "{:?}",
            summaries(&policy)
        );
        let got = summaries(&policy);
        assert!(got[0].contains("undefined field 'late'"), "{got:?}");
        assert!(
            got[1].contains("undeclared reference to 'variables'"),
            "{got:?}"
        );
    }

    /// Audit annotations as upstream's `validateAuditAnnotation`.
    #[test]
    fn audit_annotations_are_validated() {
        let policy = configmap_policy(json!({"validations": [], "auditAnnotations": [
            {"key": "owner", "valueExpression": "'team-' + object.metadata.name"},
            {"key": "owner", "valueExpression": "null"},
            {"key": "bad key!", "valueExpression": "object.metadata.name"},
            {"key": "empty", "valueExpression": "  "},
        ]}));
        assert_eq!(
            summaries(&policy),
            [
                "spec.auditAnnotations[1].key: Duplicate value: \"owner\"",
                "spec.auditAnnotations[2].key: Invalid value: \"p/bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.auditAnnotations[2].valueExpression: Invalid value: \"object.metadata.name\": must evaluate to one of [string null_type] but got dyn",
                "spec.auditAnnotations[3].valueExpression: Required value: valueExpression is not specified",
            ]
        );
        let neither = configmap_policy(json!({"validations": []}));
        assert_eq!(
            summaries(&neither),
            [
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
        let many: Vec<Value> = (0..21)
            .map(|i| json!({"key": format!("k{i}"), "valueExpression": "null"}))
            .collect();
        let got = summaries(&configmap_policy(json!({"auditAnnotations": many})));
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("spec.auditAnnotations: Invalid value: ")
                && got[0].ends_with("must not have more than 20 auditAnnotations"),
            "{got:?}"
        );
    }

    #[test]
    fn webhook_match_conditions_are_type_checked() {
        let got = messages(
            json!({"webhooks": [hook(json!({"matchConditions": [
                {"name": "a", "expression": "request.userInfo.username"},
                {"name": "b", "expression": "params.x == 1"},
                {"name": "c", "expression": "authorizer.requestResource.check('get').allowed()"},
            ]}))]}),
            false,
        );
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0].ends_with("must evaluate to bool but got string"),
            "{got:?}"
        );
        assert!(
            got[1].contains("undeclared reference to 'params'"),
            "{got:?}"
        );
    }

    /// An update keeping the stored match conditions does not compile them again (upstream's
    /// `ignore...MatchConditions`); changing them, or the policy's `paramKind`, does.
    #[test]
    fn unchanged_match_conditions_are_not_compiled_again() {
        let update = |new: &Value, old: &Value| {
            validate_policy(new, match_conditions_unchanged(new, old)).len()
        };
        let stale = json!([{"name": "a", "expression": "params.x == 1"}]);
        let old = configmap_policy(json!({"matchConditions": stale}));
        assert_eq!(summaries(&old).len(), 1, "{:?}", summaries(&old));
        let mut new = old.clone();
        new["spec"]["validations"] = json!([{"expression": "false"}]);
        assert_eq!(update(&new, &old), 0);
        let mut params = new.clone();
        params["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(
            update(&params, &old),
            0,
            "params now declared: the condition compiles"
        );
        let mut changed = new.clone();
        changed["spec"]["matchConditions"][0]["expression"] = json!("params.y == 1");
        assert_eq!(update(&changed, &old), 1);
        // A paramKind removed: compiled again.
        assert_eq!(update(&new, &params), 1);
        // Same for the mutating policies.
        let mut map = json!({"metadata": {"name": "m"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "reinvocationPolicy": "Never",
            "matchConditions": stale,
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}]}});
        default_policy_spec(&mut map);
        assert_eq!(mutating::validate_policy(&map, false).len(), 1);
        assert!(mutating::validate_policy(&map, match_conditions_unchanged(&map, &map)).is_empty());
        // Webhooks: as many webhooks, each with its conditions.
        let old_hooks = json!({"webhooks": [hook(json!({"matchConditions": stale}))]});
        let update_hooks =
            |new: &Value| validate_webhooks_with(new, false, Relaxed::of(new, &old_hooks)).len();
        assert_eq!(validate_webhooks(&old_hooks, false).len(), 1);
        let mut timeout = old_hooks.clone();
        timeout["webhooks"][0]["timeoutSeconds"] = json!(5);
        assert_eq!(update_hooks(&timeout), 0);
        let mut added = old_hooks.clone();
        added["webhooks"][0]["matchConditions"][0]["expression"] = json!("params.y == 1");
        assert_eq!(update_hooks(&added), 1);
    }
}
