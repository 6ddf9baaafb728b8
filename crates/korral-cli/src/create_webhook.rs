//! `korral create webhook`: scaffold the admission webhooks (defaulting, validation) or the
//! conversion of an API, as `kubebuilder create webhook` does: the Rust code (a defaulter /
//! validator stub or the hub's conversion, registered on the manager's webhook server, which
//! the binary starts unless `ENABLE_WEBHOOKS=false`), `config/webhook/` (listed in
//! `config/default`) and, with `--cert-manager`, `config/certmanager/`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use korral_runtime::manifests::{
    AdmissionType, AdmissionWebhook, ConvertedKind, ManifestFile, ManifestSet, Manifests,
    OperatorInfo,
};
use serde_json::json;

use crate::project::{Project, ProjectResource, find_root, full_group};
use crate::scaffold::{self, webhooks};

/// Options of `korral create webhook`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The API group, without the domain (`cache` for `cache.example.com`).
    #[arg(long)]
    pub group: String,
    /// The API version (`v1`); with `--conversion`, the hub (stored) version.
    #[arg(long)]
    pub version: String,
    /// The kind (`Memcached`).
    #[arg(long)]
    pub kind: String,
    /// A defaulting (mutating) webhook.
    #[arg(long)]
    pub defaulting: bool,
    /// A validating webhook.
    #[arg(long)]
    pub programmatic_validation: bool,
    /// A conversion webhook: `--version` is the hub, the kind's other versions its spokes.
    #[arg(long)]
    pub conversion: bool,
    /// Let cert-manager issue the webhook certificate (`config/certmanager`) instead of the
    /// operator managing it.
    #[arg(long)]
    pub cert_manager: bool,
    /// The project directory (default: the current one or a parent holding `PROJECT`).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `korral create webhook`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if !args.defaulting && !args.programmatic_validation && !args.conversion {
        bail!(
            "nothing to do: choose at least one of --defaulting, --programmatic-validation, --conversion"
        );
    }
    let root = find_root(&args.dir)?;
    let project = Project::load(&root)?;
    let group = full_group(&args.group, &project.domain);
    let resource = project
        .resource(&args.group, &args.version, &args.kind)
        .filter(|r| r.api)
        .cloned()
        .with_context(|| {
            format!(
                "API {group}/{} {} does not exist in this project: create it first with `korral create api`",
                args.version, args.kind
            )
        })?;
    let mut files = Vec::new();
    let mut edits = Vec::new();
    let mut manifests = Manifests::new();
    if args.defaulting || args.programmatic_validation {
        let (f, e) = webhooks::admission_files(
            &project,
            &resource,
            args.defaulting,
            args.programmatic_validation,
        )?;
        files.extend(f);
        edits.extend(e);
        for (chosen, admission, prefix) in [
            (args.defaulting, AdmissionType::Mutating, "mutate"),
            (
                args.programmatic_validation,
                AdmissionType::Validating,
                "validate",
            ),
        ] {
            if chosen {
                manifests.add_webhook(admission_webhook(&resource, &group, admission, prefix));
            }
        }
    }
    if args.conversion {
        let spokes: Vec<&ProjectResource> = spokes(&project, &resource);
        if spokes.is_empty() {
            bail!(
                "{} has no other version to convert from {}: add one with `korral create api --version <other>` (which scaffolds its conversion)",
                args.kind,
                args.version
            );
        }
        let (f, e) = webhooks::conversion_files(&project, &resource, &spokes, false)?;
        files.extend(f);
        edits.extend(e);
        manifests.add_conversion(ConvertedKind {
            group: group.clone(),
            kind: resource.kind.clone(),
            hub_version: resource.version.clone(),
        });
    }
    for file in &files {
        if root.join(&file.path).exists() {
            bail!(
                "{} already exists: the webhook is scaffolded already",
                file.path.display()
            );
        }
    }
    for file in &files {
        scaffold::write_file(&root.join(&file.path), &file.contents)?;
    }
    for edit in &edits {
        scaffold::apply_edit(&root, edit)?;
    }
    let main_changed = webhooks::wire_main(&root, &project)?;
    let info = OperatorInfo::new(&project.project_name, &project.domain);
    let mut written: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    written.extend(write_config(&root, &manifests, &info)?);
    if args.cert_manager {
        written.extend(write_cert_manager(&root, &info)?);
    }

    println!(
        "Created webhooks for {group}/{} {}",
        args.version, args.kind
    );
    for path in &written {
        println!("  wrote {path}");
    }
    println!(
        "  updated src/lib.rs, src/webhooks/mod.rs{}",
        if main_changed { ", src/main.rs" } else { "" }
    );
    println!(
        "Next: write the webhook logic, then run `korral generate` (it writes config/webhook/manifests.yaml from the code)."
    );
    Ok(())
}

/// The other versions of the kind of `hub` the project defines.
pub fn spokes<'a>(project: &'a Project, hub: &ProjectResource) -> Vec<&'a ProjectResource> {
    project
        .resources
        .iter()
        .filter(|r| r.api && r.group == hub.group && r.kind == hub.kind && r.version != hub.version)
        .collect()
}

/// The admission webhook of `resource` of type `admission` on kubebuilder's path.
fn admission_webhook(
    resource: &ProjectResource,
    group: &str,
    admission: AdmissionType,
    prefix: &str,
) -> AdmissionWebhook {
    AdmissionWebhook {
        admission,
        group: group.to_owned(),
        version: resource.version.clone(),
        kind: resource.kind.clone(),
        resource: resource.plural.clone(),
        path: format!(
            "/{prefix}-{}-{}-{}",
            group.replace('.', "-"),
            resource.version,
            resource.kind.to_lowercase()
        ),
        operations: vec!["CREATE".to_owned(), "UPDATE".to_owned()],
    }
}

/// Writes `config/webhook/` for what `manifests` declares (the Service, and the configurations
/// unless `manifests.yaml` exists: `korral generate` rewrites it from the code with every
/// webhook), its kustomization and `../webhook` in `config/default`. Returns the written paths.
pub fn write_config(
    root: &Path,
    manifests: &Manifests,
    info: &OperatorInfo,
) -> anyhow::Result<Vec<String>> {
    let set = manifests.render(info)?;
    let mut files: Vec<ManifestFile> = set
        .files
        .into_iter()
        .filter(|f| f.path.starts_with("config/webhook/"))
        .collect();
    let mut written = Vec::new();
    for file in &files {
        let path = root.join(&file.path);
        if file.path.ends_with("manifests.yaml") && path.exists() {
            continue;
        }
        scaffold::write_file(&path, &crate::generate::to_yaml(file)?)?;
        written.push(file.path.clone());
    }
    if root.join("config/webhook/manifests.yaml").exists()
        && !files
            .iter()
            .any(|f| f.path == "config/webhook/manifests.yaml")
    {
        files.push(ManifestFile {
            path: "config/webhook/manifests.yaml".to_owned(),
            objects: Vec::new(),
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let listed = ManifestSet {
        api_version: ManifestSet::API_VERSION.to_owned(),
        kind: "ManifestSet".to_owned(),
        name: info.name.clone(),
        files,
    };
    written.extend(crate::generate::write_kustomizations(root, &listed)?);
    Ok(written)
}

/// kubebuilder's `config/certmanager`: a self-signed Issuer and the serving Certificate of the
/// webhook Service (Secret `webhook-server-cert`), listed in `config/default`.
fn write_cert_manager(root: &Path, info: &OperatorInfo) -> anyhow::Result<Vec<String>> {
    let issuer = format!("{}-selfsigned-issuer", info.name);
    let service = info.webhook_service_name();
    let files = [
        ManifestFile {
            path: "config/certmanager/issuer.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "cert-manager.io/v1",
                "kind": "Issuer",
                "metadata": {"name": issuer, "namespace": info.namespace},
                "spec": {"selfSigned": {}},
            })],
        },
        ManifestFile {
            path: "config/certmanager/certificate.yaml".to_owned(),
            objects: vec![json!({
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": format!("{}-serving-cert", info.name), "namespace": info.namespace},
                "spec": {
                    "dnsNames": [
                        format!("{service}.{}.svc", info.namespace),
                        format!("{service}.{}.svc.cluster.local", info.namespace),
                    ],
                    "issuerRef": {"kind": "Issuer", "name": issuer},
                    "secretName": korral_runtime::webhook::certs::DEFAULT_SECRET_NAME,
                },
            })],
        },
    ];
    let mut written = Vec::new();
    for file in &files {
        let yaml = crate::generate::to_yaml(file)?.replacen(
            crate::generate::HEADER,
            "# Scaffolded by `korral create webhook --cert-manager` (kubebuilder's config/certmanager).\n",
            1,
        );
        scaffold::write_file(&root.join(&file.path), &yaml)?;
        written.push(file.path.clone());
    }
    scaffold::write_file(
        &root.join("config/certmanager/kustomization.yaml"),
        "# cert-manager's Issuer and the webhook serving Certificate (needs cert-manager installed).\nresources:\n- issuer.yaml\n- certificate.yaml\n",
    )?;
    written.push("config/certmanager/kustomization.yaml".to_owned());
    let default = root.join("config/default/kustomization.yaml");
    if let Ok(text) = std::fs::read_to_string(&default)
        && let Some(updated) = crate::generate::add_resource(&text, "../certmanager")
    {
        scaffold::write_file(&default, &updated)?;
        written.push("config/default/kustomization.yaml".to_owned());
    }
    let mod_rs = root.join("src/webhooks/mod.rs");
    let text = std::fs::read_to_string(&mod_rs)
        .with_context(|| format!("reading {}", mod_rs.display()))?;
    scaffold::write_file(
        &mod_rs,
        &text.replace(
            "pub const SELF_MANAGED_CERTS: bool = true;",
            "pub const SELF_MANAGED_CERTS: bool = false;",
        ),
    )?;
    Ok(written)
}
