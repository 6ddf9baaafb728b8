//! `resource.k8s.io/v1` (dynamic resource allocation): DeviceClasses, ResourceClaims,
//! ResourceClaimTemplates and ResourceSlices, stored with upstream's defaults and validation
//! (see [`validation`], [`cel`] for device selectors, [`slice`] for devices, [`status`] for
//! claim status). Nothing allocates devices: claims stay pending unless a client writes their
//! status.

mod cel;
mod slice;
mod status;
mod validation;

pub(crate) use cel::device_selected;

use k8s_openapi::api::resource::v1 as api;
use serde_json::{Map, Value, json};

use super::KindDef;
use super::lists::{APPLY_CONDITIONS, FINALIZERS, ListAt, ListRule, OWNER_REFERENCES};
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::meta;

const GROUP: &str = "resource.k8s.io";

/// ResourceClaim `status.reservedFor`, keyed by the consumer's `uid`, and `status.devices`,
/// keyed (for server-side apply only) by driver, device, pool and the optional share id, each
/// with its conditions keyed by `type` (applies only).
const CLAIM_LISTS: &[ListAt] = &[
    ListAt {
        path: "status.reservedFor",
        rule: ListRule::keyed(&["uid"]),
    },
    ListAt {
        path: "status.devices",
        rule: ListRule::ApplyMap {
            keys: &["driver", "device", "pool", "shareID"],
        },
    },
    ListAt {
        path: "status.devices.conditions",
        rule: APPLY_CONDITIONS,
    },
];

/// ResourceClaimTemplate: the metadata lists of the claim it describes (`spec.metadata`).
const CLAIM_TEMPLATE_LISTS: &[ListAt] = &[
    ListAt {
        path: "spec.metadata.finalizers",
        rule: FINALIZERS,
    },
    ListAt {
        path: "spec.metadata.ownerReferences",
        rule: OWNER_REFERENCES,
    },
];

/// The kinds of `resource.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(GROUP, "v1", "deviceclasses", "DeviceClass", DeviceClasses)
            .schema::<api::DeviceClass>()
            .cluster_scoped()
            .generation()
            .printer(AGE_ONLY),
        KindDef::new(GROUP, "v1", "resourceclaims", "ResourceClaim", Claims)
            .lists(CLAIM_LISTS)
            .schema::<api::ResourceClaim>()
            .status()
            .printer(CLAIMS),
        KindDef::new(
            GROUP,
            "v1",
            "resourceclaimtemplates",
            "ResourceClaimTemplate",
            Templates,
        )
        .schema::<api::ResourceClaimTemplate>()
        .lists(CLAIM_TEMPLATE_LISTS)
        .printer(AGE_ONLY),
        KindDef::new(GROUP, "v1", "resourceslices", "ResourceSlice", Slices)
            .schema::<api::ResourceSlice>()
            .cluster_scoped()
            .generation()
            .fields(&["spec.nodeName", "spec.driver"])
            .printer(SLICES),
    ]
}

/// Upstream's defaults of a device request (`ExactDeviceRequest`, `DeviceSubRequest`): one
/// device (`ExactCount` of 1), tolerations with the `Equal` operator.
fn default_request(request: &mut Map<String, Value>) {
    let mode = request
        .get("allocationMode")
        .and_then(Value::as_str)
        .unwrap_or("");
    if mode.is_empty() {
        request.insert("allocationMode".into(), json!("ExactCount"));
    }
    let exact = request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount");
    let no_count = request
        .get("count")
        .is_none_or(|c| c.is_null() || c.as_i64() == Some(0));
    if exact && no_count {
        request.insert("count".into(), json!(1));
    }
    if let Some(tolerations) = request.get_mut("tolerations").and_then(Value::as_array_mut) {
        for toleration in tolerations.iter_mut().filter_map(Value::as_object_mut) {
            let empty = toleration
                .get("operator")
                .is_none_or(|o| o.as_str().is_none_or(str::is_empty));
            if empty {
                toleration.insert("operator".into(), json!("Equal"));
            }
        }
    }
}

/// The defaults of a claim spec's requests.
fn default_claim_spec(spec: Option<&mut Value>) {
    let Some(requests) = spec
        .and_then(|s| s.pointer_mut("/devices/requests"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for request in requests.iter_mut() {
        if let Some(exactly) = request.get_mut("exactly").and_then(Value::as_object_mut) {
            default_request(exactly);
        }
        if let Some(subs) = request
            .get_mut("firstAvailable")
            .and_then(Value::as_array_mut)
        {
            for sub in subs.iter_mut().filter_map(Value::as_object_mut) {
                default_request(sub);
            }
        }
    }
}

/// DeviceClasses.
#[derive(Debug, Clone, Copy)]
struct DeviceClasses;

impl Strategy for DeviceClasses {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::class_spec(obj.get("spec").unwrap_or(&Value::Null), None)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::class_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            Some(old.get("spec").unwrap_or(&Value::Null)),
        )
    }
}

/// ResourceClaims: the spec is immutable; the status (allocation, reservations) is written by
/// schedulers and drivers through `/status`.
#[derive(Debug, Clone, Copy)]
struct Claims;

impl Strategy for Claims {
    fn default(&self, obj: &mut Value) {
        default_claim_spec(obj.get_mut("spec"));
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::claim_spec(obj.get("spec").unwrap_or(&Value::Null), "spec")
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        match ctx.subresource {
            Some("status") => status::claim_status(obj, old),
            _ => validation::immutable_spec(obj, old),
        }
    }
}

/// ResourceClaimTemplates: immutable once created.
#[derive(Debug, Clone, Copy)]
struct Templates;

impl Strategy for Templates {
    fn default(&self, obj: &mut Value) {
        default_claim_spec(obj.get_mut("spec").and_then(|s| s.get_mut("spec")));
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::template_spec(obj.get("spec").unwrap_or(&Value::Null))
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::immutable_spec(obj, old)
    }
}

/// ResourceSlices: a driver's devices in one pool, for one node or a set of nodes.
#[derive(Debug, Clone, Copy)]
struct Slices;

impl Strategy for Slices {
    /// Taints get the time they were added (upstream's `SetDefaults_DeviceTaint`).
    fn default(&self, obj: &mut Value) {
        let Some(devices) = obj
            .pointer_mut("/spec/devices")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        for device in devices.iter_mut() {
            let Some(taints) = device.get_mut("taints").and_then(Value::as_array_mut) else {
                continue;
            };
            for taint in taints.iter_mut().filter_map(Value::as_object_mut) {
                if taint.get("timeAdded").is_none_or(Value::is_null) {
                    taint.insert("timeAdded".into(), json!(meta::now_rfc3339()));
                }
            }
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::slice_spec(obj.get("spec").unwrap_or(&Value::Null), None)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::slice_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            Some(old.get("spec").unwrap_or(&Value::Null)),
        )
    }
}

/// `NAME AGE` (DeviceClasses, ResourceClaimTemplates).
const AGE_ONLY: Printer = Printer {
    columns: &[AGE],
    cells: |obj| vec![age(obj)],
};

/// Upstream's `resourceClaimState`: `deleted`, `pending` or `allocated` (and `reserved`).
fn claim_state(obj: &Value) -> String {
    let deleting = meta::is_deleting(obj);
    let mut states = Vec::new();
    if deleting {
        states.push("deleted");
    }
    match meta::path(obj, "status.allocation").filter(|a| !a.is_null()) {
        None if !deleting => states.push("pending"),
        None => {}
        Some(_) => {
            states.push("allocated");
            let reserved = meta::path(obj, "status.reservedFor")
                .and_then(Value::as_array)
                .is_some_and(|r| !r.is_empty());
            if reserved {
                states.push("reserved");
            }
        }
    }
    states.join(",")
}

/// `NAME STATE AGE`, as upstream's `printResourceClaim`.
const CLAIMS: Printer = Printer {
    columns: &[
        Column::new(
            "State",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(claim_state(obj)), age(obj)],
};

/// `NAME NODE DRIVER POOL AGE`, as upstream's `printResourceSlice`.
const SLICES: Printer = Printer {
    columns: &[
        Column::new(
            "Node",
            "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.",
        ),
        Column::new(
            "Driver",
            "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.",
        ),
        Column::new(
            "Pool",
            "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.",
        ),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(text(obj, "spec.nodeName")),
            json!(text(obj, "spec.driver")),
            json!(text(obj, "spec.pool.name")),
            age(obj),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_default_to_one_device() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k"}]}},
            {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "c", "allocationMode": "All"}]},
        ]}}});
        Claims.default(&mut claim);
        let requests = &claim["spec"]["devices"]["requests"];
        assert_eq!(requests[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(requests[0]["exactly"]["count"], 1);
        assert_eq!(
            requests[0]["exactly"]["tolerations"][0]["operator"],
            "Equal"
        );
        assert_eq!(requests[1]["firstAvailable"][0]["allocationMode"], "All");
        assert!(requests[1]["firstAvailable"][0].get("count").is_none());
    }

    #[test]
    fn claim_states_as_upstream() {
        assert_eq!(claim_state(&json!({})), "pending");
        let allocated = json!({"status": {"allocation": {}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(claim_state(&allocated), "allocated,reserved");
        let deleted = json!({"metadata": {"deletionTimestamp": "2020-01-01T00:00:00Z"}});
        assert_eq!(claim_state(&deleted), "deleted");
    }
}
