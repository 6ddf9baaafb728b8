//! Discovery documents: `/api`, `/apis`, group and group-version resource lists, `/version`.

use serde_json::{Value, json};

use crate::registry::{Registry, ResourceInfo};

/// The Kubernetes version the server reports.
pub const KUBE_MAJOR: &str = "1";
/// The Kubernetes minor version the server reports: the one whose APIs, defaults and
/// validation it serves (the v1.36 reference captures).
pub const KUBE_MINOR: &str = "36";
/// The oldest minor version the server stays compatible with (upstream reports the previous
/// one).
const MIN_COMPATIBILITY_MINOR: &str = "35";

/// `/version`, with upstream's fields (no emulation of another version).
pub fn version() -> Value {
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": MIN_COMPATIBILITY_MINOR,
        "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0-korral.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "korral",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none (korral-apiserver is written in Rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let list: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = list.first().cloned().unwrap_or(json!({}));
    json!({"name": name, "versions": list, "preferredVersion": preferred})
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, v)| group_doc(&g, &v))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, or `None` when the group is not served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let (_, versions) = registry.groups().into_iter().find(|(g, _)| g == name)?;
    let mut doc = group_doc(name, &versions);
    if let Some(map) = doc.as_object_mut() {
        map.insert("kind".into(), json!("APIGroup"));
        map.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

/// Upstream's `StorageVersionHash`: the first 8 bytes of the SHA-256 of the
/// `group/version/kind` objects of the resource are stored as, in base64. Resources that store
/// nothing (create-only ones) have none.
fn storage_version_hash(registry: &Registry, info: &ResourceInfo) -> Option<String> {
    // Only stored resources have a storage version (not create-only or computed ones).
    if info.verbs.iter().all(|v| v == "create") || info.strategy.computed(false).is_some() {
        return None;
    }
    let stored = match &info.custom {
        Some(custom) => format!(
            "{}/{}/{}",
            info.group, custom.versions.storage_version, info.kind
        ),
        None => {
            // Built-in kinds are stored in their group's preferred version that serves them
            // (HPAs served as autoscaling/v1 are stored as v2), under their storage identity.
            let (group, resource) = info.storage_identity();
            if let Some(version) = info.upstream_storage_version {
                return Some(hash_of(&format!("{group}/{version}/{}", info.kind)));
            }
            let (version, kind) = registry
                .groups()
                .into_iter()
                .find(|(g, _)| g == group)
                .and_then(|(_, versions)| {
                    versions.into_iter().find_map(|v| {
                        registry
                            .get(group, &v, resource)
                            .map(|stored| (v, stored.kind.clone()))
                    })
                })?;
            format!("{group}/{version}/{kind}")
        }
    };
    Some(hash_of(&stored))
}

/// The first 8 bytes of the SHA-256 of `group/version/kind`, in base64.
fn hash_of(stored: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, stored.as_bytes());
    let first = digest.as_ref().get(..8).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(first)
}

fn resource_entry(registry: &Registry, info: &ResourceInfo) -> Value {
    let mut entry = json!({
        "name": info.resource,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": info.verbs,
    });
    if let Some(map) = entry.as_object_mut() {
        if !info.short_names.is_empty() {
            map.insert("shortNames".into(), json!(info.short_names));
        }
        if !info.categories.is_empty() {
            map.insert("categories".into(), json!(info.categories));
        }
        if let Some(hash) = storage_version_hash(registry, info) {
            map.insert("storageVersionHash".into(), json!(hash));
        }
    }
    entry
}

fn sub_entry(info: &ResourceInfo, sub: &str, kind: &str, group: Option<&str>) -> Value {
    let mut entry = json!({
        "name": format!("{}/{sub}", info.resource),
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": kind,
        "verbs": ["get", "patch", "update"],
    });
    if let (Some(g), Some(map)) = (group, entry.as_object_mut()) {
        map.insert("group".into(), json!(g));
        map.insert("version".into(), json!("v1"));
    }
    entry
}

/// `/api/v1` or `/apis/<group>/<version>`, or `None` when not served.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources = registry.resources_in(group, version);
    if resources.is_empty() && !(group.is_empty() && version == "v1") {
        return None;
    }
    let mut entries = Vec::new();
    for info in &resources {
        entries.push(resource_entry(registry, info));
        let first_sub = entries.len();
        for sub in info.strategy.subresources() {
            let mut entry = sub_entry(info, sub, &info.kind, None);
            entry["verbs"] = json!(info.strategy.subresource_verbs(sub));
            entries.push(entry);
        }
        if info.status_subresource {
            entries.push(sub_entry(info, "status", &info.kind, None));
        }
        if info.scale.is_some() {
            entries.push(sub_entry(info, "scale", "Scale", Some("autoscaling")));
        }
        for action in &info.actions {
            let group = (!action.group.is_empty()).then_some(action.group);
            let mut entry = sub_entry(info, action.name, action.kind, group);
            entry["verbs"] = json!(["create"]);
            entries.push(entry);
        }
        for connecter in &info.connecters {
            let mut entry = sub_entry(info, connecter.name, connecter.kind, None);
            entry["verbs"] = json!(connecter.verbs);
            entries.push(entry);
        }
        // Upstream lists a resource's subresources by name.
        entries[first_sub..].sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }))
}

/// The aggregated discovery version (`v2` or `v2beta1`) a request's `Accept` asks for, in the
/// client's order of preference; `None` when it prefers the plain documents.
pub fn aggregated_version(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        if params.contains(&"g=apidiscovery.k8s.io") && params.contains(&"as=APIGroupDiscoveryList")
        {
            if params.contains(&"v=v2") {
                return Some("v2");
            }
            if params.contains(&"v=v2beta1") {
                return Some("v2beta1");
            }
            continue;
        }
        if matches!(params.first(), Some(&"application/json") | Some(&"*/*")) {
            return None;
        }
    }
    None
}

/// The content type of an aggregated discovery answer.
pub fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

fn response_kind(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn discovery_version(registry: &Registry, group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for info in registry.resources_in(group, version) {
        let mut entry = json!({
            "resource": info.resource,
            "responseKind": response_kind("", "", &info.kind),
            "scope": if info.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": info.singular,
            "verbs": info.verbs,
        });
        if let Some(map) = entry.as_object_mut() {
            if !info.short_names.is_empty() {
                map.insert("shortNames".into(), json!(info.short_names));
            }
            if !info.categories.is_empty() {
                map.insert("categories".into(), json!(info.categories));
            }
            let mut subs = Vec::new();
            for sub in info.strategy.subresources() {
                subs.push(json!({"subresource": sub,
                    "responseKind": response_kind("", "", &info.kind),
                    "verbs": info.strategy.subresource_verbs(sub)}));
            }
            if info.status_subresource {
                subs.push(json!({"subresource": "status",
                    "responseKind": response_kind("", "", &info.kind),
                    "verbs": ["get", "patch", "update"]}));
            }
            if info.scale.is_some() {
                subs.push(json!({"subresource": "scale",
                    "responseKind": response_kind("autoscaling", "v1", "Scale"),
                    "verbs": ["get", "patch", "update"]}));
            }
            for action in &info.actions {
                subs.push(json!({"subresource": action.name,
                    "responseKind": response_kind(action.group, action.version, action.kind),
                    "verbs": ["create"]}));
            }
            for connecter in &info.connecters {
                subs.push(json!({"subresource": connecter.name,
                    "responseKind": response_kind("", "", connecter.kind),
                    "verbs": connecter.verbs}));
            }
            subs.sort_by(|a, b| a["subresource"].as_str().cmp(&b["subresource"].as_str()));
            if !subs.is_empty() {
                map.insert("subresources".into(), Value::Array(subs));
            }
        }
        resources.push(entry);
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// Aggregated discovery (`APIGroupDiscoveryList`) of `/api` (`core`) or `/apis`: every group
/// with its versions (preferred first) and their resources, in one document, as kubectl
/// asks for it (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`).
pub fn aggregated(registry: &Registry, core: bool, api_version: &str) -> Value {
    let items: Vec<Value> = if core {
        vec![json!({"metadata": {}, "versions": [discovery_version(registry, "", "v1")]})]
    } else {
        registry
            .groups()
            .into_iter()
            .filter(|(g, _)| !g.is_empty())
            .map(|(g, versions)| {
                let versions: Vec<Value> = versions
                    .iter()
                    .map(|v| discovery_version(registry, &g, v))
                    .collect();
                json!({"metadata": {"name": g}, "versions": versions})
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hashes_are_upstreams() {
        let registry = Registry::with_builtins();
        let hash = |group: &str, version: &str, resource: &str| {
            let info = registry.get(group, version, resource).expect(resource);
            storage_version_hash(&registry, &info)
        };
        // Values of the v1.36 capture: both HPA versions name the stored v2, events.k8s.io
        // Events the core ones they are stored as; create-only resources have none.
        assert_eq!(
            hash("", "v1", "configmaps").as_deref(),
            Some("qFsyl6wFWjQ=")
        );
        assert_eq!(
            hash("autoscaling", "v1", "horizontalpodautoscalers").as_deref(),
            Some("qwQve8ut294=")
        );
        assert_eq!(
            hash("autoscaling", "v2", "horizontalpodautoscalers").as_deref(),
            Some("qwQve8ut294=")
        );
        assert_eq!(
            hash("events.k8s.io", "v1", "events").as_deref(),
            Some("r2yiGXH7wu8=")
        );
        assert_eq!(hash("", "v1", "bindings"), None);
        assert_eq!(hash("", "v1", "componentstatuses"), None);
    }

    #[test]
    fn core_list_has_namespaces_with_short_names() {
        let registry = Registry::with_builtins();
        let doc = resource_list(&registry, "", "v1").expect("core");
        let ns = doc["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["name"] == "namespaces"))
            .cloned()
            .expect("namespaces");
        assert_eq!(ns["shortNames"], json!(["ns"]));
        assert_eq!(ns["namespaced"], false);
        assert!(resource_list(&registry, "nope.io", "v1").is_none());
        let apis = groups(&registry);
        assert!(
            apis["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "apps"))
        );
    }

    #[test]
    fn aggregated_discovery_follows_the_reference_shape() {
        assert_eq!(
            aggregated_version(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            ),
            Some("v2")
        );
        assert_eq!(
            aggregated_version(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            ),
            Some("v2beta1")
        );
        assert_eq!(aggregated_version("application/json"), None);
        assert_eq!(
            aggregated_version(
                "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            ),
            None
        );
        let registry = Registry::with_builtins();
        let apis = aggregated(&registry, false, "v2");
        assert_eq!(apis["kind"], "APIGroupDiscoveryList");
        assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
        let apps = apis["items"]
            .as_array()
            .and_then(|i| i.iter().find(|g| g["metadata"]["name"] == "apps"))
            .cloned()
            .expect("apps");
        let deployments = apps["versions"][0]["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["resource"] == "deployments"))
            .cloned()
            .expect("deployments");
        assert_eq!(deployments["scope"], "Namespaced");
        assert_eq!(
            deployments["responseKind"],
            json!({"group": "", "version": "", "kind": "Deployment"})
        );
        // By name, as the capture lists them.
        assert_eq!(deployments["subresources"][0]["subresource"], "scale");
        assert_eq!(
            deployments["subresources"][0]["responseKind"]["kind"],
            "Scale"
        );
        assert_eq!(deployments["subresources"][1]["subresource"], "status");
        // What extends the API is in upstream's `api-extensions` category.
        for (group, resource) in [
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("apiregistration.k8s.io", "apiservices"),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
        ] {
            let entry = apis["items"]
                .as_array()
                .and_then(|i| i.iter().find(|g| g["metadata"]["name"] == group))
                .and_then(|g| g["versions"][0]["resources"].as_array())
                .and_then(|r| r.iter().find(|r| r["resource"] == resource))
                .cloned()
                .expect(resource);
            assert_eq!(entry["categories"], json!(["api-extensions"]), "{resource}");
        }
        let core = aggregated(&registry, true, "v2");
        assert_eq!(core["items"][0]["versions"][0]["version"], "v1");
    }
}
