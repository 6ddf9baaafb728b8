//! The webhooks an operator serves, as its manifests describe them: admission webhooks
//! (defaulting and validating, kubebuilder's `+kubebuilder:webhook` markers turned into
//! code) and the kinds converted by its `/convert` webhook. The webhook server records them
//! as they are registered; [`render`](super::render) turns them into kubebuilder's
//! `config/webhook/manifests.yaml` and `service.yaml` and each converted CRD's
//! `spec.conversion`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, ServiceReference, WebhookClientConfig, WebhookConversion,
};
use kube::Resource;
use serde_json::{Value, json};

use super::render::{ManifestFile, OperatorInfo};

/// The port the webhook Service exposes (kubebuilder's `config/webhook/service.yaml`).
pub const WEBHOOK_SERVICE_PORT: u16 = 443;
/// The container port the webhook server listens on (controller-runtime's default).
pub const WEBHOOK_TARGET_PORT: u16 = 9443;

/// cert-manager's CA injection annotation (its value: `<namespace>/<Certificate>`).
pub const CERT_MANAGER_INJECT: &str = "cert-manager.io/inject-ca-from";
/// The Secret cert-manager writes the serving certificate to (kubebuilder's
/// `webhook-server-cert`).
pub const CERT_MANAGER_SECRET: &str = "webhook-server-cert";

/// Whether an admission webhook mutates (defaulting) or validates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AdmissionType {
    /// A `MutatingWebhookConfiguration` entry.
    Mutating,
    /// A `ValidatingWebhookConfiguration` entry.
    Validating,
}

/// One admission webhook of the operator: which objects it receives and on which path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionWebhook {
    /// Mutating or validating.
    pub admission: AdmissionType,
    /// The API group of the kind (`""` for the core group).
    pub group: String,
    /// The version of the kind.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The resource (plural) the rule matches.
    pub resource: String,
    /// The path the webhook server serves it on.
    pub path: String,
    /// The operations it receives (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub operations: Vec<String>,
}

impl AdmissionWebhook {
    /// The webhook of `K` of type `admission` on `path`, receiving creates and updates (what
    /// kubebuilder's scaffolded markers say: `verbs=create;update`).
    pub fn of<K: Resource<DynamicType = ()>>(admission: AdmissionType, path: &str) -> Self {
        Self {
            admission,
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            resource: K::plural(&()).into_owned(),
            path: path.to_owned(),
            operations: vec!["CREATE".to_owned(), "UPDATE".to_owned()],
        }
    }

    /// Sets the operations it receives.
    #[must_use]
    pub fn operations<I, S>(mut self, operations: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.operations = operations.into_iter().map(Into::into).collect();
        self
    }

    /// kubebuilder's webhook name: `m<kind>-<version>.kb.io` (mutating) or
    /// `v<kind>-<version>.kb.io` (validating), the kind lowercased.
    pub fn name(&self) -> String {
        let prefix = match self.admission {
            AdmissionType::Mutating => 'm',
            AdmissionType::Validating => 'v',
        };
        format!(
            "{prefix}{}-{}.kb.io",
            self.kind.to_lowercase(),
            self.version
        )
    }

    /// The entry of the webhook configuration: the Service's path, the rule, `failurePolicy:
    /// Fail`, `sideEffects: None`, `admissionReviewVersions: [v1]` (controller-gen's output).
    fn to_json(&self, info: &OperatorInfo) -> Value {
        json!({
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": service_reference(info, &self.path)},
            "failurePolicy": "Fail",
            "name": self.name(),
            "rules": [{
                "apiGroups": [self.group],
                "apiVersions": [self.version],
                "operations": self.operations,
                "resources": [self.resource],
            }],
            "sideEffects": "None",
        })
    }
}

/// A kind whose versions the operator's `/convert` webhook converts through a hub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvertedKind {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The hub's version: the CRD's storage version.
    pub hub_version: String,
}

/// The `service` client config of a webhook of the operator: its webhook Service in its
/// namespace, on `path`, port 443.
fn service_reference(info: &OperatorInfo, path: &str) -> Value {
    json!({
        "name": info.webhook_service_name(),
        "namespace": info.namespace,
        "path": path,
        "port": WEBHOOK_SERVICE_PORT,
    })
}

/// A CRD's `spec.conversion` for the operator's conversion webhook: strategy `Webhook`,
/// ConversionReview v1, the webhook Service on `path` (port 443).
pub fn conversion_stanza(info: &OperatorInfo, path: &str) -> CustomResourceConversion {
    CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    name: info.webhook_service_name(),
                    namespace: info.namespace.clone(),
                    path: Some(path.to_owned()),
                    port: Some(i32::from(WEBHOOK_SERVICE_PORT)),
                }),
                ..WebhookClientConfig::default()
            }),
            conversion_review_versions: vec!["v1".to_owned()],
        }),
    }
}

/// `config/webhook/manifests.yaml` (the Mutating and the Validating configuration, each
/// only when it has webhooks; their entries sorted by name as controller-gen writes them)
/// and `config/webhook/service.yaml` (port 443 to the manager's 9443); nothing when the
/// operator serves no webhook. `converts` says a conversion webhook needs the Service.
pub fn files(
    webhooks: &[AdmissionWebhook],
    converts: bool,
    cert_manager: bool,
    info: &OperatorInfo,
) -> Vec<ManifestFile> {
    let mut files = Vec::new();
    let mut configurations = Vec::new();
    for (admission, kind, name) in [
        (
            AdmissionType::Mutating,
            "MutatingWebhookConfiguration",
            info.mutating_webhook_configuration_name(),
        ),
        (
            AdmissionType::Validating,
            "ValidatingWebhookConfiguration",
            info.validating_webhook_configuration_name(),
        ),
    ] {
        let mut entries: Vec<&AdmissionWebhook> = webhooks
            .iter()
            .filter(|w| w.admission == admission)
            .collect();
        if entries.is_empty() {
            continue;
        }
        entries.sort_by_key(|w| w.name());
        let mut configuration = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name, "labels": webhook_labels(info)},
            "webhooks": entries.iter().map(|w| w.to_json(info)).collect::<Vec<_>>(),
        });
        if cert_manager {
            configuration["metadata"]["annotations"] =
                json!({CERT_MANAGER_INJECT: info.serving_certificate_ref()});
        }
        configurations.push(configuration);
    }
    let serves = !configurations.is_empty() || converts;
    if !configurations.is_empty() {
        files.push(ManifestFile {
            path: "config/webhook/manifests.yaml".to_owned(),
            objects: configurations,
        });
    }
    if serves {
        files.push(ManifestFile {
            path: "config/webhook/service.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": info.webhook_service_name(),
                    "namespace": info.namespace,
                    "labels": webhook_labels(info),
                },
                "spec": {
                    "ports": [{
                        "port": WEBHOOK_SERVICE_PORT,
                        "protocol": "TCP",
                        "targetPort": WEBHOOK_TARGET_PORT,
                    }],
                    "selector": {
                        "control-plane": "controller-manager",
                        "app.kubernetes.io/name": info.name,
                    },
                },
            })],
        });
    }
    files
}

/// The labels of the webhook objects.
fn webhook_labels(info: &OperatorInfo) -> Value {
    json!({
        "app.kubernetes.io/name": info.name,
        "app.kubernetes.io/component": "webhook",
        "app.kubernetes.io/managed-by": "korral",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    fn info() -> OperatorInfo {
        OperatorInfo::new("memcached-operator", "example.com")
    }

    fn memcached(admission: AdmissionType, path: &str) -> AdmissionWebhook {
        AdmissionWebhook {
            admission,
            group: "cache.example.com".to_owned(),
            version: "v1".to_owned(),
            kind: "Memcached".to_owned(),
            resource: "memcacheds".to_owned(),
            path: path.to_owned(),
            operations: vec!["CREATE".to_owned(), "UPDATE".to_owned()],
        }
    }

    #[test]
    fn names_follow_kubebuilder() {
        assert_eq!(
            memcached(AdmissionType::Mutating, "/m").name(),
            "mmemcached-v1.kb.io"
        );
        assert_eq!(
            memcached(AdmissionType::Validating, "/v").name(),
            "vmemcached-v1.kb.io"
        );
        let pod = AdmissionWebhook::of::<Pod>(AdmissionType::Mutating, "/mutate--v1-pod")
            .operations(["CREATE"]);
        assert_eq!(pod.group, "");
        assert_eq!(pod.resource, "pods");
        assert_eq!(pod.name(), "mpod-v1.kb.io");
        assert_eq!(pod.operations, ["CREATE"]);
    }

    #[test]
    fn configurations_and_service_as_controller_gen_writes_them() {
        let webhooks = [
            memcached(
                AdmissionType::Validating,
                "/validate-cache-example-com-v1-memcached",
            ),
            memcached(
                AdmissionType::Mutating,
                "/mutate-cache-example-com-v1-memcached",
            ),
        ];
        let files = files(&webhooks, false, false, &info());
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, "config/webhook/manifests.yaml");
        let [mutating, validating] = files[0].objects.as_slice() else {
            panic!("two configurations: {:?}", files[0].objects);
        };
        assert_eq!(mutating["kind"], "MutatingWebhookConfiguration");
        assert_eq!(
            mutating["metadata"]["name"],
            "memcached-operator-mutating-webhook-configuration"
        );
        assert_eq!(
            mutating["webhooks"],
            json!([{
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {
                    "name": "memcached-operator-webhook-service",
                    "namespace": "memcached-operator-system",
                    "path": "/mutate-cache-example-com-v1-memcached",
                    "port": 443,
                }},
                "failurePolicy": "Fail",
                "name": "mmemcached-v1.kb.io",
                "rules": [{
                    "apiGroups": ["cache.example.com"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["memcacheds"],
                }],
                "sideEffects": "None",
            }])
        );
        assert_eq!(validating["kind"], "ValidatingWebhookConfiguration");
        assert_eq!(
            validating["metadata"]["name"],
            "memcached-operator-validating-webhook-configuration"
        );
        assert_eq!(validating["webhooks"][0]["name"], "vmemcached-v1.kb.io");
        assert_eq!(
            validating["webhooks"][0]["clientConfig"]["service"]["path"],
            "/validate-cache-example-com-v1-memcached"
        );

        assert_eq!(files[1].path, "config/webhook/service.yaml");
        let service = &files[1].objects[0];
        assert_eq!(
            service["metadata"]["name"],
            "memcached-operator-webhook-service"
        );
        assert_eq!(
            service["metadata"]["namespace"],
            "memcached-operator-system"
        );
        assert_eq!(
            service["spec"]["ports"],
            json!([{"port": 443, "protocol": "TCP", "targetPort": 9443}])
        );
        assert_eq!(
            service["spec"]["selector"],
            json!({"control-plane": "controller-manager", "app.kubernetes.io/name": "memcached-operator"})
        );
    }

    #[test]
    fn only_the_configurations_in_use_and_the_service_for_conversion_alone() {
        let validating_only = files(
            &[memcached(AdmissionType::Validating, "/v")],
            false,
            false,
            &info(),
        );
        assert_eq!(validating_only[0].objects.len(), 1);
        assert_eq!(
            validating_only[0].objects[0]["kind"],
            "ValidatingWebhookConfiguration"
        );

        let conversion_only = files(&[], true, false, &info());
        assert_eq!(conversion_only.len(), 1);
        assert_eq!(conversion_only[0].path, "config/webhook/service.yaml");

        assert!(files(&[], false, false, &info()).is_empty());
    }

    #[test]
    fn cert_manager_injects_the_ca_of_the_serving_certificate() {
        let files = files(
            &[memcached(AdmissionType::Mutating, "/m")],
            false,
            true,
            &info(),
        );
        assert_eq!(
            files[0].objects[0]["metadata"]["annotations"],
            json!({"cert-manager.io/inject-ca-from": "memcached-operator-system/memcached-operator-serving-cert"})
        );
    }

    #[test]
    fn the_conversion_stanza_points_at_convert() {
        assert_eq!(
            serde_json::to_value(conversion_stanza(&info(), "/convert")).expect("json"),
            json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"service": {
                        "name": "memcached-operator-webhook-service",
                        "namespace": "memcached-operator-system",
                        "path": "/convert",
                        "port": 443,
                    }},
                    "conversionReviewVersions": ["v1"],
                },
            })
        );
    }
}
