//! Reading webhook configurations from manifest files, as envtest's `WebhookInstallOptions.Paths`:
//! a file (YAML or JSON, several `---` documents allowed, e.g. the `config/webhook/manifests.yaml`
//! `korral generate` writes) or a directory of such files (`.yaml`, `.yml`, `.json`, in name
//! order). Only Mutating- and ValidatingWebhookConfigurations are taken; other objects (a
//! Service, a Certificate) are skipped, as envtest does.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::TestEnvError;

/// The kind of a mutating webhook configuration.
pub const MUTATING: &str = "MutatingWebhookConfiguration";
/// The kind of a validating webhook configuration.
pub const VALIDATING: &str = "ValidatingWebhookConfiguration";

fn failed(path: &Path, message: impl Into<String>) -> TestEnvError {
    TestEnvError::WebhookManifest {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// The webhook configurations of every document of `text` (read from `path`).
pub fn configurations_in(path: &Path, text: &str) -> Result<Vec<Value>, TestEnvError> {
    let mut found = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = <Value as serde::Deserialize>::deserialize(document)
            .map_err(|e| failed(path, e.to_string()))?;
        if value.is_null() {
            continue;
        }
        let kind = value["kind"].as_str().unwrap_or_default();
        if kind != MUTATING && kind != VALIDATING {
            continue;
        }
        if value["apiVersion"] != "admissionregistration.k8s.io/v1" {
            return Err(failed(
                path,
                format!(
                    "{kind} {:?}: apiVersion {} is not admissionregistration.k8s.io/v1",
                    value["metadata"]["name"].as_str().unwrap_or_default(),
                    value["apiVersion"]
                ),
            ));
        }
        if value["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(failed(path, format!("a {kind} without metadata.name")));
        }
        found.push(value);
    }
    Ok(found)
}

/// The files to read for `path`: itself, or a directory's manifest files in name order.
fn files(path: &Path) -> Result<Vec<PathBuf>, TestEnvError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| failed(path, e.to_string()))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| failed(path, e.to_string()))?;
        let file = entry.path();
        let manifest = file
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
        if manifest && file.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// The webhook configurations in a file or a directory of files.
pub fn read(path: &Path) -> Result<Vec<Value>, TestEnvError> {
    let mut found = Vec::new();
    for file in files(path)? {
        let text = std::fs::read_to_string(&file).map_err(|e| failed(&file, e.to_string()))?;
        found.extend(configurations_in(&file, &text)?);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFESTS: &str = r#"---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: memcached-operator-mutating-webhook-configuration
webhooks:
- name: mmemcached-v1.kb.io
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-cache-example-com-v1-memcached}
---
apiVersion: v1
kind: Service
metadata: {name: webhook-service, namespace: system}
---
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: memcached-operator-validating-webhook-configuration
webhooks: []
"#;

    #[test]
    fn only_webhook_configurations_are_taken_in_order() {
        let found = configurations_in(Path::new("m.yaml"), MANIFESTS).expect("read");
        let kinds: Vec<&str> = found.iter().filter_map(|v| v["kind"].as_str()).collect();
        assert_eq!(kinds, [MUTATING, VALIDATING]);
        assert_eq!(
            found[0]["webhooks"][0]["clientConfig"]["service"]["path"],
            "/mutate-cache-example-com-v1-memcached"
        );
    }

    #[test]
    fn a_directory_is_read_in_name_order_and_other_files_are_ignored() {
        let dir = tempfile::tempdir().expect("dir");
        let one = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: b}\n";
        let two = r#"{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "a"}}"#;
        std::fs::write(dir.path().join("2.json"), two).expect("write");
        std::fs::write(dir.path().join("1.yaml"), one).expect("write");
        std::fs::write(dir.path().join("notes.txt"), "not yaml: [").expect("write");
        let found = read(dir.path()).expect("read");
        let names: Vec<&str> = found
            .iter()
            .filter_map(|v| v["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ["b", "a"]);
    }

    #[test]
    fn bad_input_names_the_file() {
        for (text, wanted) in [
            ("kind: [", "m.yaml"),
            (
                "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingWebhookConfiguration\nmetadata: {name: x}\n",
                "is not admissionregistration.k8s.io/v1",
            ),
            (
                "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {}\n",
                "without metadata.name",
            ),
        ] {
            let error = configurations_in(Path::new("m.yaml"), text).expect_err("refused");
            let message = error.to_string();
            assert!(
                message.contains("m.yaml") && message.contains(wanted),
                "{message}"
            );
        }
        let missing = read(Path::new("/nonexistent/manifests.yaml")).expect_err("missing");
        assert!(missing.to_string().contains("/nonexistent/manifests.yaml"));
    }
}
