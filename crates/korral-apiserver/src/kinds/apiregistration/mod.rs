//! `apiregistration.k8s.io/v1` APIServices, as kube-aggregator serves them: upstream's strategy
//! (`pkg/registry/apiservice/strategy.go`), validation
//! (`pkg/apis/apiregistration/validation/validation.go`), defaults and table.
//!
//! Every group version the server serves itself has a *local* APIService (no `service`), kept
//! in step by the built-in controllers (see [`local`]). An APIService naming a Service hands
//! its group version to that extension server (see [`crate::aggregator`]); its `Available`
//! condition says whether it can be reached (see [`availability`]).

pub(crate) mod availability;
pub(crate) mod local;

use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as api;
use serde_json::{Map, Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::objects::FieldValidation;
use crate::registry::{NameRule, ResourceInfo};
use crate::validation::names::{dns1035_label, dns1123_subdomain, path_segment_name};

/// The group APIServices are served in.
pub(crate) const GROUP: &str = "apiregistration.k8s.io";
/// The resource of APIServices.
pub(crate) const RESOURCE: &str = "apiservices";

/// The kinds of `apiregistration.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(GROUP, "v1", RESOURCE, "APIService", ApiServices)
            .cluster_scoped()
            .category(super::API_EXTENSIONS)
            .status()
            .names(NameRule::PathSegment)
            .schema::<api::APIService>()
            .printer(TABLE),
    ]
}

/// Upstream's APIService table (`pkg/registry/apiservice/etcd`): the service reference
/// (`Local` without one) and the `Available` condition.
const TABLE: Printer = Printer {
    columns: &[
        Column::new(
            "Service",
            "The reference to the service that hosts this API endpoint.",
        ),
        Column::new("Available", "Whether this service is available."),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(service_cell(obj)),
            json!(available_cell(obj)),
            age(obj),
        ]
    },
};

/// `Local`, or `namespace/name` of the service.
fn service_cell(obj: &Value) -> String {
    match meta::path(obj, "spec.service").filter(|s| s.is_object()) {
        Some(service) => format!("{}/{}", text(service, "namespace"), text(service, "name")),
        None => "Local".to_string(),
    }
}

/// `True`, `False (Reason)`, or `Unknown` without an `Available` condition.
fn available_cell(obj: &Value) -> String {
    let Some(condition) = availability::condition(obj) else {
        return "Unknown".to_string();
    };
    let status = text(condition, "status");
    let reason = text(condition, "reason");
    if status == "True" || reason.is_empty() {
        status.to_string()
    } else {
        format!("{status} ({reason})")
    }
}

/// The strategy of APIServices.
#[derive(Debug, Clone, Copy)]
struct ApiServices;

impl Strategy for ApiServices {
    fn finalizer_names(&self) -> super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::FinalizerNames::Qualified
    }

    /// Upstream resets the status and marks a local APIService available at once.
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        super::strategy::strip_status(obj);
        let local = meta::path(obj, "spec.service").is_none_or(Value::is_null);
        if local && let Some(map) = obj.as_object_mut() {
            map.insert(
                "status".into(),
                json!({"conditions": [availability::local_condition()]}),
            );
        }
    }

    /// A `caBundle` that is not base64 makes the object undecodable (400).
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let warnings = crate::openapi_builtin::decode_builtin(info, obj, validation)?;
        if let Some(bundle) = meta::path(obj, "spec.caBundle").and_then(Value::as_str) {
            super::admissionregistration::decode_base64(&info.kind, bundle)?;
        }
        Ok(warnings)
    }

    /// Upstream's `SetDefaults_ServiceReference`: port 443.
    fn default(&self, obj: &mut Value) {
        if let Some(service) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_api_service(obj)
    }

    fn validate_update(&self, obj: &Value, _old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validate_status(obj);
        }
        validate_api_service(obj)
    }
}

/// Upstream's `ValidateAPIService` (object metadata aside, which the store checks).
pub(crate) fn validate_api_service(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let group = text(spec, "group");
    let version = text(spec, "version");
    let name = meta::name(obj);
    let required = format!("{version}.{group}");
    if path_segment_name(name).is_empty() && name != required {
        errs.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            &format!(
                "must be `spec.version+\".\"+spec.group`: {}",
                crate::validation::names::go_quote(&required)
            ),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(Cause::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for e in dns1123_subdomain(group) {
            errs.push(Cause::invalid("spec.group", &json!(group), &e));
        }
    }
    for e in dns1035_label(version) {
        errs.push(Cause::invalid("spec.version", &json!(version), &e));
    }
    let group_priority = spec
        .get("groupPriorityMinimum")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        errs.push(Cause::invalid(
            "spec.groupPriorityMinimum",
            &json!(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = spec
        .get("versionPriority")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        errs.push(Cause::invalid(
            "spec.versionPriority",
            &json!(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let bundle = ca_bundle_len(spec);
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(service) = spec.get("service").filter(|s| s.is_object()) else {
        if bundle != 0 {
            errs.push(Cause::invalid(
                "spec.caBundle",
                &json!(format!("{bundle} bytes")),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(Cause::invalid(
                "spec.insecureSkipTLSVerify",
                &json!(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    if text(service, "namespace").is_empty() {
        errs.push(Cause::required("spec.service.namespace", ""));
    }
    if text(service, "name").is_empty() {
        errs.push(Cause::required("spec.service.name", ""));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(Cause::invalid(
            "spec.service.port",
            &json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && bundle > 0 {
        errs.push(Cause::invalid(
            "spec.insecureSkipTLSVerify",
            &json!(true),
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// Upstream's `ValidateAPIServiceStatus`: condition statuses are `True`, `False` or `Unknown`.
fn validate_status(obj: &Value) -> Vec<Cause> {
    const STATUSES: [&str; 3] = ["True", "False", "Unknown"];
    let conditions = meta::path(obj, "status.conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let supported: Vec<Value> = STATUSES.iter().map(|s| json!(s)).collect();
    conditions
        .iter()
        .enumerate()
        .filter(|(_, c)| !STATUSES.contains(&text(c, "status")))
        .map(|(i, c)| {
            Cause::not_supported(
                format!("status.conditions[{i}].status"),
                &json!(text(c, "status")),
                &supported,
            )
        })
        .collect()
}

/// The decoded length of `spec.caBundle` (0 when absent or not base64, which decoding refuses).
fn ca_bundle_len(spec: &Value) -> usize {
    use base64::Engine;
    spec.get("caBundle")
        .and_then(Value::as_str)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .map_or(0, |b| b.len())
}

/// A copy of `obj` with `status` replaced (for the availability controller's writes).
pub(crate) fn with_status(obj: &Value, status: Value) -> Value {
    let mut next = obj.clone();
    if let Some(map) = next.as_object_mut() {
        map.insert("status".into(), status);
    }
    next
}

/// The `spec` an APIService should have: group, version and priorities, nothing else.
pub(crate) fn local_spec(
    group: &str,
    version: &str,
    group_priority: i64,
    version_priority: i64,
) -> Map<String, Value> {
    let mut spec = Map::new();
    spec.insert("group".into(), json!(group));
    spec.insert("version".into(), json!(version));
    spec.insert("groupPriorityMinimum".into(), json!(group_priority));
    spec.insert("versionPriority".into(), json!(version_priority));
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn messages(obj: &Value) -> Vec<String> {
        let mut obj = obj.clone();
        ApiServices.default(&mut obj);
        validate_api_service(&obj)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn a_local_and_an_aggregated_service_are_valid() {
        let local = service(
            "v1.",
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
        );
        assert!(messages(&local).is_empty(), "{:?}", messages(&local));
        let remote = service(
            "v1beta1.metrics.k8s.io",
            json!({"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                   "versionPriority": 100, "insecureSkipTLSVerify": true,
                   "service": {"namespace": "kube-system", "name": "metrics-server"}}),
        );
        assert!(messages(&remote).is_empty(), "{:?}", messages(&remote));
        let mut defaulted = remote.clone();
        ApiServices.default(&mut defaulted);
        assert_eq!(defaulted["spec"]["service"]["port"], 443);
    }

    #[test]
    fn refusals_with_upstream_messages() {
        let got = messages(&service(
            "v1.wrong.example.com",
            json!({"group": "Example.com", "version": "1v", "groupPriorityMinimum": 20001,
                   "versionPriority": 0}),
        ));
        assert_eq!(
            got[0],
            "metadata.name: Invalid value: \"v1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"1v.Example.com\""
        );
        assert!(got[1].starts_with(
            "spec.group: Invalid value: \"Example.com\": a lowercase RFC 1123 subdomain"
        ));
        assert!(got[2].starts_with("spec.version: Invalid value: \"1v\": a DNS-1035 label"));
        assert_eq!(
            got[3],
            "spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than 20000"
        );
        assert_eq!(
            got[4],
            "spec.versionPriority: Invalid value: 0: must be positive and less than 1000"
        );
        let got = messages(&service(
            "v2.",
            json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1,
                   "caBundle": "AAAA", "insecureSkipTLSVerify": true}),
        ));
        assert_eq!(
            got,
            vec![
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let got = messages(&service(
            "v1.x.example.com",
            json!({"group": "x.example.com", "version": "v1", "groupPriorityMinimum": 1,
                   "versionPriority": 1, "caBundle": "AAAA", "insecureSkipTLSVerify": true,
                   "service": {"port": 70000}}),
        ));
        assert_eq!(
            got,
            vec![
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn table_cells() {
        let local = json!({"metadata": {"name": "v1."}, "spec": {},
            "status": {"conditions": [availability::local_condition()]}});
        assert_eq!(service_cell(&local), "Local");
        assert_eq!(available_cell(&local), "True");
        let remote = json!({"spec": {"service": {"namespace": "ns", "name": "svc"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "ServiceNotFound"}]}});
        assert_eq!(service_cell(&remote), "ns/svc");
        assert_eq!(available_cell(&remote), "False (ServiceNotFound)");
        assert_eq!(available_cell(&json!({})), "Unknown");
    }

    #[test]
    fn status_conditions_are_checked() {
        let obj = json!({"status": {"conditions": [{"type": "Available", "status": "Maybe"}]}});
        let got: Vec<String> = validate_status(&obj).iter().map(Cause::summary).collect();
        assert_eq!(
            got,
            vec![
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""
            ]
        );
    }
}
