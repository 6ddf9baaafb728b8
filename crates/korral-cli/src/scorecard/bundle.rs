//! The bundle the scorecard tests: its ClusterServiceVersion, its CRDs and the custom resources
//! of the CSV's `alm-examples` annotation.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::cluster::read_objects;

/// A loaded bundle directory.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The bundle directory.
    pub dir: PathBuf,
    /// The ClusterServiceVersion.
    pub csv: Value,
    /// The CustomResourceDefinitions of `manifests/`.
    pub crds: Vec<Value>,
}

impl Bundle {
    /// Reads `dir/manifests/`: refuses a missing directory and a bundle without a CSV.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        if !dir.is_dir() {
            bail!(
                "bundle directory {} does not exist (write one with `korral bundle --version <x.y.z>`)",
                dir.display()
            );
        }
        let manifests = dir.join("manifests");
        let files = crate::bundle::manifest_files(&manifests).with_context(|| {
            format!(
                "bundle {} has no manifests directory ({})",
                dir.display(),
                manifests.display()
            )
        })?;
        let mut csv = None;
        let mut crds = Vec::new();
        for file in files {
            for object in read_objects(&file)? {
                match object["kind"].as_str() {
                    Some("ClusterServiceVersion") if csv.is_none() => csv = Some(object),
                    Some("CustomResourceDefinition") => crds.push(object),
                    _ => {}
                }
            }
        }
        let Some(csv) = csv else {
            bail!(
                "bundle {} has no ClusterServiceVersion in {}",
                dir.display(),
                manifests.display()
            );
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            csv,
            crds,
        })
    }

    /// The CSV's name.
    pub fn csv_name(&self) -> &str {
        self.csv["metadata"]["name"].as_str().unwrap_or("?")
    }

    /// The custom resources of the CSV's `alm-examples` annotation (none when it is absent).
    pub fn examples(&self) -> Result<Vec<Value>, String> {
        examples_of(&self.csv)
    }
}

/// The custom resources of a CSV's `alm-examples` annotation.
pub fn examples_of(csv: &Value) -> Result<Vec<Value>, String> {
    let Some(text) = csv["metadata"]["annotations"]["alm-examples"].as_str() else {
        return Ok(Vec::new());
    };
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let examples: Vec<Value> = serde_json::from_str(text)
        .map_err(|err| format!("failed to parse the alm-examples annotation: {err}"))?;
    if let Some(i) = examples.iter().position(|e| !e.is_object()) {
        return Err(format!("alm-examples item {i} is not an object"));
    }
    Ok(examples)
}

/// A CSV's owned CRD entries.
pub fn owned_of(csv: &Value) -> Vec<Value> {
    csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// `Kind name` of a custom resource, for messages.
pub fn describe(cr: &Value) -> String {
    let kind = cr["kind"].as_str().unwrap_or("?");
    let name = cr["metadata"]["name"].as_str().unwrap_or("?");
    format!("{kind} {name}")
}

/// The group and version of a custom resource's `apiVersion`.
pub fn group_version(cr: &Value) -> (&str, &str) {
    let api_version = cr["apiVersion"].as_str().unwrap_or_default();
    api_version.split_once('/').unwrap_or(("", api_version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn examples_parse_from_the_annotation() {
        let csv =
            json!({"metadata": {"annotations": {"alm-examples": "[{\"kind\":\"Memcached\"}]"}}});
        assert_eq!(examples_of(&csv), Ok(vec![json!({"kind": "Memcached"})]));
        assert_eq!(examples_of(&json!({})), Ok(vec![]));
        let bad = json!({"metadata": {"annotations": {"alm-examples": "{not json"}}});
        assert!(examples_of(&bad).is_err_and(|e| e.contains("alm-examples")));
        let scalar = json!({"metadata": {"annotations": {"alm-examples": "[1]"}}});
        assert!(examples_of(&scalar).is_err_and(|e| e.contains("item 0")));
    }

    #[test]
    fn load_names_the_missing_directory_and_the_missing_csv() -> anyhow::Result<()> {
        let tmp = tempfile::tempdir()?;
        let missing = tmp.path().join("nope");
        let err = Bundle::load(&missing).err().map(|e| format!("{e:#}"));
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("nope") && e.contains("does not exist")),
            "{err:?}"
        );
        std::fs::create_dir_all(tmp.path().join("manifests"))?;
        std::fs::write(
            tmp.path().join("manifests/crd.yaml"),
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.b\n",
        )?;
        let err = Bundle::load(tmp.path()).err().map(|e| format!("{e:#}"));
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("no ClusterServiceVersion")),
            "{err:?}"
        );
        Ok(())
    }
}
