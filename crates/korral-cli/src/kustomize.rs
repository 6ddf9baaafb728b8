//! Reading `config/` kustomizations: the subset of kustomize that Korral's scaffolds use.
//!
//! Supported fields: `resources` (files or directories, followed recursively), `namespace`
//! (set on namespaced objects that have none) and `images` (`name` → `newName`/`newTag`/
//! `digest`, as `kustomize edit set image` writes). Any other field is refused with its name,
//! rather than silently ignored: use `kubectl apply -k` for the rest of kustomize.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// The kustomization fields Korral implements.
const SUPPORTED_FIELDS: [&str; 5] = ["apiVersion", "kind", "resources", "namespace", "images"];

/// Kinds that are cluster-scoped among those the scaffolds write (they never get a namespace).
const CLUSTER_SCOPED: [&str; 4] = [
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
];

/// Reads the objects of a YAML file (several documents allowed; empty ones skipped).
pub fn read_objects(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(document)
            .with_context(|| format!("parsing {}", path.display()))?;
        if value.is_null() {
            continue;
        }
        if !value.is_object() || value.get("kind").is_none() {
            bail!("{}: a document is not a Kubernetes object", path.display());
        }
        objects.push(value);
    }
    Ok(objects)
}

/// The objects of a kustomization directory (see the module docs for the fields honoured).
pub fn read_kustomization(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let path = dir.join("kustomization.yaml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (run `korral generate` first?)", path.display()))?;
    let kustomization: Value =
        serde_yaml_ng::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if let Some(fields) = kustomization.as_object() {
        let unsupported: Vec<&str> = fields
            .keys()
            .map(String::as_str)
            .filter(|k| !SUPPORTED_FIELDS.contains(k))
            .collect();
        if !unsupported.is_empty() {
            bail!(
                "{}: kustomization field(s) {} not supported by korral (supported: {}); use `kubectl apply -k {}` instead",
                path.display(),
                unsupported.join(", "),
                SUPPORTED_FIELDS[2..].join(", "),
                dir.display()
            );
        }
    } else if !kustomization.is_null() {
        bail!("{}: not a kustomization (a YAML mapping)", path.display());
    }
    let mut objects = Vec::new();
    if let Some(resources) = kustomization["resources"].as_array() {
        for resource in resources {
            let Some(name) = resource.as_str() else {
                bail!("{}: resources must be paths", path.display());
            };
            let target = dir.join(name);
            if target.is_dir() {
                objects.extend(read_kustomization(&target)?);
            } else {
                objects.extend(read_objects(&target).with_context(|| {
                    format!(
                        "{} lists {name} (run `korral generate` first?)",
                        path.display()
                    )
                })?);
            }
        }
    }
    if let Some(namespace) = kustomization["namespace"].as_str() {
        for object in &mut objects {
            let kind = object["kind"].as_str().unwrap_or_default();
            if !CLUSTER_SCOPED.contains(&kind) && object["metadata"]["namespace"].is_null() {
                object["metadata"]["namespace"] = Value::String(namespace.to_owned());
            }
        }
    }
    if let Some(images) = kustomization.get("images") {
        let Some(images) = images.as_array() else {
            bail!("{}: images must be a list", path.display());
        };
        for (i, image) in images.iter().enumerate() {
            let Some(name) = image["name"].as_str() else {
                bail!("{}: images[{i}].name is required", path.display());
            };
            for object in &mut objects {
                set_image(object, name, image);
            }
        }
    }
    Ok(objects)
}

/// The image reference without its tag or digest (`reg:5000/app:v1@sha256:…` → `reg:5000/app`).
fn image_name(reference: &str) -> &str {
    let without_digest = reference.split('@').next().unwrap_or(reference);
    match without_digest.rfind(':') {
        // A colon after the last slash separates the tag (before it: a registry port).
        Some(colon) if !without_digest[colon..].contains('/') => &without_digest[..colon],
        _ => without_digest,
    }
}

/// Applies one `images` entry to every container of `object`'s pod template (or pod spec).
fn set_image(object: &mut Value, name: &str, image: &Value) {
    let spec = if object["kind"] == "Pod" {
        object.get_mut("spec")
    } else {
        object
            .get_mut("spec")
            .and_then(|s| s.get_mut("template"))
            .and_then(|t| t.get_mut("spec"))
    };
    let Some(spec) = spec else {
        return;
    };
    for list in ["containers", "initContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            let Some(current) = container["image"].as_str() else {
                continue;
            };
            if image_name(current) != name {
                continue;
            }
            let new_name = image["newName"].as_str().unwrap_or(name);
            let updated = if let Some(digest) = image["digest"].as_str() {
                format!("{new_name}@{digest}")
            } else if let Some(tag) = image["newTag"].as_str() {
                format!("{new_name}:{tag}")
            } else {
                // Keep the current tag or digest.
                format!("{new_name}{}", &current[image_name(current).len()..])
            };
            container["image"] = Value::String(updated);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, path: &str, text: &str) -> anyhow::Result<()> {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().context("parent")?)?;
        std::fs::write(path, text)?;
        Ok(())
    }

    #[test]
    fn kustomizations_are_followed_and_namespaced_objects_get_the_namespace() -> anyhow::Result<()>
    {
        let tmp = tempfile::tempdir()?;
        let tmp = tmp.path();
        write(
            tmp,
            "default/kustomization.yaml",
            "namespace: ops\nresources:\n- ../rbac\n- ../crd\n",
        )?;
        write(tmp, "rbac/kustomization.yaml", "resources:\n- role.yaml\n")?;
        write(
            tmp,
            "rbac/role.yaml",
            "kind: ClusterRole\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n  name: r\n---\nkind: ServiceAccount\napiVersion: v1\nmetadata:\n  name: sa\n---\nkind: Role\napiVersion: rbac.authorization.k8s.io/v1\nmetadata:\n  name: le\n  namespace: elsewhere\n",
        )?;
        write(tmp, "crd/kustomization.yaml", "resources: []\n")?;
        let objects = read_kustomization(&tmp.join("default"))?;
        assert_eq!(objects.len(), 3);
        assert!(
            objects[0]["metadata"]["namespace"].is_null(),
            "ClusterRole stays cluster-scoped"
        );
        assert_eq!(objects[1]["metadata"]["namespace"], "ops");
        assert_eq!(objects[2]["metadata"]["namespace"], "elsewhere");
        write(
            tmp,
            "broken/kustomization.yaml",
            "resources:\n- missing.yaml\n",
        )?;
        let err = read_kustomization(&tmp.join("broken")).expect_err("missing file");
        assert!(format!("{err:#}").contains("missing.yaml"), "{err:#}");
        Ok(())
    }

    #[test]
    fn unsupported_fields_are_refused_by_name() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        write(
            tmp.path(),
            "kustomization.yaml",
            "namePrefix: x-\nresources: []\npatches:\n- path: p.yaml\n",
        )?;
        let err = read_kustomization(tmp.path()).expect_err("unsupported fields");
        let message = format!("{err:#}");
        assert!(message.contains("namePrefix, patches"), "{message}");
        assert!(message.contains("kubectl apply -k"), "{message}");
        Ok(())
    }

    #[test]
    fn images_are_set_as_kustomize_edit_set_image_does() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        write(
            tmp.path(),
            "kustomization.yaml",
            "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: reg.example:5000/op\n  newTag: v2\n- name: sidecar\n  digest: sha256:abc\n",
        )?;
        write(
            tmp.path(),
            "manager.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: m\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: init\n        image: sidecar:1\n      containers:\n      - name: manager\n        image: controller:latest\n      - name: other\n        image: reg:5000/controller-other:1\n",
        )?;
        let objects = read_kustomization(tmp.path())?;
        let spec = &objects[0]["spec"]["template"]["spec"];
        assert_eq!(spec["containers"][0]["image"], "reg.example:5000/op:v2");
        assert_eq!(spec["containers"][1]["image"], "reg:5000/controller-other:1");
        assert_eq!(spec["initContainers"][0]["image"], "sidecar@sha256:abc");
        assert_eq!(image_name("reg:5000/app:v1@sha256:x"), "reg:5000/app");
        assert_eq!(image_name("reg:5000/app"), "reg:5000/app");
        Ok(())
    }
}
