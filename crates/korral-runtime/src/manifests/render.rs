//! Rendering an operator's manifests: CRDs, RBAC (ClusterRole, leader-election Role,
//! ServiceAccount, bindings), the manager (Namespace, Deployment) and, as kubebuilder v4
//! scaffolds them, the secure-metrics objects (metrics Service, ServiceMonitor, the
//! `metrics-auth` and `metrics-reader` ClusterRoles) and per-kind admin/editor/viewer
//! ClusterRoles, as Kubernetes objects grouped in files under `config/`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::rbac::{Permissions, Rule};
use super::{Manifests, ManifestsError};

/// What the deploy manifests are named after and where they go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorInfo {
    /// The project name (`memcached-operator`); objects are prefixed with it.
    pub name: String,
    /// The namespace the manager is deployed to (default `<name>-system`).
    pub namespace: String,
    /// The manager image (default `controller:latest`; `korral deploy --image` replaces it).
    pub image: String,
    /// The name of the leader-election Lease.
    pub leader_election_id: String,
}

impl OperatorInfo {
    /// The defaults for the operator `name` of `domain`.
    pub fn new(name: impl Into<String>, domain: &str) -> Self {
        let name = name.into();
        Self {
            namespace: format!("{name}-system"),
            image: "controller:latest".to_owned(),
            leader_election_id: format!("{name}.{domain}"),
            name,
        }
    }

    /// Sets the namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the image.
    pub fn image(mut self, image: impl Into<String>) -> Self {
        self.image = image.into();
        self
    }

    /// The manager's ServiceAccount.
    pub fn service_account(&self) -> String {
        format!("{}-controller-manager", self.name)
    }

    /// The manager's Deployment.
    pub fn deployment_name(&self) -> String {
        format!("{}-controller-manager", self.name)
    }

    /// The Service in front of the manager's HTTPS metrics port.
    pub fn metrics_service_name(&self) -> String {
        format!("{}-controller-manager-metrics-service", self.name)
    }

    /// The ClusterRole granting `get` on the non-resource URL `/metrics`: bind it to whoever
    /// scrapes (Prometheus' service account).
    pub fn metrics_reader_role_name(&self) -> String {
        format!("{}-metrics-reader", self.name)
    }

    /// The Service in front of the webhook server (kubebuilder's `webhook-service`, with the
    /// project prefix its kustomization adds).
    pub fn webhook_service_name(&self) -> String {
        format!("{}-webhook-service", self.name)
    }

    /// cert-manager's serving Certificate of the webhook Service as `<namespace>/<name>`
    /// (kubebuilder's `serving-cert`, prefixed), what `cert-manager.io/inject-ca-from` names.
    pub fn serving_certificate_ref(&self) -> String {
        format!("{}/{}-serving-cert", self.namespace, self.name)
    }

    /// The MutatingWebhookConfiguration (kubebuilder's `mutating-webhook-configuration`,
    /// prefixed).
    pub fn mutating_webhook_configuration_name(&self) -> String {
        format!("{}-mutating-webhook-configuration", self.name)
    }

    /// The ValidatingWebhookConfiguration (kubebuilder's `validating-webhook-configuration`,
    /// prefixed).
    pub fn validating_webhook_configuration_name(&self) -> String {
        format!("{}-validating-webhook-configuration", self.name)
    }
}

/// The port of the secure metrics endpoint (kubebuilder v4's `--metrics-bind-address=:8443`).
pub const METRICS_SECURE_PORT: u16 = 8443;

/// One file of manifests: its path relative to the project and its objects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Where the file goes (`config/rbac/role.yaml`).
    pub path: String,
    /// The objects, in order.
    pub objects: Vec<Value>,
}

/// Every manifest of an operator, as printed by `--print-manifests` and read by `korral generate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestSet {
    /// Always [`ManifestSet::API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always `ManifestSet`.
    pub kind: String,
    /// The operator's name.
    pub name: String,
    /// The files.
    pub files: Vec<ManifestFile>,
}

impl ManifestSet {
    /// The `apiVersion` of a printed manifest set.
    pub const API_VERSION: &'static str = "korral.rs/v1";
}

fn labels(info: &OperatorInfo, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": info.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "korral",
    })
}

fn rules_json(rules: &[Rule]) -> Vec<Value> {
    rules
        .iter()
        .map(|r| {
            json!({
                "apiGroups": [r.group],
                "resources": r.resources,
                "verbs": r.verbs,
            })
        })
        .collect()
}

/// The permissions the manager needs for leader election in its own namespace.
pub fn leader_election_permissions() -> Permissions {
    let mut perms = Permissions::new();
    perms.add(Rule::new("", ["configmaps"]).verbs(super::rbac::OWN_VERBS));
    perms.add(Rule::new("coordination.k8s.io", ["leases"]).verbs(super::rbac::OWN_VERBS));
    perms.add(Rule::new("", ["events"]).verbs(["create", "patch"]));
    perms
}

pub(super) fn render(
    manifests: &Manifests,
    info: &OperatorInfo,
) -> Result<ManifestSet, ManifestsError> {
    let mut files = Vec::new();
    for crd in &manifests.crds {
        let group = &crd.spec.group;
        let plural = &crd.spec.names.plural;
        let crd = &manifests.crd_with_conversion(crd, info);
        let object = serde_json::to_value(crd).map_err(|source| ManifestsError::SerializeCrd {
            name: crd.metadata.name.clone().unwrap_or_default(),
            source,
        })?;
        files.push(ManifestFile {
            path: format!("config/crd/bases/{group}_{plural}.yaml"),
            objects: vec![object],
        });
    }

    let rbac_labels = labels(info, "rbac");
    let sa = info.service_account();
    let manager_role = format!("{}-manager-role", info.name);
    let leader_role = format!("{}-leader-election-role", info.name);
    files.push(ManifestFile {
        path: "config/rbac/service_account.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": info.namespace, "labels": rbac_labels},
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/role.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": manager_role, "labels": rbac_labels},
            "rules": rules_json(&manifests.permissions.rules()),
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/role_binding.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{}-manager-rolebinding", info.name), "labels": rbac_labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": manager_role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": info.namespace}],
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/leader_election_role.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": leader_role, "namespace": info.namespace, "labels": rbac_labels},
            "rules": rules_json(&leader_election_permissions().rules()),
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/leader_election_role_binding.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": format!("{}-leader-election-rolebinding", info.name),
                "namespace": info.namespace,
                "labels": rbac_labels,
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": leader_role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": info.namespace}],
        })],
    });

    files.extend(metrics_rbac(info));
    files.extend(kind_roles(manifests, info));

    files.push(ManifestFile {
        path: "config/manager/manager.yaml".to_owned(),
        objects: vec![
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": info.namespace,
                    "labels": {
                        "app.kubernetes.io/name": info.name,
                        "app.kubernetes.io/managed-by": "korral",
                        "control-plane": "controller-manager",
                    },
                },
            }),
            deployment(info, manifests.serves_webhooks(), manifests.cert_manager),
        ],
    });
    files.push(metrics_service(info));
    files.push(service_monitor(info));
    files.extend(super::webhooks::files(
        &manifests.webhooks,
        !manifests.conversions.is_empty(),
        manifests.cert_manager,
        info,
    ));
    Ok(ManifestSet {
        api_version: ManifestSet::API_VERSION.to_owned(),
        kind: "ManifestSet".to_owned(),
        name: info.name.clone(),
        files,
    })
}

/// The manager's Deployment; `webhooks` adds the webhook server's container port
/// (`webhook-server`, 9443) as kubebuilder's `manager_webhook_patch.yaml` does.
fn deployment(info: &OperatorInfo, webhooks: bool, cert_manager: bool) -> Value {
    let selector = json!({
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": info.name,
    });
    let mut deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": info.deployment_name(),
            "namespace": info.namespace,
            "labels": {
                "control-plane": "controller-manager",
                "app.kubernetes.io/name": info.name,
                "app.kubernetes.io/managed-by": "korral",
            },
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": selector,
                    "annotations": {"kubectl.kubernetes.io/default-container": "manager"},
                },
                "spec": {
                    "serviceAccountName": info.service_account(),
                    "terminationGracePeriodSeconds": 10,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "manager",
                        "image": info.image,
                        "command": ["/manager"],
                        "args": [
                            "--leader-elect",
                            format!("--metrics-bind-address=:{METRICS_SECURE_PORT}"),
                            "--health-probe-bind-address=:8081",
                        ],
                        "env": [{
                            "name": "POD_NAMESPACE",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                        }],
                        "ports": [
                            {"name": "https", "containerPort": METRICS_SECURE_PORT, "protocol": "TCP"},
                            {"name": "probes", "containerPort": 8081, "protocol": "TCP"},
                        ],
                        "livenessProbe": {
                            "httpGet": {"path": "/healthz", "port": 8081},
                            "initialDelaySeconds": 15,
                            "periodSeconds": 20,
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/readyz", "port": 8081},
                            "initialDelaySeconds": 5,
                            "periodSeconds": 10,
                        },
                        "resources": {
                            "limits": {"cpu": "500m", "memory": "128Mi"},
                            "requests": {"cpu": "10m", "memory": "64Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "runAsNonRoot": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }],
                },
            },
        },
    });
    if webhooks {
        let pod = &mut deployment["spec"]["template"]["spec"];
        pod["volumes"] = if cert_manager {
            json!([{
                "name": "webhook-certs",
                "secret": {"secretName": super::webhooks::CERT_MANAGER_SECRET},
            }])
        } else {
            json!([{"name": "webhook-certs", "emptyDir": {}}])
        };
        let container = &mut pod["containers"][0];
        if let Some(ports) = container["ports"].as_array_mut() {
            ports.push(json!({
                "name": "webhook-server",
                "containerPort": super::webhooks::WEBHOOK_TARGET_PORT,
                "protocol": "TCP",
            }));
        }
        // The root filesystem is read-only: the certificate directory is a volume (the
        // self-managed certificates are written there), or cert-manager's Secret.
        container["volumeMounts"] = json!([{
            "name": "webhook-certs",
            "mountPath": WEBHOOK_CERT_MOUNT,
        }]);
    }
    deployment
}

/// Where the manager's webhook certificate directory is mounted (controller-runtime's default
/// `$TMPDIR/k8s-webhook-server/serving-certs` in a container).
pub const WEBHOOK_CERT_MOUNT: &str = "/tmp/k8s-webhook-server/serving-certs";

/// The `metrics-auth` ClusterRole (create TokenReviews and SubjectAccessReviews, what the
/// secure metrics filter does) bound to the manager's ServiceAccount, and the `metrics-reader`
/// ClusterRole (`get` on `/metrics`), as kubebuilder v4's `config/rbac/metrics_*.yaml`.
fn metrics_rbac(info: &OperatorInfo) -> Vec<ManifestFile> {
    let rbac_labels = labels(info, "rbac");
    let auth_role = format!("{}-metrics-auth-role", info.name);
    vec![
        ManifestFile {
            path: "config/rbac/metrics_auth_role.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": auth_role, "labels": rbac_labels},
                "rules": [
                    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                    {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
                ],
            })],
        },
        ManifestFile {
            path: "config/rbac/metrics_auth_role_binding.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("{}-metrics-auth-rolebinding", info.name), "labels": rbac_labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": auth_role},
                "subjects": [{"kind": "ServiceAccount", "name": info.service_account(), "namespace": info.namespace}],
            })],
        },
        ManifestFile {
            path: "config/rbac/metrics_reader_role.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": info.metrics_reader_role_name(), "labels": rbac_labels},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            })],
        },
    ]
}

/// Per declared CRD kind, kubebuilder v4's helper ClusterRoles for cluster admins (the manager
/// does not use them): `<kind>-admin-role` (`*` on the resource), `<kind>-editor-role`
/// (create, delete, get, list, patch, update, watch) and `<kind>-viewer-role` (get, list,
/// watch), each with `get` on the status subresource. Files are `<kind>_<role>_role.yaml`,
/// `<group>_<kind>_<role>_role.yaml` when two groups declare the same kind (multigroup).
fn kind_roles(manifests: &Manifests, info: &OperatorInfo) -> Vec<ManifestFile> {
    let rbac_labels = labels(info, "rbac");
    let kinds: Vec<String> = manifests
        .crds
        .iter()
        .map(|crd| crd.spec.names.kind.to_ascii_lowercase())
        .collect();
    let mut files = Vec::new();
    for crd in &manifests.crds {
        let group = &crd.spec.group;
        let plural = &crd.spec.names.plural;
        let kind = crd.spec.names.kind.to_ascii_lowercase();
        let stem = if kinds.iter().filter(|k| **k == kind).count() > 1 {
            let short = group.split('.').next().unwrap_or(group);
            format!("{short}_{kind}")
        } else {
            kind
        };
        let roles: [(&str, &str, Vec<&str>); 3] = [
            ("admin", "Grants full permissions ('*')", vec!["*"]),
            (
                "editor",
                "Grants permissions to create, update, and delete",
                vec![
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ],
            ),
            (
                "viewer",
                "Grants read-only access to",
                vec!["get", "list", "watch"],
            ),
        ];
        for (role, what, verbs) in roles {
            files.push(ManifestFile {
                path: format!("config/rbac/{stem}_{role}_role.yaml"),
                objects: vec![json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": {
                        "name": format!("{}-{}-{role}-role", info.name, stem.replace('_', "-")),
                        "labels": rbac_labels,
                        "annotations": {
                            "korral.rs/description": format!(
                                "{what} {plural}.{group}; not used by the operator itself, for cluster admins to grant to users."
                            ),
                        },
                    },
                    "rules": [
                        {"apiGroups": [group], "resources": [plural], "verbs": verbs},
                        {"apiGroups": [group], "resources": [format!("{plural}/status")], "verbs": ["get"]},
                    ],
                })],
            });
        }
    }
    files
}

/// The manager's pods' labels that the metrics Service and the ServiceMonitor select.
fn manager_selector(info: &OperatorInfo) -> Value {
    json!({
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": info.name,
    })
}

/// kubebuilder v4's `config/default/metrics_service.yaml`: port 8443 named `https` in front
/// of the manager's secure metrics endpoint.
fn metrics_service(info: &OperatorInfo) -> ManifestFile {
    let mut labels = manager_selector(info);
    labels["app.kubernetes.io/managed-by"] = json!("korral");
    ManifestFile {
        path: "config/default/metrics_service.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": info.metrics_service_name(), "namespace": info.namespace, "labels": labels},
            "spec": {
                "ports": [{
                    "name": "https",
                    "port": METRICS_SECURE_PORT,
                    "protocol": "TCP",
                    "targetPort": METRICS_SECURE_PORT,
                }],
                "selector": manager_selector(info),
            },
        })],
    }
}

/// kubebuilder v4's `config/prometheus/monitor.yaml`: a prometheus-operator ServiceMonitor
/// scraping the metrics Service over HTTPS with its service account token; the certificate
/// is not verified (`insecureSkipVerify`, kubebuilder's default while the manager serves a
/// self-signed certificate; mount a CA-signed one and set `tlsConfig.ca` for production).
fn service_monitor(info: &OperatorInfo) -> ManifestFile {
    let mut labels = manager_selector(info);
    labels["app.kubernetes.io/managed-by"] = json!("korral");
    ManifestFile {
        path: "config/prometheus/monitor.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {
                "name": format!("{}-controller-manager-metrics-monitor", info.name),
                "namespace": info.namespace,
                "labels": labels,
            },
            "spec": {
                "endpoints": [{
                    "path": "/metrics",
                    "port": "https",
                    "scheme": "https",
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "tlsConfig": {"insecureSkipVerify": true},
                }],
                "selector": {"matchLabels": manager_selector(info)},
            },
        })],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
        CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    };
    use kube::api::ObjectMeta;

    fn crd(group: &str, kind: &str, plural: &str) -> CustomResourceDefinition {
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(format!("{plural}.{group}")),
                ..Default::default()
            },
            spec: CustomResourceDefinitionSpec {
                group: group.to_owned(),
                names: CustomResourceDefinitionNames {
                    kind: kind.to_owned(),
                    plural: plural.to_owned(),
                    ..Default::default()
                },
                scope: "Namespaced".to_owned(),
                versions: Vec::new(),
                ..Default::default()
            },
            status: None,
        }
    }

    fn rendered(crds: &[CustomResourceDefinition]) -> ManifestSet {
        let mut manifests = Manifests::new();
        for c in crds {
            manifests.add_crd(c.clone());
        }
        let info = OperatorInfo::new("memcached-operator", "example.com");
        render(&manifests, &info).expect("render")
    }

    fn object(set: &ManifestSet, path: &str) -> Value {
        let file = set.files.iter().find(|f| f.path == path);
        let Some(file) = file else {
            panic!(
                "{path} missing; files: {:?}",
                set.files.iter().map(|f| &f.path).collect::<Vec<_>>()
            );
        };
        assert_eq!(file.objects.len(), 1, "{path}");
        file.objects[0].clone()
    }

    #[test]
    fn the_metrics_service_fronts_the_secure_port_of_the_manager_pods() {
        let set = rendered(&[]);
        let service = object(&set, "config/default/metrics_service.yaml");
        assert_eq!(service["kind"], "Service");
        assert_eq!(
            service["metadata"]["name"],
            "memcached-operator-controller-manager-metrics-service"
        );
        assert_eq!(
            service["metadata"]["namespace"],
            "memcached-operator-system"
        );
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "https", "port": 8443, "protocol": "TCP", "targetPort": 8443}])
        );
        assert_eq!(
            service["spec"]["selector"]["control-plane"],
            "controller-manager"
        );
        // The selector matches the Deployment's pod labels, and the manager serves on 8443.
        let manager = set
            .files
            .iter()
            .find(|f| f.path == "config/manager/manager.yaml")
            .expect("manager.yaml");
        let deployment = &manager.objects[1];
        let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
        for (k, v) in service["spec"]["selector"].as_object().expect("selector") {
            assert_eq!(&pod_labels[k], v, "pod label {k}");
        }
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert!(
            container["args"]
                .as_array()
                .expect("args")
                .contains(&json!("--metrics-bind-address=:8443")),
            "{container}"
        );
        assert_eq!(container["ports"][0]["containerPort"], 8443);
    }

    #[test]
    fn the_service_monitor_scrapes_https_with_the_service_account_token() {
        let set = rendered(&[]);
        let monitor = object(&set, "config/prometheus/monitor.yaml");
        assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
        assert_eq!(monitor["kind"], "ServiceMonitor");
        let endpoint = &monitor["spec"]["endpoints"][0];
        assert_eq!(endpoint["port"], "https");
        assert_eq!(endpoint["scheme"], "https");
        assert_eq!(endpoint["path"], "/metrics");
        assert_eq!(
            endpoint["bearerTokenFile"],
            "/var/run/secrets/kubernetes.io/serviceaccount/token"
        );
        assert_eq!(endpoint["tlsConfig"]["insecureSkipVerify"], true);
        assert_eq!(
            monitor["spec"]["selector"]["matchLabels"],
            object(&set, "config/default/metrics_service.yaml")["spec"]["selector"]
        );
    }

    #[test]
    fn metrics_auth_and_reader_roles_as_kubebuilder_scaffolds_them() {
        let set = rendered(&[]);
        let auth = object(&set, "config/rbac/metrics_auth_role.yaml");
        assert_eq!(auth["kind"], "ClusterRole");
        assert_eq!(
            auth["rules"],
            json!([
                {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
                {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
            ])
        );
        let binding = object(&set, "config/rbac/metrics_auth_role_binding.yaml");
        assert_eq!(binding["kind"], "ClusterRoleBinding");
        assert_eq!(binding["roleRef"]["name"], auth["metadata"]["name"]);
        assert_eq!(
            binding["subjects"],
            json!([{
                "kind": "ServiceAccount",
                "name": "memcached-operator-controller-manager",
                "namespace": "memcached-operator-system",
            }])
        );
        let reader = object(&set, "config/rbac/metrics_reader_role.yaml");
        assert_eq!(
            reader["metadata"]["name"],
            "memcached-operator-metrics-reader"
        );
        assert_eq!(
            reader["rules"],
            json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
        );
    }

    #[test]
    fn each_kind_gets_admin_editor_and_viewer_roles() {
        let set = rendered(&[crd("cache.example.com", "Memcached", "memcacheds")]);
        let rules = |role: &str| {
            let object = object(&set, &format!("config/rbac/memcached_{role}_role.yaml"));
            assert_eq!(object["kind"], "ClusterRole");
            assert_eq!(
                object["metadata"]["name"],
                format!("memcached-operator-memcached-{role}-role")
            );
            object["rules"].clone()
        };
        let status = json!({"apiGroups": ["cache.example.com"], "resources": ["memcacheds/status"], "verbs": ["get"]});
        let main = |verbs: Value| json!({"apiGroups": ["cache.example.com"], "resources": ["memcacheds"], "verbs": verbs});
        assert_eq!(rules("admin"), json!([main(json!(["*"])), status]));
        assert_eq!(
            rules("editor"),
            json!([
                main(json!([
                    "create", "delete", "get", "list", "patch", "update", "watch"
                ])),
                status
            ])
        );
        assert_eq!(
            rules("viewer"),
            json!([main(json!(["get", "list", "watch"])), status])
        );
    }

    #[test]
    fn the_same_kind_in_two_groups_gets_group_prefixed_files() {
        let set = rendered(&[
            crd("ship.example.com", "Frigate", "frigates"),
            crd("sea.example.com", "Frigate", "frigates"),
            crd("cache.example.com", "Memcached", "memcacheds"),
        ]);
        let paths: Vec<&str> = set.files.iter().map(|f| f.path.as_str()).collect();
        for expected in [
            "config/rbac/ship_frigate_editor_role.yaml",
            "config/rbac/sea_frigate_viewer_role.yaml",
            "config/rbac/memcached_admin_role.yaml",
        ] {
            assert!(paths.contains(&expected), "{expected} not in {paths:?}");
        }
        assert_eq!(
            object(&set, "config/rbac/ship_frigate_editor_role.yaml")["metadata"]["name"],
            "memcached-operator-ship-frigate-editor-role"
        );
    }
}
