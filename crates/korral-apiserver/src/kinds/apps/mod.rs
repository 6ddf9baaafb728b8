//! `apps/v1`: Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions.

use k8s_openapi::api::apps::v1 as api;

use serde_json::{Value, json};

mod revision;
mod validation;

use super::KindDef;
use super::lists::{CONDITIONS, DirectiveAt, FINALIZERS, ListAt, OWNER_REFERENCES, PatchDirective};
use super::printer::{
    AGE, CONTAINERS, Column, IMAGES, Printer, age, int, or_none, selector_at, template_containers,
};
use crate::meta;
use validation::{Workload, WorkloadStrategy};

/// StatefulSet: the metadata and status lists of its volume claim templates (whole PVCs).
const STATEFUL_SET_LISTS: &[ListAt] = &[
    ListAt {
        path: "spec.volumeClaimTemplates.metadata.finalizers",
        rule: FINALIZERS,
    },
    ListAt {
        path: "spec.volumeClaimTemplates.metadata.ownerReferences",
        rule: OWNER_REFERENCES,
    },
    ListAt {
        path: "spec.volumeClaimTemplates.status.conditions",
        rule: CONDITIONS,
    },
];

/// The kinds of `apps/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            WorkloadStrategy(Workload::Deployment),
        )
        .schema::<api::Deployment>()
        .pod_spec("spec.template.spec")
        // `DeploymentSpec.strategy` is `+patchStrategy=retainKeys`.
        .patch_directives(&[DirectiveAt {
            path: "spec.strategy",
            directive: PatchDirective::RetainKeys,
        }])
        .short(&["deploy"])
        .printer(DEPLOYMENTS)
        .in_all()
        .status()
        .scale()
        .generation(),
        KindDef::new(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            WorkloadStrategy(Workload::ReplicaSet),
        )
        .schema::<api::ReplicaSet>()
        .pod_spec("spec.template.spec")
        .short(&["rs"])
        .printer(REPLICASETS)
        .in_all()
        .status()
        .scale()
        .generation()
        .fields(&["status.replicas"]),
        KindDef::new(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            WorkloadStrategy(Workload::StatefulSet),
        )
        .schema::<api::StatefulSet>()
        .lists(STATEFUL_SET_LISTS)
        .pod_spec("spec.template.spec")
        .short(&["sts"])
        .printer(STATEFULSETS)
        .in_all()
        .status()
        .scale()
        .generation(),
        KindDef::new(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            WorkloadStrategy(Workload::DaemonSet),
        )
        .schema::<api::DaemonSet>()
        .pod_spec("spec.template.spec")
        .short(&["ds"])
        .printer(DAEMONSETS)
        .in_all()
        .status()
        .generation(),
        KindDef::new(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            revision::RevisionStrategy,
        )
        .schema::<api::ControllerRevision>()
        .printer(revision::REVISIONS),
    ]
}

const READY: Column = Column::new("Ready", "Number of the pod with ready state");

/// `readyReplicas/spec.replicas`.
fn ready_of_desired(obj: &Value) -> Value {
    json!(format!(
        "{}/{}",
        int(obj, "status.readyReplicas"),
        int(obj, "spec.replicas")
    ))
}

/// The wide `Selector` of a workload: its `spec.selector`.
const SELECTOR: Column = Column::wide(
    "Selector",
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.",
);

const DEPLOYMENTS: Printer = Printer {
    columns: &[
        READY,
        Column::new(
            "Up-to-date",
            "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        ),
        Column::new(
            "Available",
            "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |obj| {
        let [containers, images] = template_containers(obj);
        vec![
            ready_of_desired(obj),
            json!(int(obj, "status.updatedReplicas")),
            json!(int(obj, "status.availableReplicas")),
            age(obj),
            containers,
            images,
            json!(selector_at(obj, "spec.selector")),
        ]
    },
};

const REPLICASETS: Printer = Printer {
    columns: &[
        Column::new(
            "Desired",
            "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        ),
        Column::new(
            "Current",
            "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
        ),
        Column::new(
            "Ready",
            "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |obj| {
        let [containers, images] = template_containers(obj);
        vec![
            json!(int(obj, "spec.replicas")),
            json!(int(obj, "status.replicas")),
            json!(int(obj, "status.readyReplicas")),
            age(obj),
            containers,
            images,
            json!(selector_at(obj, "spec.selector")),
        ]
    },
};

const STATEFULSETS: Printer = Printer {
    columns: &[READY, AGE, CONTAINERS, IMAGES],
    cells: |obj| {
        let [containers, images] = template_containers(obj);
        vec![ready_of_desired(obj), age(obj), containers, images]
    },
};

const DAEMONSETS: Printer = Printer {
    columns: &[
        Column::new(
            "Desired",
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        ),
        Column::new(
            "Current",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
        ),
        Column::new(
            "Ready",
            "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
        ),
        Column::new(
            "Up-to-date",
            "The total number of nodes that are running updated daemon pod",
        ),
        Column::new(
            "Available",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
        ),
        Column::new(
            "Node Selector",
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        Column::wide(
            "Selector",
            "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ],
    cells: |obj| {
        let [containers, images] = template_containers(obj);
        let node_selector: Vec<String> = meta::path(obj, "spec.template.spec.nodeSelector")
            .and_then(Value::as_object)
            .map(|m| {
                let mut pairs: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                    .collect();
                pairs.sort();
                pairs
            })
            .unwrap_or_default();
        vec![
            json!(int(obj, "status.desiredNumberScheduled")),
            json!(int(obj, "status.currentNumberScheduled")),
            json!(int(obj, "status.numberReady")),
            json!(int(obj, "status.updatedNumberScheduled")),
            json!(int(obj, "status.numberAvailable")),
            json!(or_none(&node_selector.join(","))),
            age(obj),
            containers,
            images,
            json!(selector_at(obj, "spec.selector")),
        ]
    },
};
