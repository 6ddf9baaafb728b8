//! The pod spec, shared by Pods and every pod template (Deployments, Jobs, …): its quantities
//! in canonical form and upstream's `ValidatePodSpec` essentials, with upstream's messages and
//! field paths, under any base path (`spec`, `spec.template.spec`).

use serde_json::Value;

use crate::quantity::{self, QuantityError};

/// The container lists of a pod spec, in upstream's validation order.
pub(crate) const CONTAINER_LISTS: [&str; 3] =
    ["containers", "initContainers", "ephemeralContainers"];

/// Rewrites every quantity of a pod spec in canonical form: container requests and limits,
/// pod-level resources, overhead, `emptyDir.sizeLimit` and ephemeral volume claim templates.
pub(crate) fn canonicalize_pod_spec(spec: &mut Value) -> Result<(), QuantityError> {
    for list in CONTAINER_LISTS {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                canonicalize_requirements(c.get_mut("resources"))?;
            }
        }
    }
    canonicalize_requirements(spec.get_mut("resources"))?;
    if let Some(overhead) = spec.get_mut("overhead") {
        quantity::canonicalize_resource_list(overhead)?;
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes {
            if let Some(limit) = v.get_mut("emptyDir").and_then(|e| e.get_mut("sizeLimit")) {
                quantity::canonicalize_value(limit)?;
            }
            let claim = v
                .get_mut("ephemeral")
                .and_then(|e| e.get_mut("volumeClaimTemplate"))
                .and_then(|t| t.get_mut("spec"))
                .and_then(|s| s.get_mut("resources"));
            canonicalize_requirements(claim)?;
        }
    }
    Ok(())
}

/// Canonicalizes the `limits` and `requests` of a resource requirements object.
fn canonicalize_requirements(resources: Option<&mut Value>) -> Result<(), QuantityError> {
    let Some(resources) = resources else {
        return Ok(());
    };
    for key in ["limits", "requests"] {
        if let Some(list) = resources.get_mut(key) {
            quantity::canonicalize_resource_list(list)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_quantity_of_a_pod_spec_is_canonicalized() {
        let mut spec = json!({
            "containers": [{"name": "c", "resources": {
                "limits": {"cpu": "1000m", "memory": "1.5Gi"},
                "requests": {"cpu": 0.5, "memory": "1024Mi", "ephemeral-storage": "2G"}
            }}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "0.1"}}}],
            "overhead": {"cpu": "0.25"},
            "resources": {"limits": {"memory": "2048Mi"}},
            "volumes": [
                {"name": "e", "emptyDir": {"sizeLimit": "1000Mi"}},
                {"name": "x", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "resources": {"requests": {"storage": "1024Gi"}}}}}}
            ]
        });
        canonicalize_pod_spec(&mut spec).expect("valid");
        assert_eq!(
            spec["containers"][0]["resources"],
            json!({"limits": {"cpu": "1", "memory": "1536Mi"},
                   "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2G"}})
        );
        assert_eq!(
            spec["initContainers"][0]["resources"]["requests"]["cpu"],
            "100m"
        );
        assert_eq!(spec["overhead"]["cpu"], "250m");
        assert_eq!(spec["resources"]["limits"]["memory"], "2Gi");
        assert_eq!(spec["volumes"][0]["emptyDir"]["sizeLimit"], "1000Mi");
        assert_eq!(
            spec["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]
                ["storage"],
            "1Ti"
        );
        let mut bad = json!({"containers": [{"resources": {"limits": {"cpu": "one"}}}]});
        assert_eq!(canonicalize_pod_spec(&mut bad), Err(QuantityError::Format));
    }
}
