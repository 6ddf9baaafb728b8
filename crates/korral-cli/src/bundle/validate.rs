//! `korral bundle validate`: OLM's bundle rules, each problem named with its file and field.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::cluster::read_objects;

/// The install modes OLM knows.
const INSTALL_MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

/// The media types a bundle may declare.
const MEDIATYPES: [&str; 3] = ["registry+v1", "plain+v0", "helm"];

static SEMVER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-((0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$",
    )
    .expect("valid regex")
});

/// One problem of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, relative to the bundle directory.
    pub file: String,
    /// The field (`spec.version`), or empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.field, self.message)
        }
    }
}

struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    fn add(&mut self, file: &str, field: &str, message: impl Into<String>) {
        self.list.push(Problem {
            file: file.to_owned(),
            field: field.to_owned(),
            message: message.into(),
        });
    }
}

fn non_empty_str(value: &Value) -> Option<&str> {
    value.as_str().filter(|s| !s.trim().is_empty())
}

/// Validates the bundle in `dir` (with `manifests/` and `metadata/annotations.yaml`).
pub fn validate_dir(dir: &Path) -> anyhow::Result<Vec<Problem>> {
    let mut problems = Problems { list: Vec::new() };
    let manifests = dir.join("manifests");
    let annotations_path = dir.join("metadata/annotations.yaml");

    check_annotations(&annotations_path, &mut problems);

    let mut csvs = Vec::new();
    let mut crds = Vec::new();
    match manifest_files(&manifests) {
        Err(_) => problems.add("manifests/", "", "the bundle has no manifests directory"),
        Ok(files) => {
            for path in files {
                let file = format!(
                    "manifests/{}",
                    path.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                );
                let objects = match read_objects(&path) {
                    Ok(objects) => objects,
                    Err(err) => {
                        problems.add(
                            &file,
                            "",
                            format!("not readable as Kubernetes objects: {err:#}"),
                        );
                        continue;
                    }
                };
                for object in objects {
                    match object["kind"].as_str() {
                        Some("ClusterServiceVersion") => csvs.push((file.clone(), object)),
                        Some("CustomResourceDefinition") => crds.push((file.clone(), object)),
                        _ => {}
                    }
                }
            }
        }
    }
    match csvs.len() {
        0 => problems.add("manifests/", "", "the bundle has no ClusterServiceVersion"),
        1 => {}
        n => problems.add(
            "manifests/",
            "",
            format!("the bundle has {n} ClusterServiceVersions; exactly one is allowed"),
        ),
    }
    for (file, csv) in &csvs {
        check_csv(file, csv, &crds, &mut problems);
    }
    Ok(problems.list)
}

fn check_annotations(path: &Path, problems: &mut Problems) {
    const FILE: &str = "metadata/annotations.yaml";
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(_) => {
            problems.add(
                FILE,
                "",
                "missing: a bundle needs metadata/annotations.yaml",
            );
            return;
        }
    };
    let doc: Value = match serde_yaml_ng::from_str(&text) {
        Ok(doc) => doc,
        Err(err) => {
            problems.add(FILE, "", format!("not valid YAML: {err}"));
            return;
        }
    };
    let Some(annotations) = doc.get("annotations").and_then(Value::as_object) else {
        problems.add(
            FILE,
            "annotations",
            "missing: the file must hold an `annotations` map",
        );
        return;
    };
    let key = |k: &str| format!("annotations.{k}");
    let get = |k: &str| annotations.get(k).and_then(non_empty_str);
    const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
    match get(MEDIATYPE) {
        None => problems.add(FILE, &key(MEDIATYPE), "missing"),
        Some(m) if !MEDIATYPES.contains(&m) => problems.add(
            FILE,
            &key(MEDIATYPE),
            format!(
                "{m:?} is not a bundle media type (one of {})",
                MEDIATYPES.join(", ")
            ),
        ),
        Some(_) => {}
    }
    for (k, expected) in [
        (
            "operators.operatorframework.io.bundle.manifests.v1",
            "manifests/",
        ),
        (
            "operators.operatorframework.io.bundle.metadata.v1",
            "metadata/",
        ),
    ] {
        match get(k) {
            None => problems.add(FILE, &key(k), "missing"),
            Some(v) if v != expected => {
                problems.add(FILE, &key(k), format!("{v:?} must be {expected:?}"))
            }
            Some(_) => {}
        }
    }
    const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
    if get(PACKAGE).is_none() {
        problems.add(FILE, &key(PACKAGE), "missing: the package name is required");
    }
    const CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
    let channels: Vec<String> = get(CHANNELS)
        .map(|c| c.split(',').map(|s| s.trim().to_owned()).collect())
        .unwrap_or_default();
    if channels.is_empty() {
        problems.add(
            FILE,
            &key(CHANNELS),
            "missing: at least one channel is required",
        );
    } else if channels.iter().any(String::is_empty) {
        problems.add(FILE, &key(CHANNELS), "a channel name is empty");
    }
    const DEFAULT: &str = "operators.operatorframework.io.bundle.channel.default.v1";
    if let Some(default) = annotations.get(DEFAULT) {
        match non_empty_str(default) {
            None => problems.add(
                FILE,
                &key(DEFAULT),
                "empty: name one of the channels or drop it",
            ),
            Some(d) if !channels.is_empty() && !channels.iter().any(|c| c == d) => problems.add(
                FILE,
                &key(DEFAULT),
                format!(
                    "default channel {d:?} is not among the channels ({})",
                    channels.join(",")
                ),
            ),
            Some(_) => {}
        }
    }
}

fn check_csv(file: &str, csv: &Value, crds: &[(String, Value)], problems: &mut Problems) {
    if csv["apiVersion"] != "operators.coreos.com/v1alpha1" {
        problems.add(
            file,
            "apiVersion",
            format!(
                "{} must be operators.coreos.com/v1alpha1",
                csv["apiVersion"]
            ),
        );
    }
    let spec = &csv["spec"];
    let version = non_empty_str(&spec["version"]);
    match version {
        None if !spec["version"].is_null() => problems.add(
            file,
            "spec.version",
            format!("{} must be a string (quote it in YAML)", spec["version"]),
        ),
        None => problems.add(file, "spec.version", "missing"),
        Some(v) if !SEMVER.is_match(v) => problems.add(
            file,
            "spec.version",
            format!("{v:?} is not a semantic version (e.g. 0.1.0)"),
        ),
        Some(_) => {}
    }
    match non_empty_str(&csv["metadata"]["name"]) {
        None => problems.add(file, "metadata.name", "missing"),
        Some(name) => {
            if let Some(v) = version
                && !name.ends_with(&format!(".v{v}"))
            {
                problems.add(
                    file,
                    "metadata.name",
                    format!("{name:?} must be <operator>.v<spec.version> (<operator>.v{v})"),
                );
            }
        }
    }
    for field in ["displayName", "description"] {
        if non_empty_str(&spec[field]).is_none() {
            problems.add(file, &format!("spec.{field}"), "missing or empty");
        }
    }
    if let Some(examples) = csv["metadata"]["annotations"]["alm-examples"].as_str()
        && serde_json::from_str::<Vec<Value>>(examples).is_err()
    {
        problems.add(
            file,
            "metadata.annotations.alm-examples",
            "not a JSON array of objects",
        );
    }

    // Install modes.
    match spec["installModes"].as_array() {
        None => problems.add(file, "spec.installModes", "missing"),
        Some(modes) => {
            let mut seen = BTreeSet::new();
            let mut supported = 0;
            for (i, mode) in modes.iter().enumerate() {
                let field = format!("spec.installModes[{i}]");
                let ty = mode["type"].as_str().unwrap_or_default();
                if !INSTALL_MODES.contains(&ty) {
                    problems.add(
                        file,
                        &format!("{field}.type"),
                        format!(
                            "{ty:?} is not an install mode (one of {})",
                            INSTALL_MODES.join(", ")
                        ),
                    );
                } else if !seen.insert(ty) {
                    problems.add(
                        file,
                        &format!("{field}.type"),
                        format!("{ty} is listed twice"),
                    );
                }
                match mode["supported"].as_bool() {
                    None => problems.add(
                        file,
                        &format!("{field}.supported"),
                        "missing (true or false)",
                    ),
                    Some(true) => supported += 1,
                    Some(false) => {}
                }
            }
            if supported == 0 {
                problems.add(
                    file,
                    "spec.installModes",
                    "no install mode is supported: the operator could not be installed",
                );
            }
        }
    }

    // Install strategy.
    let install = &spec["install"];
    if install["strategy"] != "deployment" {
        problems.add(
            file,
            "spec.install.strategy",
            format!("{} must be \"deployment\"", install["strategy"]),
        );
    }
    let deployments = install["spec"]["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if deployments.is_empty() {
        problems.add(
            file,
            "spec.install.spec.deployments",
            "missing: the install strategy needs the manager Deployment",
        );
    }
    let mut accounts = BTreeSet::new();
    for (i, deployment) in deployments.iter().enumerate() {
        let field = format!("spec.install.spec.deployments[{i}]");
        if non_empty_str(&deployment["name"]).is_none() {
            problems.add(file, &format!("{field}.name"), "missing");
        }
        let pod = &deployment["spec"]["template"]["spec"];
        if pod["containers"].as_array().is_none_or(Vec::is_empty) {
            problems.add(
                file,
                &format!("{field}.spec.template.spec.containers"),
                "missing: a deployment needs containers",
            );
        }
        if let Some(sa) = non_empty_str(&pod["serviceAccountName"]) {
            accounts.insert(sa.to_owned());
        }
    }
    for kind in ["permissions", "clusterPermissions"] {
        if let Some(list) = install["spec"][kind].as_array() {
            for (i, entry) in list.iter().enumerate() {
                let field = format!("spec.install.spec.{kind}[{i}].serviceAccountName");
                match non_empty_str(&entry["serviceAccountName"]) {
                    None => problems.add(file, &field, "missing"),
                    Some(sa) if !accounts.is_empty() && !accounts.contains(sa) => problems.add(
                        file,
                        &field,
                        format!("{sa:?} is not the service account of any deployment"),
                    ),
                    Some(_) => {}
                }
            }
        }
    }

    // Owned CRDs against the CRD files.
    let owned = spec["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut owned_names = BTreeSet::new();
    for (i, entry) in owned.iter().enumerate() {
        let field = format!("spec.customresourcedefinitions.owned[{i}]");
        let (Some(name), Some(version), Some(kind)) = (
            non_empty_str(&entry["name"]),
            non_empty_str(&entry["version"]),
            non_empty_str(&entry["kind"]),
        ) else {
            problems.add(file, &field, "name, version and kind are required");
            continue;
        };
        owned_names.insert(name.to_owned());
        if non_empty_str(&entry["description"]).is_none() {
            problems.add(
                file,
                &format!("{field}.description"),
                "missing: describe the custom resource",
            );
        }
        let Some((_, crd)) = crds.iter().find(|(_, c)| c["metadata"]["name"] == name) else {
            problems.add(
                file,
                &field,
                format!("owned CRD {name} has no CustomResourceDefinition in manifests/"),
            );
            continue;
        };
        if crd["spec"]["names"]["kind"] != kind {
            problems.add(
                file,
                &format!("{field}.kind"),
                format!(
                    "{kind:?} does not match the kind of CRD {name} ({})",
                    crd["spec"]["names"]["kind"]
                ),
            );
        }
        let served = crd["spec"]["versions"]
            .as_array()
            .is_some_and(|vs| vs.iter().any(|v| v["name"] == version));
        if !served {
            problems.add(
                file,
                &format!("{field}.version"),
                format!("CRD {name} has no version {version:?}"),
            );
        }
    }
    for (crd_file, crd) in crds {
        let name = crd["metadata"]["name"].as_str().unwrap_or_default();
        if !owned_names.contains(name) {
            problems.add(crd_file, "", format!("CRD {name} is not owned by the ClusterServiceVersion (add it to spec.customresourcedefinitions.owned)"));
        }
    }
    if let Some(examples) = csv["metadata"]["annotations"]["alm-examples"].as_str()
        && let Ok(examples) = serde_json::from_str::<Vec<Value>>(examples)
    {
        let kinds: BTreeSet<&str> = owned.iter().filter_map(|o| o["kind"].as_str()).collect();
        for (i, example) in examples.iter().enumerate() {
            let kind = example["kind"].as_str().unwrap_or_default();
            if !kinds.contains(kind) {
                problems.add(
                    file,
                    "metadata.annotations.alm-examples",
                    format!("example {i} is of kind {kind:?}, which the CSV does not own"),
                );
            }
        }
    }
}

/// The manifest files of a bundle's `manifests/` directory (YAML or JSON), sorted by name.
pub(crate) fn manifest_files(manifests: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifests)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    Ok(files)
}
