//! OpenAPI schemas of the built-in kinds, with upstream's descriptions.
//!
//! They come from `k8s-openapi`'s `JsonSchema` implementations (generated from the upstream
//! OpenAPI document, doc comments included), collected once into OpenAPI 3 component schemas
//! named as upstream names them (`io.k8s.api.apps.v1.Deployment`), so `kubectl explain
//! deployment.spec.replicas` reads the same text it reads from a cluster.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use k8s_openapi::api::{
    apps, authentication, authorization, batch, coordination, core, events, rbac,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// Component schemas by model name, every model a built-in kind refers to included.
static DEFINITIONS: LazyLock<Map<String, Value>> = LazyLock::new(build);

macro_rules! collect {
    ($gen:ident; $($t:ty),* $(,)?) => {
        $( let _ = $gen.subschema_for::<$t>(); )*
    };
}

fn build() -> Map<String, Value> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    collect!(generator;
        core::v1::Namespace, core::v1::ConfigMap, core::v1::Secret, core::v1::Service,
        core::v1::Endpoints, core::v1::Node, core::v1::ServiceAccount, core::v1::Pod,
        core::v1::Event, events::v1::Event,
        apps::v1::Deployment, apps::v1::ReplicaSet, apps::v1::StatefulSet, apps::v1::DaemonSet,
        batch::v1::Job, batch::v1::CronJob, coordination::v1::Lease,
        apiextensions::v1::CustomResourceDefinition,
        rbac::v1::Role, rbac::v1::ClusterRole, rbac::v1::RoleBinding, rbac::v1::ClusterRoleBinding,
        authentication::v1::SelfSubjectReview, authentication::v1::TokenReview,
        authorization::v1::LocalSubjectAccessReview, authorization::v1::SelfSubjectAccessReview,
        authorization::v1::SelfSubjectRulesReview, authorization::v1::SubjectAccessReview,
    );
    generator.take_definitions(true)
}

/// The schema of a built-in model (`io.k8s.api.core.v1.Pod`), if known.
pub fn schema(model: &str) -> Option<&'static Value> {
    DEFINITIONS.get(model)
}

/// `model` and every model it refers to, directly or not (through `$ref`), in name order.
pub fn closure(model: &str) -> Vec<(&'static str, &'static Value)> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![model.to_string()];
    while let Some(name) = stack.pop() {
        let Some((key, value)) = DEFINITIONS.get_key_value(&name) else {
            continue;
        };
        if !seen.insert(key.as_str()) {
            continue;
        }
        refs(value, &mut stack);
    }
    seen.into_iter()
        .filter_map(|k| DEFINITIONS.get(k).map(|v| (k, v)))
        .collect()
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref")
                && let Some(name) = r.rsplit('/').next()
            {
                out.push(name.to_string());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_schema_has_upstream_descriptions_and_references() {
        let d = schema("io.k8s.api.apps.v1.Deployment").expect("deployment");
        assert_eq!(
            d["description"],
            "Deployment enables declarative updates for Pods and ReplicaSets."
        );
        let names: Vec<&str> = closure("io.k8s.api.apps.v1.Deployment")
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(names.contains(&"io.k8s.api.apps.v1.DeploymentSpec"));
        assert!(names.contains(&"io.k8s.api.core.v1.PodSpec"));
        assert!(names.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let spec = schema("io.k8s.api.apps.v1.DeploymentSpec").expect("spec");
        assert!(
            spec["properties"]["replicas"]["description"]
                .as_str()
                .is_some_and(|s| s.starts_with("Number of desired pods"))
        );
        // References keep their description beside them as `allOf` (OpenAPI 3.0 ignores
        // siblings of `$ref`).
        let template = &spec["properties"]["template"];
        assert!(template.get("$ref").is_none() || template.get("description").is_none());
    }

    #[test]
    fn every_served_builtin_has_a_schema() {
        for m in [
            "io.k8s.api.core.v1.Pod",
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.api.apps.v1.StatefulSet",
            "io.k8s.api.batch.v1.CronJob",
            "io.k8s.api.coordination.v1.Lease",
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
            "io.k8s.api.events.v1.Event",
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ] {
            assert!(schema(m).is_some(), "{m}");
        }
    }
}
