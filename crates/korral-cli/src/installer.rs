//! `korral build-installer`: one YAML file that installs the operator (`dist/install.yaml`, as
//! kubebuilder's `make build-installer`): the CRDs, RBAC, namespace and manager Deployment of
//! `config/default`, in creation order, with the manager image set.

use std::path::PathBuf;

use anyhow::Context;

use crate::cluster::{Target, creation_order, deploy_objects, project_root};

/// Options of `korral build-installer`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The manager image (replaces the image of the `manager` container).
    #[arg(long, env = "IMG")]
    pub image: Option<String>,
    /// Where to write the installer, relative to the project root.
    #[arg(long, default_value = "dist/install.yaml")]
    pub output: PathBuf,
    #[command(flatten)]
    pub target: Target,
}

/// Renders `objects` as one multi-document YAML stream.
pub fn render(objects: &[serde_json::Value]) -> anyhow::Result<String> {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(object).context("rendering YAML")?);
    }
    Ok(out)
}

/// Runs `korral build-installer`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (root, _) = project_root(&args.target)?;
    let mut objects = deploy_objects(&root, args.image.as_deref())?;
    creation_order(&mut objects);
    let path = root.join(&args.output);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&path, render(&objects)?)
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} ({} objects)", path.display(), objects.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_become_one_document_each() -> anyhow::Result<()> {
        let objects = vec![
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
            serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "b", "namespace": "a"}}),
        ];
        let yaml = render(&objects)?;
        let back: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(serde::Deserialize::deserialize)
            .collect::<Result<_, _>>()?;
        assert_eq!(back, objects);
        Ok(())
    }
}
