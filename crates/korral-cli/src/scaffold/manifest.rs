//! The generated project's `Cargo.toml`: its dependencies (by version, or Korral by path when
//! developing Korral itself), written and later completed with `toml_edit`, which keeps the
//! user's formatting and comments.

use std::path::{Path, PathBuf};

use anyhow::Context;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

/// The version of this CLI, which is the version of the Korral crates it scaffolds against.
pub const KORRAL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the generated project takes the Korral crates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KorralSource {
    /// The registry, at [`KORRAL_VERSION`].
    Registry,
    /// A Korral checkout (its root, holding `crates/korral`), for developing Korral itself.
    Checkout(PathBuf),
}

/// A dependency of generated projects: its name, version and features.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    /// The crate.
    pub name: &'static str,
    /// The version requirement.
    pub version: &'static str,
    /// Features to enable.
    pub features: &'static [&'static str],
    /// Whether the crate's default features stay on.
    pub default_features: bool,
}

const fn dep(name: &'static str, version: &'static str) -> Dependency {
    Dependency {
        name,
        version,
        features: &[],
        default_features: true,
    }
}

const fn dep_with(
    name: &'static str,
    version: &'static str,
    features: &'static [&'static str],
) -> Dependency {
    Dependency {
        name,
        version,
        features,
        default_features: true,
    }
}

/// What a generated operator depends on besides `korral`. The project is a binary, so it picks
/// the Kubernetes version of `k8s-openapi` (`latest`: the newest that k8s-openapi supports).
/// The versions are those the Korral workspace builds with (a unit test checks it).
pub const DEPENDENCIES: [Dependency; 9] = [
    dep("anyhow", "1"),
    dep_with("clap", "4", &["derive", "env"]),
    dep_with("k8s-openapi", "0.29", &["latest"]),
    Dependency {
        name: "kube",
        version: "5",
        features: &[
            "client",
            "rustls-tls",
            "ring",
            "derive",
            "jsonpatch",
            "runtime",
        ],
        default_features: false,
    },
    dep("schemars", "1"),
    dep_with("serde", "1", &["derive"]),
    dep("serde_json", "1"),
    dep_with("tokio", "1", &["full"]),
    dep("tracing", "0.1"),
];

/// What the scaffolded tests need besides `korral-testenv`.
pub const DEV_DEPENDENCIES: [Dependency; 1] = [dep("serde_yaml_ng", "0.10")];

/// The Korral crates: `korral` (dependency) and `korral-testenv` (dev-dependency).
const KORRAL_CRATES: [(&str, &str); 2] = [
    ("dependencies", "korral"),
    ("dev-dependencies", "korral-testenv"),
];

fn dependency_item(dep: &Dependency) -> Item {
    if dep.features.is_empty() && dep.default_features {
        return toml_edit::value(dep.version);
    }
    let mut table = InlineTable::new();
    table.insert("version", Value::from(dep.version));
    if !dep.default_features {
        table.insert("default-features", Value::from(false));
    }
    if !dep.features.is_empty() {
        let features: Array = dep.features.iter().copied().collect();
        table.insert("features", Value::Array(features));
    }
    Item::Value(Value::InlineTable(table))
}

fn korral_item(source: &KorralSource, name: &str) -> Item {
    match source {
        KorralSource::Registry => toml_edit::value(KORRAL_VERSION),
        KorralSource::Checkout(root) => {
            let mut table = InlineTable::new();
            table.insert(
                "path",
                Value::from(root.join("crates").join(name).display().to_string()),
            );
            Item::Value(Value::InlineTable(table))
        }
    }
}

/// The table `name` of `doc`, created (as a standard table) when missing.
fn table_mut<'a>(doc: &'a mut DocumentMut, name: &str) -> anyhow::Result<&'a mut Table> {
    doc.entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .with_context(|| format!("[{name}] in Cargo.toml is not a table"))
}

/// Adds the dependencies a Korral project needs to the manifest `text`, leaving the ones it
/// already declares (whatever their version or source) as they are. Returns the new text.
pub fn add_dependencies(text: &str, source: &KorralSource) -> anyhow::Result<String> {
    let mut doc: DocumentMut = text.parse().context("parsing Cargo.toml")?;
    for (section, name) in KORRAL_CRATES {
        let table = table_mut(&mut doc, section)?;
        if !table.contains_key(name) {
            table.insert(name, korral_item(source, name));
        }
    }
    for (section, deps) in [
        ("dependencies", &DEPENDENCIES[..]),
        ("dev-dependencies", &DEV_DEPENDENCIES[..]),
    ] {
        let table = table_mut(&mut doc, section)?;
        for dep in deps {
            if !table.contains_key(dep.name) {
                table.insert(dep.name, dependency_item(dep));
            }
        }
    }
    Ok(doc.to_string())
}

/// Where the manifest `doc` takes `korral` from: a checkout when it names
/// `<checkout>/crates/korral` by path, the registry otherwise.
pub fn korral_source_of(doc: &DocumentMut) -> KorralSource {
    let path = doc
        .get("dependencies")
        .and_then(|deps| deps.get("korral"))
        .and_then(|korral| korral.get("path"))
        .and_then(|path| path.as_str())
        .map(Path::new);
    match path.and_then(|p| p.strip_suffix_dirs()) {
        Some(root) => KorralSource::Checkout(root),
        None => KorralSource::Registry,
    }
}

/// `<root>` of a path `<root>/crates/korral`.
trait StripCrateDirs {
    fn strip_suffix_dirs(&self) -> Option<PathBuf>;
}

impl StripCrateDirs for Path {
    fn strip_suffix_dirs(&self) -> Option<PathBuf> {
        let crates = self.parent()?;
        (self.file_name()? == "korral" && crates.file_name()? == "crates")
            .then(|| crates.parent().map(Path::to_path_buf))
            .flatten()
    }
}

/// Adds the dependencies a Korral project needs to the project's `Cargo.toml` under `root` if
/// some are missing, taking the Korral crates from where its `korral` comes from; returns
/// whether the file changed.
pub fn complete_manifest(root: &Path) -> anyhow::Result<bool> {
    let path = root.join("Cargo.toml");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let doc: DocumentMut = text
        .parse()
        .with_context(|| format!("parsing {}", path.display()))?;
    let updated = add_dependencies(&text, &korral_source_of(&doc))
        .with_context(|| format!("adding dependencies to {}", path.display()))?;
    if updated == text {
        return Ok(false);
    }
    super::write_file(&path, &updated)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE: &str = "[package]\nname = \"x\"\n\n[dependencies]\n\n[dev-dependencies]\n";

    #[test]
    fn registry_projects_depend_on_this_version() -> anyhow::Result<()> {
        let text = add_dependencies(BARE, &KorralSource::Registry)?;
        let doc: DocumentMut = text.parse()?;
        assert_eq!(
            doc["dependencies"]["korral"].as_str(),
            Some(KORRAL_VERSION),
            "{text}"
        );
        assert_eq!(
            doc["dev-dependencies"]["korral-testenv"].as_str(),
            Some(KORRAL_VERSION),
            "{text}"
        );
        assert_eq!(
            doc["dependencies"]["k8s-openapi"]["features"]
                .as_array()
                .and_then(|a| a.get(0))
                .and_then(|v| v.as_str()),
            Some("latest"),
            "a binary picks the Kubernetes version: {text}"
        );
        assert_eq!(
            doc["dependencies"]["kube"]["default-features"].as_bool(),
            Some(false)
        );
        Ok(())
    }

    #[test]
    fn checkout_projects_depend_by_path() -> anyhow::Result<()> {
        let text = add_dependencies(BARE, &KorralSource::Checkout("/src/korral".into()))?;
        assert!(
            text.contains("korral = { path = \"/src/korral/crates/korral\" }"),
            "{text}"
        );
        assert!(
            text.contains("korral-testenv = { path = \"/src/korral/crates/korral-testenv\" }"),
            "{text}"
        );
        Ok(())
    }

    #[test]
    fn existing_entries_and_comments_are_kept() -> anyhow::Result<()> {
        let text = "[package]\nname = \"x\"\n\n# mine\n[dependencies]\ntokio = \"=1.40\" # pinned\nkorral = { path = \"../korral\" }\n";
        let out = add_dependencies(text, &KorralSource::Registry)?;
        assert!(out.contains("tokio = \"=1.40\" # pinned"), "{out}");
        assert!(out.contains("korral = { path = \"../korral\" }"), "{out}");
        assert!(out.contains("# mine"), "{out}");
        assert!(out.contains("[dev-dependencies]"), "{out}");
        // A second pass changes nothing.
        assert_eq!(add_dependencies(&out, &KorralSource::Registry)?, out);
        Ok(())
    }

    #[test]
    fn the_source_follows_the_korral_dependency() -> anyhow::Result<()> {
        let doc: DocumentMut =
            "[dependencies]\nkorral = { path = \"/src/korral/crates/korral\" }\n".parse()?;
        assert_eq!(
            korral_source_of(&doc),
            KorralSource::Checkout("/src/korral".into())
        );
        let doc: DocumentMut = "[dependencies]\nkorral = \"0.1\"\n".parse()?;
        assert_eq!(korral_source_of(&doc), KorralSource::Registry);
        let doc: DocumentMut = "[dependencies]\nkorral = { path = \"../mine\" }\n".parse()?;
        assert_eq!(korral_source_of(&doc), KorralSource::Registry);
        Ok(())
    }

    #[test]
    fn a_malformed_manifest_is_refused() {
        assert!(add_dependencies("[dependencies\n", &KorralSource::Registry).is_err());
        assert!(add_dependencies("dependencies = 1\n", &KorralSource::Registry).is_err());
    }

    /// The versions match the Korral workspace's, when this runs inside it (the packaged crate
    /// has no workspace manifest to compare with).
    #[test]
    fn versions_match_the_workspace() -> anyhow::Result<()> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(());
        };
        let doc: DocumentMut = text.parse()?;
        let workspace = &doc["workspace"]["dependencies"];
        for dep in DEPENDENCIES.iter().chain(&DEV_DEPENDENCIES) {
            let item = &workspace[dep.name];
            let version = item
                .as_str()
                .or_else(|| item.get("version").and_then(|v| v.as_str()))
                .with_context(|| format!("{} is not in [workspace.dependencies]", dep.name))?;
            assert_eq!(version, dep.version, "{}", dep.name);
        }
        Ok(())
    }
}
