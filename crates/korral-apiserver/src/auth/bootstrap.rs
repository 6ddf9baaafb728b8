//! The bootstrap ClusterRoles and ClusterRoleBindings an RBAC server starts with (a
//! representative subset of upstream's): `cluster-admin`, the aggregated `admin`, `edit` and
//! `view` with their `system:aggregate-to-*` parts, `system:discovery`, `system:basic-user`,
//! `system:public-info-viewer`, and the role of the simulated CSR signing controller
//! (`system:controller:certificate-controller`). Missing ones are created at start; existing
//! ones are left alone.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::objects::{Objects, WriteOptions};

const GROUP: &str = "rbac.authorization.k8s.io";
const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];
const ALL: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

fn cluster_role(
    name: &str,
    labels: Value,
    aggregate_from: Option<&str>,
    rules: Vec<Value>,
) -> Value {
    let mut labels = labels;
    if let Some(map) = labels.as_object_mut() {
        map.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    }
    let mut role = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "rules": rules,
    });
    if let (Some(label), Some(map)) = (aggregate_from, role.as_object_mut()) {
        map.insert(
            "aggregationRule".into(),
            json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}),
        );
    }
    role
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        },
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let to_admin = "rbac.authorization.k8s.io/aggregate-to-admin";
    let to_edit = "rbac.authorization.k8s.io/aggregate-to-edit";
    let to_view = "rbac.authorization.k8s.io/aggregate-to-view";
    vec![
        cluster_role(
            "cluster-admin",
            json!({}),
            None,
            vec![
                rule(&["*"], &["*"], &["*"]),
                json!({"nonResourceURLs": ["*"], "verbs": ["*"]}),
            ],
        ),
        cluster_role("admin", json!({}), Some(to_admin), vec![]),
        cluster_role("edit", json!({to_admin: "true"}), Some(to_edit), vec![]),
        cluster_role("view", json!({to_edit: "true"}), Some(to_view), vec![]),
        cluster_role(
            "system:aggregate-to-admin",
            json!({to_admin: "true"}),
            None,
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"],
                ),
                rule(&[GROUP], &["rolebindings", "roles"], &ALL),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            json!({to_edit: "true"}),
            None,
            vec![
                rule(
                    &[""],
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                    &READ,
                ),
                rule(&[""], &["serviceaccounts"], &["impersonate"]),
                rule(
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                    &WRITE,
                ),
                rule(&[""], &["pods/eviction"], &["create"]),
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                    &WRITE,
                ),
                rule(&[""], &["serviceaccounts/token"], &["create"]),
                rule(
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                    &WRITE,
                ),
                rule(&["autoscaling"], &["horizontalpodautoscalers"], &WRITE),
                rule(&["batch"], &["cronjobs", "jobs"], &WRITE),
                rule(&["coordination.k8s.io"], &["leases"], &ALL),
                rule(&["events.k8s.io"], &["events"], &WRITE),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                    &WRITE,
                ),
                rule(&["policy"], &["poddisruptionbudgets"], &WRITE),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            json!({to_view: "true"}),
            None,
            vec![
                rule(
                    &[""],
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                    &READ,
                ),
                rule(
                    &[""],
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                    &READ,
                ),
                rule(&[""], &["namespaces"], &READ),
                rule(
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                    &READ,
                ),
                rule(
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                    &READ,
                ),
                rule(
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                    &READ,
                ),
                rule(&["events.k8s.io"], &["events"], &READ),
                rule(
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                    &READ,
                ),
                rule(
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                    &READ,
                ),
            ],
        ),
        cluster_role(
            "system:discovery",
            json!({}),
            None,
            vec![json!({
                "nonResourceURLs": [
                    "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                    "/openapi/*", "/readyz", "/version", "/version/",
                ],
                "verbs": ["get"],
            })],
        ),
        cluster_role(
            "system:basic-user",
            json!({}),
            None,
            vec![
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"],
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"],
                ),
            ],
        ),
        // The identity of the simulated CSR signing controller (upstream's controller role).
        cluster_role(
            CERTIFICATE_CONTROLLER_ROLE,
            json!({}),
            None,
            vec![
                rule(
                    &["certificates.k8s.io"],
                    &["certificatesigningrequests"],
                    &["delete", "get", "list", "watch"],
                ),
                rule(
                    &["certificates.k8s.io"],
                    &[
                        "certificatesigningrequests/approval",
                        "certificatesigningrequests/status",
                    ],
                    &["update"],
                ),
                json!({
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["signers"],
                    "resourceNames": ["kubernetes.io/kube-apiserver-client-kubelet"],
                    "verbs": ["approve"],
                }),
                json!({
                    "apiGroups": ["certificates.k8s.io"],
                    "resources": ["signers"],
                    "resourceNames": [
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ],
                    "verbs": ["sign"],
                }),
                rule(
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                    &["create"],
                ),
                rule(
                    &["", "events.k8s.io"],
                    &["events"],
                    &["create", "patch", "update"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            json!({}),
            None,
            vec![json!({
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                "verbs": ["get"],
            })],
        ),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", &["system:masters"]),
        binding(
            "system:discovery",
            "system:discovery",
            &["system:authenticated"],
        ),
        binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
        ),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        {
            let mut controller = binding(
                CERTIFICATE_CONTROLLER_ROLE,
                CERTIFICATE_CONTROLLER_ROLE,
                &[],
            );
            controller["subjects"] = json!([{
                "kind": "ServiceAccount",
                "name": "certificate-controller",
                "namespace": "kube-system",
            }]);
            controller
        },
    ]
}

/// The role (and binding) of the CSR signing controller's service account.
const CERTIFICATE_CONTROLLER_ROLE: &str = "system:controller:certificate-controller";

/// Creates the bootstrap roles and bindings that do not exist yet.
pub async fn ensure(objects: &Objects) -> Result<(), ApiError> {
    let registry = objects.registry();
    let (Some(roles), Some(bindings)) = (
        registry.get(GROUP, "v1", "clusterroles"),
        registry.get(GROUP, "v1", "clusterrolebindings"),
    ) else {
        return Err(ApiError::internal("RBAC resources are not registered"));
    };
    let wanted = cluster_roles()
        .into_iter()
        .map(|r| (roles.clone(), r))
        .chain(
            cluster_role_bindings()
                .into_iter()
                .map(|b| (bindings.clone(), b)),
        );
    for (info, obj) in wanted {
        let name = crate::meta::name(&obj).to_string();
        if objects.get(&info, None, &name).is_ok() {
            continue;
        }
        match objects
            .create(&info, None, obj, &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
