//! Keeping the bootstrap configuration at start, as upstream's APF configuration producer
//! (`pkg/registry/flowcontrol/ensurer`) and consumer do: a missing mandatory or suggested object
//! is created; a mandatory one gets its spec and `apf.kubernetes.io/autoupdate-spec: "true"`
//! back; a suggested one gets its spec back while the annotation says `true` (or, without a
//! readable annotation, while its generation is 1, and the annotation is then written); an
//! object annotated `true` that is no longer part of the configuration is deleted. Then the
//! bootstrap FlowSchemas get the `Dangling` condition the APF controller writes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::bootstrap::{self, Bootstrap, Class};
use super::{AUTO_UPDATE, GROUP};
use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, ListOptions, Objects, Part, PatchBody, WriteOptions};
use crate::patch::PatchType;
use crate::registry::ResourceInfo;

/// The field manager of the objects' writes (upstream's producer).
const PRODUCER: &str = "api-priority-and-fairness-config-producer-v1";

/// The field manager of the FlowSchemas' status writes (upstream's APF controller).
const CONSUMER: &str = "api-priority-and-fairness-config-consumer-v1";

/// Ensures the bootstrap configuration in `objects` (a no-op when the group is not served).
pub(crate) async fn ensure_configuration(objects: &Objects) -> Result<(), ApiError> {
    let registry = objects.registry();
    let (Some(levels), Some(schemas)) = (
        registry.get(GROUP, "v1", "prioritylevelconfigurations"),
        registry.get(GROUP, "v1", "flowschemas"),
    ) else {
        return Ok(());
    };
    // Upstream's order: the suggested configuration, then the mandatory one.
    for class in [Class::Suggested, Class::Mandatory] {
        for boot in bootstrap::priority_levels(class) {
            ensure_one(objects, &levels, &boot).await?;
        }
        for boot in bootstrap::flow_schemas(class) {
            ensure_one(objects, &schemas, &boot).await?;
        }
    }
    let wanted = |list: Vec<Bootstrap>, more: Vec<Bootstrap>| -> Vec<&'static str> {
        list.into_iter().chain(more).map(|b| b.name).collect()
    };
    let schema_names = wanted(
        bootstrap::flow_schemas(Class::Mandatory),
        bootstrap::flow_schemas(Class::Suggested),
    );
    let level_names = wanted(
        bootstrap::priority_levels(Class::Mandatory),
        bootstrap::priority_levels(Class::Suggested),
    );
    remove_unwanted(objects, &schemas, &schema_names).await?;
    remove_unwanted(objects, &levels, &level_names).await?;
    for name in schema_names {
        write_dangling(objects, &schemas, &levels, name).await?;
    }
    Ok(())
}

/// The server's own write options, under `manager`.
fn options(manager: &str) -> WriteOptions {
    WriteOptions {
        field_manager: Some(manager.to_string()),
        ..WriteOptions::default()
    }
}

/// Creates `boot` when missing, else revises it when its class says so. A concurrent write
/// (409) is left for the next start, as upstream leaves it for its next pass.
async fn ensure_one(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    boot: &Bootstrap,
) -> Result<(), ApiError> {
    let result = match objects.get(info, None, boot.name) {
        Err(e) if e.code == 404 => {
            let obj = json!({
                "apiVersion": format!("{GROUP}/v1"),
                "kind": info.kind,
                "metadata": {"name": boot.name, "annotations": {AUTO_UPDATE: "true"}},
                "spec": boot.spec,
            });
            objects
                .create(info, None, obj, &options(PRODUCER))
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
        Ok(current) => match revise(&current, boot) {
            Some(revised) => objects
                .update(
                    info,
                    None,
                    boot.name,
                    revised,
                    Part::Main,
                    &options(PRODUCER),
                )
                .await
                .map(|_| ()),
            None => Ok(()),
        },
    };
    match result {
        Err(e) if e.code == 409 => Ok(()),
        other => other,
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// The object's auto-update annotation, parsed (`None` when missing or not a boolean).
fn auto_update(obj: &Value) -> Option<bool> {
    meta::path(obj, "metadata.annotations")
        .and_then(|a| a.get(AUTO_UPDATE))
        .and_then(Value::as_str)
        .and_then(parse_bool)
}

/// Upstream's `ReviseIfNeeded`: the object to write back, when its annotation or its spec
/// must change.
fn revise(current: &Value, boot: &Bootstrap) -> Option<Value> {
    let auto = match boot.class {
        Class::Mandatory => true,
        Class::Suggested => auto_update(current)
            .unwrap_or_else(|| meta::path(current, "metadata.generation") == Some(&json!(1))),
    };
    let annotate = auto_update(current) != Some(auto);
    let respec = auto && !spec_equalish(boot, current);
    if !annotate && !respec {
        return None;
    }
    let mut revised = current.clone();
    if respec {
        revised["spec"] = boot.spec.clone();
    }
    if annotate {
        let metadata = revised.get_mut("metadata")?.as_object_mut()?;
        let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[AUTO_UPDATE] = json!(auto.to_string());
    }
    Some(revised)
}

/// The value as Go's semantic equality sees it: null members, empty lists and maps and false
/// flags are the zero values Go omits.
fn zeroless(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), zeroless(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(zeroless).collect()),
        other => other.clone(),
    }
}

/// Whether a member is one Go omits.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// Upstream's `SpecEqualish`: the stored spec equals the bootstrap one, but for the exempt
/// level's `exempt` settings, which an administrator may tune.
fn spec_equalish(boot: &Bootstrap, current: &Value) -> bool {
    let have = zeroless(current.get("spec").unwrap_or(&Value::Null));
    let mut want = boot.spec.clone();
    if boot.resource == "prioritylevelconfigurations" && boot.name == "exempt" {
        let Some(exempt) = current.pointer("/spec/exempt").filter(|e| e.is_object()) else {
            return false;
        };
        for field in ["nominalConcurrencyShares", "lendablePercent"] {
            want["exempt"][field] = exempt.get(field).cloned().unwrap_or(Value::Null);
        }
    }
    zeroless(&want) == have
}

/// Upstream's `RemoveUnwantedObjects`: deletes the objects annotated auto-update `true` whose
/// names are not in `wanted`.
async fn remove_unwanted(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    wanted: &[&str],
) -> Result<(), ApiError> {
    let page = objects.list(info, None, &ListOptions::default())?;
    for obj in page.items {
        let name = meta::name(&obj);
        if wanted.contains(&name) || auto_update(&obj) != Some(true) {
            continue;
        }
        match objects
            .delete(info, None, name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The `Dangling` condition upstream's APF controller gives a FlowSchema: whether the
/// priority level it names exists.
pub(super) fn dangling_condition(level: &str, exists: bool) -> Value {
    let (status, reason, message) = if exists {
        (
            "False",
            "Found",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"
            ),
        )
    } else {
        (
            "True",
            "NotFound",
            format!(
                "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" but there is no such object"
            ),
        )
    };
    json!({
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": meta::now_rfc3339(),
        "reason": reason,
        "message": message,
    })
}

/// Applies the FlowSchema's `Dangling` condition through `/status` when its status, reason or
/// message differ from what the controller would write (so a restart leaves a right one, and
/// its time, alone).
async fn write_dangling(
    objects: &Objects,
    schemas: &Arc<ResourceInfo>,
    levels: &Arc<ResourceInfo>,
    name: &str,
) -> Result<(), ApiError> {
    let Ok(current) = objects.get(schemas, None, name) else {
        return Ok(());
    };
    let level = meta::path(&current, "spec.priorityLevelConfiguration.name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let exists = objects.get(levels, None, level).is_ok();
    let wanted = dangling_condition(level, exists);
    let conditions: Vec<Value> = meta::path(&current, "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let same = |c: &Value| {
        ["status", "reason", "message"]
            .iter()
            .all(|f| c.get(f) == wanted.get(f))
    };
    let position = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"));
    if position.is_some_and(|i| same(&conditions[i])) {
        return Ok(());
    }
    // As the controller: a forced server-side apply of the one condition it owns.
    let apply = json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "FlowSchema",
        "metadata": {"name": name},
        "status": {"conditions": [wanted]},
    });
    let body = PatchBody {
        kind: PatchType::Apply,
        bytes: apply.to_string().into_bytes(),
    };
    let opts = WriteOptions {
        force: true,
        ..options(CONSUMER)
    };
    match objects
        .patch(schemas, None, name, body, Part::Status, &opts)
        .await
    {
        Err(e) if e.code == 409 || e.code == 404 => Ok(()),
        other => other.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suggested(name: &str) -> Bootstrap {
        bootstrap::flow_schemas(Class::Suggested)
            .into_iter()
            .find(|b| b.name == name)
            .expect("bootstrap schema")
    }

    fn stored(boot: &Bootstrap, annotation: Option<&str>, generation: i64) -> Value {
        let mut obj = json!({"metadata": {"name": boot.name, "generation": generation},
            "spec": boot.spec});
        if let Some(value) = annotation {
            obj["metadata"]["annotations"] = json!({AUTO_UPDATE: value});
        }
        obj
    }

    #[test]
    fn suggested_objects_follow_their_annotation() {
        let boot = suggested("service-accounts");
        assert_eq!(revise(&stored(&boot, Some("true"), 3), &boot), None);
        let mut drifted = stored(&boot, Some("true"), 2);
        drifted["spec"]["matchingPrecedence"] = json!(7000);
        let revised = revise(&drifted, &boot).expect("restored");
        assert_eq!(revised["spec"], boot.spec);
        let mut kept = stored(&boot, Some("false"), 2);
        kept["spec"]["matchingPrecedence"] = json!(7000);
        assert_eq!(revise(&kept, &boot), None, "the user's spec is kept");
        // Without a readable annotation: generation 1 is taken as untouched, and annotated.
        let untouched = stored(&boot, Some("maybe"), 1);
        let revised = revise(&untouched, &boot).expect("annotated");
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE], "true");
        let mut edited = stored(&boot, None, 2);
        edited["spec"]["matchingPrecedence"] = json!(7000);
        let revised = revise(&edited, &boot).expect("annotated");
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE], "false");
        assert_eq!(revised["spec"]["matchingPrecedence"], 7000);
        // Go's booleans: "True" and "1" are true.
        assert_eq!(revise(&stored(&boot, Some("1"), 2), &boot), None);
    }

    #[test]
    fn mandatory_objects_are_always_restored() {
        let boot = bootstrap::flow_schemas(Class::Mandatory)
            .into_iter()
            .find(|b| b.name == "catch-all")
            .expect("catch-all");
        let mut changed = stored(&boot, Some("false"), 4);
        changed["spec"]["distinguisherMethod"] = json!({"type": "ByNamespace"});
        let revised = revise(&changed, &boot).expect("restored");
        assert_eq!(revised["spec"], boot.spec);
        assert_eq!(revised["metadata"]["annotations"][AUTO_UPDATE], "true");

        let exempt = bootstrap::priority_levels(Class::Mandatory)
            .into_iter()
            .find(|b| b.name == "exempt")
            .expect("exempt");
        let mut tuned = stored(&exempt, Some("true"), 2);
        tuned["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
        assert_eq!(revise(&tuned, &exempt), None, "exempt settings are kept");
    }

    #[test]
    fn go_zero_values_compare_equal() {
        let boot = suggested("probes");
        let mut current = stored(&boot, Some("true"), 1);
        current["spec"]["distinguisherMethod"] = Value::Null;
        current["spec"]["rules"][0]["resourceRules"] = json!([]);
        assert!(spec_equalish(&boot, &current));
        current["spec"]["rules"][0]["nonResourceRules"][0]["verbs"] = json!(["*"]);
        assert!(!spec_equalish(&boot, &current));
    }

    #[test]
    fn dangling_as_the_controller_words_it() {
        assert_eq!(dangling_condition("x", false)["reason"], "NotFound");
        assert_eq!(
            dangling_condition("x", false)["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"x\" but there is no such object"
        );
        assert_eq!(dangling_condition("x", true)["status"], "False");
    }
}
