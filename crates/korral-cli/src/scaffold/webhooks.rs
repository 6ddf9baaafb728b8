//! The code `korral create webhook` (and `korral create api` for a new version of a kind)
//! writes: `src/webhooks/mod.rs` (the webhook server and its certificates, wired into the
//! manager binary), one module per kind and version with a defaulter and/or validator stub, and
//! one conversion module per converted kind (its hub and spokes).

use std::path::{Path, PathBuf};

use anyhow::Context;
use minijinja::context;

use super::{Edit, File, crate_name, render, write_file};
use crate::project::{Project, ProjectResource, full_group, module_name, snake_case};

/// The marker in `src/webhooks/mod.rs` above which webhooks are registered.
pub const WEBHOOKS_MARKER: &str = "    // korral:scaffold:webhooks";
/// The marker in a conversion module above which spokes are added.
pub const SPOKES_MARKER: &str = "        // korral:scaffold:spokes";
/// The line of a scaffolded `src/main.rs` that adds the operator to the manager.
const MAIN_SETUP: &str = "::add_to_manager(manager, &scope)\n";

/// The webhook module of `resource`: `<kind>_<version>` (`<group>_<kind>_<version>` in
/// multi-group projects).
pub fn admission_module(project: &Project, resource: &ProjectResource) -> String {
    let base = format!("{}_{}", snake_case(&resource.kind), resource.version);
    if project.multigroup {
        format!("{}_{base}", module_name(&resource.group))
    } else {
        base
    }
}

/// The conversion module of a kind: `<kind>_conversion` (`<group>_<kind>_conversion` in
/// multi-group projects).
pub fn conversion_module(project: &Project, group: &str, kind: &str) -> String {
    let base = format!("{}_conversion", snake_case(kind));
    if project.multigroup {
        format!("{}_{base}", module_name(group))
    } else {
        base
    }
}

/// The path of a module of `src/webhooks/`.
pub fn module_path(module: &str) -> PathBuf {
    PathBuf::from("src/webhooks").join(format!("{module}.rs"))
}

/// The edits that make `src/webhooks/mod.rs` exist (with the webhook server), declare
/// `module` in it and register it with `registration` (a line above [`WEBHOOKS_MARKER`]).
fn link(project: &Project, module: &str, registration: String) -> anyhow::Result<Vec<Edit>> {
    let mod_rs = render::render(
        "webhooks_mod.rs",
        context! { crate_name => crate_name(&project.project_name) },
    )?;
    Ok(vec![
        Edit::ModuleLine {
            path: PathBuf::from("src/lib.rs"),
            doc: String::new(),
            line: "pub mod webhooks;".to_owned(),
        },
        Edit::ModuleLine {
            path: PathBuf::from("src/webhooks/mod.rs"),
            doc: mod_rs,
            line: format!("pub mod {module};"),
        },
        Edit::Marker {
            path: PathBuf::from("src/webhooks/mod.rs"),
            marker: WEBHOOKS_MARKER.to_owned(),
            line: registration,
        },
    ])
}

/// The defaulting and/or validating webhook module of `resource`, and the edits linking it.
pub fn admission_files(
    project: &Project,
    resource: &ProjectResource,
    defaulting: bool,
    validation: bool,
) -> anyhow::Result<(Vec<File>, Vec<Edit>)> {
    let group = full_group(&resource.group, &resource.domain);
    let path = |prefix: &str| {
        format!(
            "/{prefix}-{}-{}-{}",
            group.replace('.', "-"),
            resource.version,
            resource.kind.to_lowercase()
        )
    };
    let module = admission_module(project, resource);
    let code = render::render(
        "webhook.rs",
        context! {
            kind => &resource.kind,
            full_group => &group,
            version => &resource.version,
            type_path => &resource.type_path,
            var => snake_case(&resource.kind),
            defaulting => defaulting,
            validation => validation,
            mutate_path => path("mutate"),
            validate_path => path("validate"),
        },
    )?;
    let edits = link(
        project,
        &module,
        format!("    {module}::register(&mut server)?;"),
    )?;
    Ok((vec![File::new(module_path(&module), code)], edits))
}

/// The conversion of the kind of `hub` (the hub, stored) with `spokes`: the conversion
/// module when `exists` is false (with the edits linking it), and for every spoke the `TryFrom`
/// impls appended to it and its `.spoke::<...>()` line.
pub fn conversion_files(
    project: &Project,
    hub: &ProjectResource,
    spokes: &[&ProjectResource],
    exists: bool,
) -> anyhow::Result<(Vec<File>, Vec<Edit>)> {
    let module = conversion_module(project, &hub.group, &hub.kind);
    let path = module_path(&module);
    let mut files = Vec::new();
    let mut edits = Vec::new();
    if !exists {
        files.push(File::new(
            path.clone(),
            render::render(
                "conversion.rs",
                context! {
                    kind => &hub.kind,
                    hub_path => &hub.type_path,
                    hub_version => &hub.version,
                },
            )?,
        ));
        edits.extend(link(
            project,
            &module,
            format!("    let conversion = conversion.kind({module}::kind())?;"),
        )?);
    }
    for spoke in spokes {
        edits.push(Edit::Marker {
            path: path.clone(),
            marker: SPOKES_MARKER.to_owned(),
            line: format!("        .spoke::<crate::{}>()", spoke.type_path),
        });
        edits.push(Edit::Append {
            path: path.clone(),
            text: render::render(
                "spoke.rs",
                context! { spoke_path => &spoke.type_path, spoke_version => &spoke.version },
            )?,
        });
    }
    Ok((files, edits))
}

/// Wires the webhooks into a scaffolded `src/main.rs` (unless `ENABLE_WEBHOOKS=false`);
/// returns whether it changed. A `main.rs` without the scaffolded setup line is left alone
/// (the error says what to add).
pub fn wire_main(root: &Path, project: &Project) -> anyhow::Result<bool> {
    let path = root.join("src/main.rs");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    if text.contains("webhooks::add_to_manager") {
        return Ok(false);
    }
    let krate = crate_name(&project.project_name);
    let setup = format!("{krate}{MAIN_SETUP}");
    let Some(at) = text.find(&setup) else {
        anyhow::bail!(
            "{} does not call `{}` as scaffolded: call `{krate}::webhooks::add_to_manager(manager, &info)?` in the setup yourself",
            path.display(),
            setup.trim()
        );
    };
    let indent: String = text[..at]
        .rsplit('\n')
        .next()
        .unwrap_or_default()
        .chars()
        .take_while(|c| c.is_whitespace())
        .collect();
    let wired = format!(
        "{krate}::add_to_manager(manager, &scope)?;\n\
         {indent}// The webhooks (`korral create webhook`); ENABLE_WEBHOOKS=false runs without them.\n\
         {indent}if std::env::var(\"ENABLE_WEBHOOKS\").as_deref() != Ok(\"false\") {{\n\
         {indent}    {krate}::webhooks::add_to_manager(manager, &info)?;\n\
         {indent}}}\n\
         {indent}Ok(())\n"
    );
    let out = format!("{}{wired}{}", &text[..at], &text[at + setup.len()..]);
    write_file(&path, &out)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Project {
        Project {
            layout: crate::project::LAYOUT.to_owned(),
            domain: "example.com".to_owned(),
            project_name: "memcached-operator".to_owned(),
            multigroup: false,
            resources: Vec::new(),
        }
    }

    fn resource(version: &str) -> ProjectResource {
        super::super::new_resource(&project(), "cache", version, "Memcached", true, true, true)
    }

    #[test]
    fn admission_modules_register_their_webhooks() -> anyhow::Result<()> {
        let (files, edits) = admission_files(&project(), &resource("v1"), true, false)?;
        assert_eq!(files[0].path, PathBuf::from("src/webhooks/memcached_v1.rs"));
        let code = &files[0].contents;
        assert!(
            code.contains("impl Defaulter<Memcached> for MemcachedCustomDefaulter"),
            "{code}"
        );
        assert!(!code.contains("Validator"), "{code}");
        assert!(
            code.contains("`/mutate-cache-example-com-v1-memcached`"),
            "{code}"
        );
        assert!(code.contains("use crate::api::v1::Memcached;"), "{code}");
        assert!(edits.contains(&Edit::Marker {
            path: PathBuf::from("src/webhooks/mod.rs"),
            marker: WEBHOOKS_MARKER.to_owned(),
            line: "    memcached_v1::register(&mut server)?;".to_owned(),
        }));
        let (files, _) = admission_files(&project(), &resource("v1"), false, true)?;
        assert!(
            files[0]
                .contents
                .contains("impl Validator<Memcached> for MemcachedCustomValidator")
        );
        assert!(!files[0].contents.contains("Defaulter"));
        Ok(())
    }

    #[test]
    fn conversions_name_the_hub_and_add_spokes() -> anyhow::Result<()> {
        let hub = resource("v1");
        let spoke = resource("v2");
        let (files, edits) = conversion_files(&project(), &hub, &[&spoke], false)?;
        assert_eq!(
            files[0].path,
            PathBuf::from("src/webhooks/memcached_conversion.rs")
        );
        assert!(
            files[0]
                .contents
                .contains("use crate::api::v1::Memcached as HubKind;")
        );
        assert!(edits.contains(&Edit::Marker {
            path: PathBuf::from("src/webhooks/memcached_conversion.rs"),
            marker: SPOKES_MARKER.to_owned(),
            line: "        .spoke::<crate::api::v2::Memcached>()".to_owned(),
        }));
        assert!(edits.iter().any(|e| matches!(e, Edit::Append { text, .. }
            if text.contains("impl TryFrom<crate::api::v2::Memcached> for HubKind"))));
        // A later spoke only adds itself.
        let (files, edits) = conversion_files(&project(), &hub, &[&resource("v3")], true)?;
        assert!(files.is_empty());
        assert_eq!(edits.len(), 2);
        Ok(())
    }

    #[test]
    fn main_gets_the_webhooks_once() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let main = "    args.operator\n        .run(&info, |manager, scope| {\n            memcached_operator::add_to_manager(manager, &scope)\n        })\n        .await?;\n";
        std::fs::create_dir_all(dir.path().join("src"))?;
        std::fs::write(dir.path().join("src/main.rs"), main)?;
        assert!(wire_main(dir.path(), &project())?);
        let wired = std::fs::read_to_string(dir.path().join("src/main.rs"))?;
        assert!(wired.contains("            memcached_operator::add_to_manager(manager, &scope)?;\n            // The webhooks"), "{wired}");
        assert!(wired.contains("                memcached_operator::webhooks::add_to_manager(manager, &info)?;\n            }\n            Ok(())\n        })"), "{wired}");
        assert!(!wire_main(dir.path(), &project())?);
        Ok(())
    }
}
