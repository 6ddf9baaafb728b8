//! The pod update subresources besides `status`: `ephemeralcontainers` (what `kubectl debug`
//! writes: only `spec.ephemeralContainers` changes, existing ones stay as they are) and
//! `resize` (in-place resize: only the cpu and memory resources and resize policies of the
//! containers change, the QoS class stays). Upstream's `podEphemeralContainersStrategy`,
//! `podResizeStrategy`, `ValidatePodEphemeralContainersUpdate` and `ValidatePodResize`.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::validation::names::{child, index};

/// `pods/ephemeralcontainers`.
pub(super) const EPHEMERAL_CONTAINERS: &str = "ephemeralcontainers";
/// `pods/resize`.
pub(super) const RESIZE: &str = "resize";

/// The annotation of static (mirror) pods, which support neither subresource.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

fn spec_list<'a>(obj: &'a Value, list: &str) -> &'a [Value] {
    crate::meta::path(obj, &format!("spec.{list}"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn name_of(c: &Value) -> &str {
    c.get("name").and_then(Value::as_str).unwrap_or("")
}

fn is_mirror(pod: &Value) -> bool {
    crate::meta::path(pod, "metadata.annotations")
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some()
}

/// `dropNonEphemeralContainerUpdates`: the stored pod with the written ephemeral containers.
pub(super) fn keep_ephemeral_containers_only(obj: &mut Value, old: &Value) {
    let written = crate::meta::path(obj, "spec.ephemeralContainers").cloned();
    let mut next = old.clone();
    if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
        match written {
            Some(list) => spec.insert("ephemeralContainers".into(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    *obj = next;
}

/// `dropNonResizeUpdates`: the stored pod with the written `resources` and `resizePolicy` of
/// its containers (and of its restartable init containers), matched by name.
pub(super) fn keep_resize_only(obj: &mut Value, old: &Value) {
    let mut next = old.clone();
    for (list, sidecars_only) in [("containers", false), ("initContainers", true)] {
        let written: Map<String, Value> = spec_list(obj, list)
            .iter()
            .map(|c| (name_of(c).to_string(), c.clone()))
            .collect();
        let Some(items) = next
            .get_mut("spec")
            .and_then(|s| s.get_mut(list))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in items.iter_mut() {
            let restartable = c.get("restartPolicy").and_then(Value::as_str) == Some("Always");
            if sidecars_only && !restartable {
                continue;
            }
            let Some(w) = written.get(name_of(c)) else {
                continue;
            };
            let Some(map) = c.as_object_mut() else {
                continue;
            };
            for field in ["resources", "resizePolicy"] {
                match w.get(field) {
                    Some(v) => map.insert(field.into(), v.clone()),
                    None => map.remove(field),
                };
            }
        }
    }
    *obj = next;
}

/// `ValidatePodEphemeralContainersUpdate` past the spec's own validation: no static pod, and
/// existing ephemeral containers neither removed nor changed.
pub(super) fn validate_ephemeral_containers_update(new: &Value, old: &Value) -> Vec<Cause> {
    if is_mirror(old) {
        return vec![Cause::forbidden(
            "",
            "static pods do not support ephemeral containers",
        )];
    }
    let path = "spec.ephemeralContainers";
    let written: Map<String, Value> = spec_list(new, "ephemeralContainers")
        .iter()
        .map(|c| (name_of(c).to_string(), c.clone()))
        .collect();
    let mut causes = Vec::new();
    for existing in spec_list(old, "ephemeralContainers") {
        let name = name_of(existing);
        match written.get(name) {
            None => causes.push(Cause::forbidden(
                path,
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            // Upstream appends a diff of its Go structs, which has no JSON counterpart.
            Some(now) if now != existing => causes.push(Cause::forbidden(
                path,
                &format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// `ValidatePodResize` past the spec's own validation: no static or Windows pod, the QoS class
/// kept, no request or limit removed, and nothing but cpu and memory changed.
pub(super) fn validate_resize(new: &Value, old: &Value) -> Vec<Cause> {
    if is_mirror(old) {
        return vec![Cause::forbidden("", "static pods cannot be resized")];
    }
    if crate::meta::path(old, "spec.os.name").and_then(Value::as_str) == Some("windows") {
        return vec![Cause::forbidden("spec", "windows pods cannot be resized")];
    }
    let mut causes = Vec::new();
    let empty = Map::new();
    let qos = |pod: &Value| {
        crate::defaults::pod_qos_class(pod.get("spec").and_then(Value::as_object).unwrap_or(&empty))
    };
    if qos(old) != qos(new) {
        let current = crate::meta::path(new, "status.qosClass")
            .cloned()
            .unwrap_or_else(|| json!(qos(old)));
        causes.push(Cause::invalid(
            "spec",
            &current,
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    for list in ["containers", "initContainers"] {
        for (i, (now, before)) in spec_list(new, list)
            .iter()
            .zip(spec_list(old, list))
            .enumerate()
        {
            for kind in ["requests", "limits"] {
                let names = |c: &Value| -> Vec<String> {
                    c.get("resources")
                        .and_then(|r| r.get(kind))
                        .and_then(Value::as_object)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default()
                };
                let kept = names(now);
                for name in names(before) {
                    if !kept.contains(&name) {
                        let at = child(
                            &child(&child(&index(&child("spec", list), i), "resources"), kind),
                            &name,
                        );
                        causes.push(Cause::forbidden(
                            at,
                            &format!("resource {kind} cannot be removed"),
                        ));
                    }
                }
            }
        }
    }
    if cpu_and_memory_set_back(new, old) != *old.get("spec").unwrap_or(&Value::Null) {
        causes.push(Cause::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
    causes
}

/// The new spec with the cpu and memory requests and limits and the resize policies of every
/// container set back to the old ones: what must then equal the old spec.
fn cpu_and_memory_set_back(new: &Value, old: &Value) -> Value {
    let mut spec = new.get("spec").cloned().unwrap_or(Value::Null);
    for list in ["containers", "initContainers"] {
        let olds = spec_list(old, list);
        let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (c, o) in items.iter_mut().zip(olds) {
            let Some(map) = c.as_object_mut() else {
                continue;
            };
            match o.get("resizePolicy") {
                Some(v) => map.insert("resizePolicy".into(), v.clone()),
                None => map.remove("resizePolicy"),
            };
            let mut resources = map.get("resources").cloned().unwrap_or_else(|| json!({}));
            for kind in ["requests", "limits"] {
                let mut values = resources
                    .get(kind)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                for res in ["cpu", "memory"] {
                    match o
                        .get("resources")
                        .and_then(|r| r.get(kind))
                        .and_then(|m| m.get(res))
                    {
                        Some(v) => values.insert(res.into(), v.clone()),
                        None => values.remove(res),
                    };
                }
                if let Some(r) = resources.as_object_mut() {
                    if values.is_empty() {
                        r.remove(kind);
                    } else {
                        r.insert(kind.into(), Value::Object(values));
                    }
                }
            }
            let old_had = o.get("resources").is_some();
            if resources.as_object().is_some_and(Map::is_empty) && !old_had {
                map.remove("resources");
            } else {
                map.insert("resources".into(), resources);
            }
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(containers: Value, ephemeral: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": {"containers": containers,
            "ephemeralContainers": ephemeral}, "status": {"phase": "Running"}})
    }

    #[test]
    fn only_ephemeral_containers_are_taken_from_the_write() {
        let old = pod(json!([{"name": "c", "image": "a"}]), json!([]));
        let mut written = pod(
            json!([{"name": "c", "image": "b"}]),
            json!([{"name": "debug", "image": "busybox"}]),
        );
        written["status"] = json!({});
        keep_ephemeral_containers_only(&mut written, &old);
        assert_eq!(written["spec"]["containers"][0]["image"], "a");
        assert_eq!(written["spec"]["ephemeralContainers"][0]["name"], "debug");
        assert_eq!(written["status"]["phase"], "Running");
    }

    #[test]
    fn existing_ephemeral_containers_stay() {
        let old = pod(json!([]), json!([{"name": "debug", "image": "busybox"}]));
        let removed = pod(json!([]), json!([]));
        let causes = validate_ephemeral_containers_update(&removed, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].message,
            "Forbidden: existing ephemeral containers \"debug\" may not be removed\n"
        );
        let changed = pod(json!([]), json!([{"name": "debug", "image": "alpine"}]));
        assert_eq!(
            validate_ephemeral_containers_update(&changed, &old)[0].message,
            "Forbidden: existing ephemeral containers \"debug\" may not be changed\n"
        );
    }

    #[test]
    fn resize_changes_cpu_and_memory_only_and_keeps_the_qos_class() {
        let res = |cpu: &str, mem: &str| json!({"requests": {"cpu": cpu, "memory": mem}, "limits": {"cpu": cpu, "memory": mem}});
        let old = pod(
            json!([{"name": "c", "image": "a", "resources": res("1", "1Gi")}]),
            json!([]),
        );
        let ok = pod(
            json!([{"name": "c", "image": "a", "resources": res("2", "2Gi")}]),
            json!([]),
        );
        assert!(validate_resize(&ok, &old).is_empty());
        // Requests below limits: Guaranteed would become Burstable.
        let mut burstable = ok.clone();
        burstable["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("1");
        let causes = validate_resize(&burstable, &old);
        assert_eq!(causes[0].field, "spec");
        assert!(
            causes[0]
                .message
                .ends_with("Pod QOS Class may not change as a result of resizing")
        );
        let mut storage = ok.clone();
        storage["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] = json!("1Gi");
        let causes = validate_resize(&storage, &old);
        assert!(
            causes
                .iter()
                .any(|c| c.message == "Forbidden: only cpu and memory resources are mutable"),
            "{causes:?}"
        );
        let mut removed = ok.clone();
        removed["spec"]["containers"][0]["resources"]["limits"]
            .as_object_mut()
            .expect("limits")
            .remove("memory");
        let causes = validate_resize(&removed, &old);
        assert!(
            causes
                .iter()
                .any(|c| c.field == "spec.containers[0].resources.limits.memory"
                    && c.message == "Forbidden: resource limits cannot be removed"),
            "{causes:?}"
        );
    }

    #[test]
    fn a_resize_write_keeps_everything_but_resources() {
        let old = pod(json!([{"name": "c", "image": "a"}]), json!([]));
        let mut written = pod(
            json!([{"name": "c", "image": "b", "resources": {"limits": {"cpu": "1"}}}]),
            json!([]),
        );
        keep_resize_only(&mut written, &old);
        assert_eq!(written["spec"]["containers"][0]["image"], "a");
        assert_eq!(
            written["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "1"}})
        );
    }
}
