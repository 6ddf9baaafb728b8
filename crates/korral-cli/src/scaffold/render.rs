//! Rendering the scaffold's templates (`templates/*.tmpl`) with minijinja.
//!
//! Undefined values are errors (`UndefinedBehavior::Strict`), so a template naming a variable
//! the scaffold does not provide fails instead of writing an empty string; nothing is escaped
//! (the output is Rust, TOML, YAML, Makefiles).

use anyhow::Context;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};

/// The templates, by name.
pub const TEMPLATES: [(&str, &str); 14] = [
    ("Cargo.toml", include_str!("templates/Cargo.toml.tmpl")),
    ("Dockerfile", include_str!("templates/Dockerfile.tmpl")),
    ("Makefile", include_str!("templates/Makefile.tmpl")),
    ("README.md", include_str!("templates/README.md.tmpl")),
    (
        "controller.rs",
        include_str!("templates/controller.rs.tmpl"),
    ),
    (
        "controller_test.rs",
        include_str!("templates/controller_test.rs.tmpl"),
    ),
    ("lib.rs", include_str!("templates/lib.rs.tmpl")),
    ("main.rs", include_str!("templates/main.rs.tmpl")),
    ("sample.yaml", include_str!("templates/sample.yaml.tmpl")),
    ("types.rs", include_str!("templates/types.rs.tmpl")),
    (
        "webhooks_mod.rs",
        include_str!("templates/webhooks_mod.rs.tmpl"),
    ),
    ("webhook.rs", include_str!("templates/webhook.rs.tmpl")),
    (
        "conversion.rs",
        include_str!("templates/conversion.rs.tmpl"),
    ),
    ("spoke.rs", include_str!("templates/spoke.rs.tmpl")),
];

/// A minijinja environment with strict undefined values, no escaping and kept final newlines.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_keep_trailing_newline(true);
    env
}

/// Renders `source` (named `name` in errors) with `context`.
pub fn render_str(name: &str, source: &str, context: Value) -> anyhow::Result<String> {
    let env = environment();
    let template = env
        .template_from_named_str(name, source)
        .with_context(|| format!("parsing the scaffold template {name}"))?;
    template
        .render(context)
        .with_context(|| format!("rendering the scaffold template {name}"))
}

/// Renders the template `name` of [`TEMPLATES`] with `context`.
pub fn render(name: &str, context: Value) -> anyhow::Result<String> {
    let source = TEMPLATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, source)| *source)
        .with_context(|| format!("no scaffold template named {name}"))?;
    render_str(name, source, context)
}

#[cfg(test)]
mod tests {
    use minijinja::context;

    use super::*;

    #[test]
    fn values_are_substituted_without_escaping() {
        let out = render_str(
            "t",
            "a {{ x }} {{ y }} {{ x }}\n",
            context! { x => "<1>", y => "\"2\"" },
        )
        .expect("renders");
        assert_eq!(out, "a <1> \"2\" <1>\n");
    }

    #[test]
    fn an_undefined_value_is_an_error() {
        let err = render_str("t", "{{ name }} {{ missing }}", context! { name => "x" })
            .expect_err("strict");
        assert!(format!("{err:#}").contains("undefined"), "{err:#}");
        // Also inside conditions.
        assert!(render_str("t", "{% if missing %}x{% endif %}", context! {}).is_err());
    }

    #[test]
    fn every_template_parses() {
        let env = environment();
        for (name, source) in TEMPLATES {
            if let Err(err) = env.template_from_named_str(name, source) {
                panic!("template {name}: {err:#}");
            }
        }
    }

    #[test]
    fn an_unknown_template_is_named() {
        let err = render("nope", context! {}).expect_err("unknown");
        assert_eq!(err.to_string(), "no scaffold template named nope");
    }
}
