//! Validation of CustomResourceDefinitions as upstream's `ValidateCustomResourceDefinition`,
//! `ValidateCustomResourceDefinitionUpdate` and `ValidateUpdateCustomResourceDefinitionStatus`
//! do, on the internal view of the spec ([`InternalSpec`]): the group, scope, names, versions
//! (names, deprecation warnings, schemas, subresources, printer columns, selectable fields),
//! conversion, stored versions, API approval and `preserveUnknownFields`.
//!
//! Upstream's checks that v1 cannot trip are left out: the top-level and per-version fields
//! being both set or all identical (the v1 → internal conversion never produces either) and
//! `spec.version` differing from the first version (it is copied from it).
//!
//! Ratcheting on update, as upstream: a schema is required only if the stored CRD had one for
//! every version; an unchanged over-long selectable field list stays; an unchanged API approval
//! state and a stored `preserveUnknownFields: true` are not refused again. Schema checks
//! themselves (structural rules, defaults, CEL) run whole on every write.

use serde_json::{Value, json};

use super::columns::validate_columns;
use super::internal::{InternalSpec, go_json_string, go_json_value, has_status, str_of};
use super::names::{required_spec_names, validate_api_approval, validate_names};
use super::selectable::{MAX_SELECTABLE_FIELDS, validate_selectable_fields};
use super::subresources::{validate_root_for_status, validate_subresources};
use crate::error::Cause;
use crate::meta;
use crate::registry::Registry;
use crate::validation::names::{child, dns1035_label, dns1123_subdomain, index, invalid_rendered};
use crate::validation::schema;

/// The most bytes a version's `deprecationWarning` may have.
const MAX_DEPRECATION_WARNING: usize = 256;

/// What the stored CRD relaxes in the checks of an update (upstream's `validationOptions`).
#[derive(Debug, Default)]
struct Options {
    /// Every version must have a schema (always on create).
    require_schema: bool,
    /// The versions (by name, `""` for the spec level) whose over-long, unchanged selectable
    /// field list is kept.
    too_many_selectable_allowed: Vec<String>,
    /// The stored CRD already names no ConversionReview version the server speaks (stored by
    /// an older server): the update need not fix that.
    unrecognized_review_versions_allowed: bool,
}

impl Options {
    /// The options of a create.
    fn create() -> Self {
        Self {
            require_schema: true,
            ..Self::default()
        }
    }

    /// The options of an update of `old` into `new`.
    fn update(new: &InternalSpec<'_>, old: &InternalSpec<'_>) -> Self {
        let require_schema = old.top_schema().is_some()
            || old.versions.iter().enumerate().all(|(i, _)| {
                old.schema.per_version[i].is_some_and(|s| s.get("openAPIV3Schema").is_some())
            });
        let long = |v: Option<&Value>| {
            v.and_then(Value::as_array)
                .is_some_and(|a| a.len() > MAX_SELECTABLE_FIELDS)
        };
        let mut allowed = Vec::new();
        if long(old.selectable.top) && new.selectable.top == old.selectable.top {
            allowed.push(String::new());
        }
        for (i, v) in new.versions.iter().enumerate() {
            let name = str_of(v, "name");
            let Some(j) = old.versions.iter().position(|o| str_of(o, "name") == name) else {
                continue;
            };
            let old_fields = old.selectable.per_version[j];
            if long(old_fields) && new.selectable.per_version[i] == old_fields {
                allowed.push(name.to_string());
            }
        }
        Self {
            require_schema,
            too_many_selectable_allowed: allowed,
            unrecognized_review_versions_allowed: false,
        }
    }
}

/// Upstream's `hasValidConversionReviewVersionOrEmpty` of a stored CRD: no review versions, or
/// at least one the server speaks.
fn recognized_review_versions_or_none(crd: &Value) -> bool {
    let versions = meta::strings(meta::path(
        crd,
        "spec.conversion.webhook.conversionReviewVersions",
    ));
    versions.is_empty()
        || versions
            .iter()
            .any(|v| crate::kinds::admissionregistration::ACCEPTED_VERSIONS.contains(&v.as_str()))
}

/// Validates a CRD being created (`old` `None`) or updated through the main resource; returns
/// upstream's causes in its order.
pub fn validate(obj: &Value, old: Option<&Value>, registry: &Registry) -> Vec<Cause> {
    let spec = InternalSpec::of(obj);
    let mut causes = Vec::new();
    let group = str_at(obj, "spec.group");
    let plural = str_at(obj, "spec.names.plural");
    let name = meta::name(obj);
    // The name rule of upstream's `ValidateObjectMeta` (not run again on update).
    if old.is_none() && name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let opts = match old {
        None => Options::create(),
        Some(old) => Options {
            unrecognized_review_versions_allowed: !recognized_review_versions_or_none(old),
            ..Options::update(&spec, &InternalSpec::of(old))
        },
    };
    causes.extend(validate_spec(obj, &spec, &opts, registry));
    if let Some(old) = old {
        causes.extend(validate_immutable(obj, old));
    }
    if let Some(accepted) = meta::path(obj, "status.acceptedNames") {
        causes.extend(validate_names(accepted, "status.acceptedNames"));
    }
    // Upstream's strategy records the storage version before validating.
    let stored = match old {
        None => super::storage_version(obj).map(|v| json!([v])),
        Some(old) => Some(Value::Array(super::stored_versions_after_update(obj, old))),
    };
    causes.extend(validate_stored_versions(stored.as_ref(), &spec));
    causes.extend(validate_api_approval(obj, old));
    causes.extend(validate_preserve_unknown_fields(obj, old));
    causes
}

/// Validates a write of `/status` (upstream's `ValidateUpdateCustomResourceDefinitionStatus`):
/// only the accepted names; the stored versions a migration writes are not checked.
pub fn validate_status_update(obj: &Value, _old: &Value) -> Vec<Cause> {
    meta::path(obj, "status.acceptedNames")
        .map(|names| validate_names(names, "status.acceptedNames"))
        .unwrap_or_default()
}

/// The string at a dotted path of `v`, empty when absent.
fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    meta::path(v, path).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateImmutableField` at `path`: the new value with `field is immutable`.
fn immutable(obj: &Value, old: &Value, path: &str) -> Option<Cause> {
    let new = meta::path(obj, path).cloned().unwrap_or(json!(""));
    let was = meta::path(old, path).cloned().unwrap_or(json!(""));
    (new != was).then(|| Cause::invalid(path, &new, "field is immutable"))
}

/// Whether a CRD's `Established` condition is true.
fn established(crd: &Value) -> bool {
    meta::path(crd, "status.conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| str_of(c, "type") == "Established" && str_of(c, "status") == "True")
}

/// The fields an update may not change: scope and kind once established (they shape the stored
/// objects), group and plural always (they make the CRD's name).
fn validate_immutable(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut paths = Vec::new();
    if established(old) {
        paths.extend(["spec.scope", "spec.names.kind"]);
    }
    paths.extend(["spec.group", "spec.names.plural"]);
    paths
        .into_iter()
        .filter_map(|p| immutable(obj, old, p))
        .collect()
}

/// Upstream's `validateCustomResourceDefinitionSpec` on the internal view.
fn validate_spec(
    obj: &Value,
    spec: &InternalSpec<'_>,
    opts: &Options,
    registry: &Registry,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let group = str_at(obj, "spec.group");
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    } else {
        let errs = dns1123_subdomain(group);
        if !errs.is_empty() {
            causes.push(Cause::invalid("spec.group", &json!(group), &errs.join(",")));
        } else if !group.contains('.') {
            causes.push(Cause::invalid(
                "spec.group",
                &json!(group),
                "should be a domain with at least one dot",
            ));
        }
    }
    match str_at(obj, "spec.scope") {
        "" => causes.push(Cause::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => causes.push(Cause::not_supported(
            "spec.scope",
            &json!(other),
            &[json!("Cluster"), json!("Namespaced")],
        )),
    }
    let preserve_unknown =
        meta::path(obj, "spec.preserveUnknownFields").and_then(Value::as_bool) == Some(true);
    causes.extend(required_schemas(spec, opts, preserve_unknown));
    if preserve_unknown && spec_has_defaults(spec) {
        causes.push(Cause::invalid(
            "spec.preserveUnknownFields",
            &json!(true),
            "must be false in order to use defaults in the schema",
        ));
    }
    let mut storage = 0;
    let mut names: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        let name = str_of(v, "name");
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if names.contains(&name) {
            unique = false;
        } else {
            names.push(name);
        }
        let path = index("spec.versions", i);
        let errs = dns1035_label(name);
        if !errs.is_empty() {
            causes.push(Cause::invalid(
                child(&path, "name"),
                &json!(name),
                &errs.join(","),
            ));
        }
        causes.extend(validate_version(spec, i, &path, opts, registry));
    }
    if !unique {
        causes.push(invalid_rendered(
            "spec.versions",
            &spec.render_versions(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        causes.push(invalid_rendered(
            "spec.versions",
            &spec.render_versions(),
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is a copy of the first version's name.
    if let Some(first) = spec.versions.first() {
        let name = str_of(first, "name");
        let errs = dns1035_label(name);
        if !errs.is_empty() {
            causes.push(Cause::invalid(
                "spec.version",
                &json!(name),
                &errs.join(","),
            ));
        }
    }
    let names = meta::path(obj, "spec.names").cloned().unwrap_or(json!({}));
    causes.extend(required_spec_names(&names));
    causes.extend(validate_names(&names, "spec.names"));
    if let Some(validation) = spec.schema.top {
        causes.extend(validate_schema(
            validation,
            "spec.validation",
            spec.any_status_enabled(),
            registry,
        ));
    }
    if let Some(subresources) = spec.subresources.top {
        causes.extend(validate_subresources(subresources, "spec.subresources"));
    }
    if let Some(columns) = spec.columns.top {
        causes.extend(validate_columns(columns, "spec.additionalPrinterColumns"));
    }
    if let Some(fields) = spec.selectable.top {
        match spec.schema.top {
            None => causes.push(Cause::invalid(
                "spec.selectableFields",
                &json!(""),
                "may only be set when validations.schema is included",
            )),
            Some(_) => causes.extend(validate_selectable_fields(
                fields,
                spec.top_schema().unwrap_or(&Value::Null),
                "spec.selectableFields",
                opts.too_many_selectable_allowed
                    .iter()
                    .any(String::is_empty),
            )),
        }
    }
    let strategy = str_at(obj, "spec.conversion.strategy");
    if !strategy.is_empty() && strategy != "None" && preserve_unknown {
        causes.push(Cause::invalid(
            "spec.conversion.strategy",
            &json!(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    causes.extend(validate_conversion(
        obj,
        !opts.unrecognized_review_versions_allowed,
    ));
    causes
}

/// Every version needs a schema (when the stored CRD had them all, or on create); else, without
/// `preserveUnknownFields`, every served one, "because otherwise all fields are pruned".
fn required_schemas(spec: &InternalSpec<'_>, opts: &Options, preserve_unknown: bool) -> Vec<Cause> {
    if spec.top_schema().is_some() || (!opts.require_schema && preserve_unknown) {
        return Vec::new();
    }
    spec.versions
        .iter()
        .enumerate()
        .filter(|(i, v)| {
            let missing = spec.schema.per_version[*i]
                .is_none_or(|s| s.get("openAPIV3Schema").is_none_or(Value::is_null));
            missing
                && (opts.require_schema || v.get("served").and_then(Value::as_bool) == Some(true))
        })
        .map(|(i, _)| {
            let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
            let detail = if opts.require_schema {
                ""
            } else {
                "because otherwise all fields are pruned"
            };
            Cause::required(path, detail)
        })
        .collect()
}

/// Whether a schema of the spec sets a `default` anywhere.
fn spec_has_defaults(spec: &InternalSpec<'_>) -> bool {
    std::iter::once(spec.schema.top)
        .chain(spec.schema.per_version.iter().copied())
        .flatten()
        .filter_map(|s| s.get("openAPIV3Schema"))
        .any(schema_has_default)
}

/// Whether `s` or a schema nested in it sets `default`.
fn schema_has_default(s: &Value) -> bool {
    if s.get("default").is_some() {
        return true;
    }
    let nested_maps = [
        "properties",
        "patternProperties",
        "definitions",
        "dependencies",
    ];
    let nested_lists = ["allOf", "anyOf", "oneOf"];
    let nested_one = ["not", "additionalProperties", "additionalItems"];
    nested_maps.iter().any(|k| {
        s.get(*k)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().any(schema_has_default))
    }) || nested_lists.iter().any(|k| {
        s.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(schema_has_default))
    }) || nested_one.iter().any(|k| {
        s.get(*k)
            .is_some_and(|x| x.is_object() && schema_has_default(x))
    }) || match s.get("items") {
        Some(Value::Array(l)) => l.iter().any(schema_has_default),
        Some(one @ Value::Object(_)) => schema_has_default(one),
        _ => false,
    }
}

/// Upstream's `validateCustomResourceDefinitionVersion` for version `i` at `path`.
fn validate_version(
    spec: &InternalSpec<'_>,
    i: usize,
    path: &str,
    opts: &Options,
    registry: &Registry,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(version) = spec.versions.get(i) else {
        return causes;
    };
    causes.extend(validate_deprecation_warning(version, path));
    let status_enabled = spec.subresources_for(i).is_some_and(has_status);
    let own_schema = spec.schema.per_version[i];
    if let Some(validation) = own_schema {
        causes.extend(validate_schema(
            validation,
            &child(path, "schema"),
            status_enabled,
            registry,
        ));
    }
    if let Some(subresources) = spec.subresources.per_version[i] {
        causes.extend(validate_subresources(
            subresources,
            &child(path, "subresources"),
        ));
    }
    if let Some(columns) = spec.columns.per_version[i] {
        causes.extend(validate_columns(
            columns,
            &child(path, "additionalPrinterColumns"),
        ));
    }
    if let Some(fields) = spec.selectable.per_version[i] {
        let field = child(path, "selectableFields");
        match own_schema.and_then(|s| s.get("openAPIV3Schema")) {
            None => causes.push(Cause::invalid(
                field,
                &json!(""),
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            )),
            Some(schema) => {
                let name = str_of(version, "name");
                let allowed = opts.too_many_selectable_allowed.iter().any(|n| n == name);
                causes.extend(validate_selectable_fields(fields, schema, &field, allowed));
            }
        }
    }
    causes
}

/// Go's `unicode.IsPrint`, closely: not a control, format, separator other than the ASCII
/// space, private-use or unassigned-looking character.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(c,
        '\u{ad}' | '\u{600}'..='\u{605}' | '\u{61c}' | '\u{6dd}' | '\u{70f}' | '\u{180e}'
        | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}'
        | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{e000}'..='\u{f8ff}'
        | '\u{fdd0}'..='\u{fdef}' | '\u{fffe}' | '\u{ffff}' | '\u{f0000}'..)
}

/// Upstream's `validateDeprecationWarning` at `path.deprecationWarning`.
fn validate_deprecation_warning(version: &Value, path: &str) -> Vec<Cause> {
    let Some(warning) = version.get("deprecationWarning").and_then(Value::as_str) else {
        return Vec::new();
    };
    let deprecated = version.get("deprecated").and_then(Value::as_bool) == Some(true);
    let mut errs = Vec::new();
    if !deprecated {
        errs.push("can only be set for deprecated versions".to_string());
    } else {
        if warning.len() > MAX_DEPRECATION_WARNING {
            errs.push(format!(
                "must be <= {MAX_DEPRECATION_WARNING} characters long"
            ));
        }
        if warning.is_empty() {
            errs.push("must not be an empty string".to_string());
        }
        if let Some((i, _)) = warning.char_indices().find(|(_, c)| !is_print(*c)) {
            errs.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
        }
    }
    // The bad value is the `*string`, printed as JSON.
    let field = child(path, "deprecationWarning");
    errs.iter()
        .map(|e| invalid_rendered(&field, &go_json_string(warning), e))
        .collect()
}

/// A `CustomResourceValidation` at `path` (`spec.validation` or `spec.versions[i].schema`):
/// the root limits of the status subresource, then the structural schema rules and CEL.
fn validate_schema(
    validation: &Value,
    path: &str,
    status_enabled: bool,
    registry: &Registry,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(s) = validation.get("openAPIV3Schema").filter(|s| !s.is_null()) else {
        return causes;
    };
    let schema_path = child(path, "openAPIV3Schema");
    if status_enabled {
        causes.extend(validate_root_for_status(s, &schema_path));
    }
    let structural = schema::check_structural(s, &schema_path);
    if structural.is_empty() {
        // CEL rules compile, sit where they can, and stay within the cost budget.
        causes.extend(crate::validation::cel::check_schema_with(
            s,
            &schema_path,
            registry.cel_cache(),
        ));
    }
    causes.extend(structural);
    causes
}

/// Upstream's `validatePreserveUnknownFields`: v1 refuses `preserveUnknownFields: true`
/// unless the stored CRD already had it.
fn validate_preserve_unknown_fields(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let set = |c: &Value| {
        meta::path(c, "spec.preserveUnknownFields").and_then(Value::as_bool) == Some(true)
    };
    if old.is_some_and(set) || !set(obj) {
        return Vec::new();
    }
    vec![Cause::invalid(
        "spec.preserveUnknownFields",
        &json!(true),
        "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
    )]
}

/// Upstream's `validateCustomResourceConversion` (paths as upstream reports them, in the
/// internal type's terms: `spec.conversion.webhookClientConfig`); `require_recognized`: the
/// review versions must include one the server speaks.
fn validate_conversion(obj: &Value, require_recognized: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(conversion) = meta::path(obj, "spec.conversion") else {
        return causes;
    };
    let strategy = str_of(conversion, "strategy");
    let client_config = meta::path(conversion, "webhook.clientConfig");
    let review_versions = meta::strings(meta::path(conversion, "webhook.conversionReviewVersions"));
    match strategy {
        "Webhook" => {
            let path = "spec.conversion.webhookClientConfig";
            match client_config {
                None => causes.push(Cause::required(
                    path,
                    "required when strategy is set to Webhook",
                )),
                Some(config) => crate::kinds::admissionregistration::validate_client_config(
                    &mut causes,
                    Some(config),
                    path,
                ),
            }
            let versions: Vec<&str> = review_versions.iter().map(String::as_str).collect();
            crate::kinds::admissionregistration::validate_review_versions(
                &mut causes,
                &versions,
                "spec.conversion.conversionReviewVersions",
                require_recognized,
            );
        }
        "None" => {
            if client_config.is_some() {
                causes.push(Cause::forbidden(
                    "spec.conversion.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !review_versions.is_empty() {
                causes.push(Cause::forbidden(
                    "spec.conversion.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        other => causes.push(Cause::not_supported(
            "spec.conversion.strategy",
            &json!(other),
            &[json!("None"), json!("Webhook")],
        )),
    }
    causes
}

/// Upstream's `ValidateCustomResourceDefinitionStoredVersions`: at least one stored version,
/// the storage version among them, and each of them still in `spec.versions`.
fn validate_stored_versions(stored: Option<&Value>, spec: &InternalSpec<'_>) -> Vec<Cause> {
    let path = "status.storedVersions";
    let list = meta::strings(stored);
    let rendered = stored.map_or("null".to_string(), go_json_value);
    if list.is_empty() {
        return vec![invalid_rendered(
            path,
            &rendered,
            "must have at least one stored version",
        )];
    }
    let mut causes = Vec::new();
    for v in &spec.versions {
        let name = str_of(v, "name");
        if v.get("storage").and_then(Value::as_bool) == Some(true)
            && !list.iter().any(|s| s == name)
        {
            causes.push(invalid_rendered(
                path,
                &rendered,
                &format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, s) in list.iter().enumerate() {
        if !spec.versions.iter().any(|v| str_of(v, "name") == s) {
            causes.push(Cause::invalid(
                index(path, i),
                &json!(s),
                &format!("missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"),
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests;
