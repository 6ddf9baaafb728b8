//! Manifests from code: a manager on an offline client collects the CRDs and permissions its
//! controllers declare, and renders the deploy manifests, without any API server.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use korral_runtime::cache::Scope;
use korral_runtime::controller::{Controller, EnqueueObject, Kind};
use korral_runtime::manifests::{self, OperatorInfo, Rule};
use korral_runtime::reconcile::{Action, ReconcileResult};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A test resource.
#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1",
    kind = "Memcached",
    namespaced
)]
#[kube(status = "MemcachedStatus")]
pub struct MemcachedSpec {
    /// Replicas.
    pub size: i32,
}

/// Its status.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct MemcachedStatus {
    /// Pod names.
    pub nodes: Vec<String>,
}

async fn reconcile(_m: Arc<Memcached>, _ctx: Arc<()>) -> ReconcileResult {
    Ok(Action::done())
}

fn setup(manager: &mut korral_runtime::manager::Manager) {
    manager.declare_crd::<Memcached>();
    let configmaps = manager
        .cache()
        .informer::<ConfigMap>(Scope::All)
        .expect("informer on the offline cache");
    let controller = Controller::new(manager.cache().clone(), "memcached")
        .for_::<Memcached>(Scope::All)
        .owns::<Deployment>()
        .watches(Kind::new(configmaps), EnqueueObject)
        .writes_status()
        .uses_finalizers()
        .records_events()
        .permission(Rule::new("", ["pods"]).verbs(["list"]));
    manager.add_controller(controller, reconcile, Arc::new(()));
}

#[tokio::test]
async fn permissions_come_from_what_controllers_watch_own_and_declare() -> anyhow::Result<()> {
    let collected = manifests::collect(|m| {
        setup(m);
        Ok(())
    })?;
    let perms = collected.permissions();
    for (group, resource, verb) in [
        ("cache.example.com", "memcacheds", "watch"),
        ("cache.example.com", "memcacheds", "patch"),
        ("cache.example.com", "memcacheds/status", "update"),
        ("cache.example.com", "memcacheds/finalizers", "update"),
        ("apps", "deployments", "create"),
        ("apps", "deployments", "delete"),
        ("", "configmaps", "list"),
        ("", "pods", "list"),
        ("", "events", "create"),
        ("events.k8s.io", "events", "patch"),
    ] {
        assert!(
            perms.allows(group, resource, verb),
            "{verb} {group}/{resource}"
        );
    }
    assert!(!perms.allows("cache.example.com", "memcacheds", "delete"));
    assert!(!perms.allows("", "configmaps", "create"));
    assert!(!perms.allows("", "pods", "watch"));
    assert!(!perms.allows("", "pods", "get"));
    assert_eq!(collected.crds().len(), 1);
    assert_eq!(
        collected.crds()[0].metadata.name.as_deref(),
        Some("memcacheds.cache.example.com")
    );
    Ok(())
}

#[tokio::test]
async fn rendered_files_hold_crds_rbac_and_the_manager() -> anyhow::Result<()> {
    let collected = manifests::collect(|m| {
        setup(m);
        Ok(())
    })?;
    let info = OperatorInfo::new("memcached-operator", "example.com");
    let set = collected.render(&info)?;
    let paths: Vec<&str> = set.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "config/crd/bases/cache.example.com_memcacheds.yaml",
            "config/rbac/service_account.yaml",
            "config/rbac/role.yaml",
            "config/rbac/role_binding.yaml",
            "config/rbac/leader_election_role.yaml",
            "config/rbac/leader_election_role_binding.yaml",
            "config/rbac/metrics_auth_role.yaml",
            "config/rbac/metrics_auth_role_binding.yaml",
            "config/rbac/metrics_reader_role.yaml",
            "config/rbac/memcached_admin_role.yaml",
            "config/rbac/memcached_editor_role.yaml",
            "config/rbac/memcached_viewer_role.yaml",
            "config/manager/manager.yaml",
            "config/default/metrics_service.yaml",
            "config/prometheus/monitor.yaml",
        ]
    );
    let file = |p: &str| {
        set.files
            .iter()
            .find(|f| f.path == p)
            .expect("file present")
            .objects
            .clone()
    };
    let role = &file("config/rbac/role.yaml")[0];
    assert_eq!(role["kind"], "ClusterRole");
    assert_eq!(role["metadata"]["name"], "memcached-operator-manager-role");
    let rules = role["rules"].as_array().expect("rules");
    assert!(rules.iter().any(|r| r["apiGroups"][0] == "apps"
        && r["resources"][0] == "deployments"
        && r["verbs"].as_array().map(Vec::len) == Some(7)));
    let binding = &file("config/rbac/role_binding.yaml")[0];
    assert_eq!(
        binding["subjects"][0]["name"],
        "memcached-operator-controller-manager"
    );
    assert_eq!(
        binding["subjects"][0]["namespace"],
        "memcached-operator-system"
    );
    let leader = &file("config/rbac/leader_election_role.yaml")[0];
    assert_eq!(leader["kind"], "Role");
    assert!(
        leader["rules"].as_array().expect("rules").iter().any(|r| {
            r["apiGroups"][0] == "coordination.k8s.io" && r["resources"][0] == "leases"
        })
    );
    let manager = file("config/manager/manager.yaml");
    assert_eq!(manager[0]["kind"], "Namespace");
    let deployment = &manager[1];
    assert_eq!(deployment["kind"], "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["serviceAccountName"],
        "memcached-operator-controller-manager"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "controller:latest");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["resources"]["limits"]["memory"], "128Mi");
    // The printed form round-trips.
    let json = serde_json::to_string(&set)?;
    let back: manifests::ManifestSet = serde_json::from_str(&json)?;
    assert_eq!(back, set);
    Ok(())
}

#[tokio::test]
async fn print_is_skipped_without_the_flag() -> anyhow::Result<()> {
    let info = OperatorInfo::new("x", "example.com");
    let printed = manifests::print_if_requested(["bin", "--leader-elect"], &info, |_| {
        panic!("setup must not run without --print-manifests")
    })?;
    assert!(!printed);
    Ok(())
}

#[tokio::test]
async fn setup_errors_are_reported() {
    let err = manifests::collect(|_| Err("no such thing".into())).expect_err("setup failed");
    assert!(
        err.to_string().contains("setting up the controllers"),
        "{err}"
    );
}
