//! OpenAPI documents describing the served resources, for kubectl and other clients.
//!
//! kubectl reads OpenAPI v3 (`/openapi/v3`, then `/openapi/v3/apis/<group>/<version>` or
//! `/openapi/v3/api/v1`) to decide whether the server supports server-side field validation
//! (the PATCH operation of the kind must declare a `fieldValidation` query parameter), to
//! compute client-side apply patches and for `kubectl explain`; it falls back to `/openapi/v2`.
//!
//! Custom resources are described by their CRD's `openAPIV3Schema` exactly as upstream's CRD
//! handler publishes them (model `org.example.ref.v1.Widget`). Built-in kinds get upstream's
//! schemas ([`crate::openapi_builtin`]) with their `x-kubernetes-group-version-kind`.
//!
//! As upstream, the PATCH operations of built-in kinds advertise
//! `application/strategic-merge-patch+json` and their schemas carry the patch strategies and
//! merge keys, from which kubectl computes client-side apply patches; custom resources do not
//! take strategic merge patches.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Map, Value, json};

use crate::registry::{Registry, ResourceInfo};

/// Package of the `meta/v1` models (`ObjectMeta`, `Status`, …).
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

/// `$ref` prefix of OpenAPI v3 documents.
const V3_REF: &str = "#/components/schemas/";

/// `$ref` prefix of Swagger 2.0 documents.
const V2_REF: &str = "#/definitions/";

/// Content types of request and response bodies.
const BODY_TYPES: &[&str] = &["application/json", "application/yaml"];

/// Patch content types advertised for custom resources.
const PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];

/// Patch content types advertised for built-in kinds: strategic merge patch too.
const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

const APIVERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The `meta/v1` models every group version document carries (as upstream's, in v3 form).
const META_SCHEMAS_JSON: &str = r##"{
  "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
    "description": "DeleteOptions may be provided when deleting an API object.",
    "type": "object",
    "properties": {
      "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
        "type": "string"
      },
      "dryRun": {
        "description": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
        "type": "array",
        "items": {
          "type": "string"
        },
        "x-kubernetes-list-type": "atomic"
      },
      "gracePeriodSeconds": {
        "description": "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.",
        "type": "integer",
        "format": "int64"
      },
      "ignoreStoreReadErrorWithClusterBreakingPotential": {
        "description": "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it",
        "type": "boolean"
      },
      "kind": {
        "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        "type": "string"
      },
      "orphanDependents": {
        "description": "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.",
        "type": "boolean"
      },
      "preconditions": {
        "description": "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict status will be returned.",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions"
          }
        ]
      },
      "propagationPolicy": {
        "description": "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.",
        "type": "string"
      }
    },
    "x-kubernetes-group-version-kind": []
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {
    "description": "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format.\n\nEach key is either a '.' representing the field itself, and will always map to an empty set, or a string representing a sub-field or item. The string will follow one of these four formats: 'f:<name>', where <name> is the name of a field in a struct, or key in a map 'v:<value>', where <value> is the exact json formatted value of a list item 'i:<index>', where <index> is position of a item in a list 'k:<keys>', where <keys> is a map of  a list item's key fields to their unique values If a key maps to an empty Fields value, the field that key represents is part of the set.\n\nThe exact format is defined in sigs.k8s.io/structured-merge-diff",
    "type": "object"
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": {
    "description": "ListMeta describes metadata that synthetic resources must have, including lists and various status objects. A resource may have only one of {ObjectMeta, ListMeta}.",
    "type": "object",
    "properties": {
      "continue": {
        "description": "continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available. The value is opaque and may be used to issue another request to the endpoint that served this list to retrieve the next set of available objects. Continuing a consistent list may not be possible if the server configuration has changed or more than a few minutes have passed. The resourceVersion field returned when using this continue value will be identical to the value in the first response, unless you have received this token from an error message.",
        "type": "string"
      },
      "remainingItemCount": {
        "description": "remainingItemCount is the number of subsequent items in the list which are not included in this list response. If the list request contained label or field selectors, then the number of remaining items is unknown and the field will be left unset and omitted during serialization. If the list is complete (either because it is not chunking or because this is the last chunk), then there are no more remaining items and this field will be left unset and omitted during serialization. Servers older than v1.15 do not set this field. The intended use of the remainingItemCount is *estimating* the size of a collection. Clients should not rely on the remainingItemCount to be set or to be exact.",
        "type": "integer",
        "format": "int64"
      },
      "resourceVersion": {
        "description": "String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed. Value must be treated as opaque by clients and passed unmodified back to the server. Populated by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency",
        "type": "string"
      },
      "selfLink": {
        "description": "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
        "type": "string"
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
    "description": "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.",
    "type": "object",
    "properties": {
      "apiVersion": {
        "description": "APIVersion defines the version of this resource that this field set applies to. The format is \"group/version\" just like the top-level APIVersion field. It is necessary to track the version of a field set because it cannot be automatically converted.",
        "type": "string"
      },
      "fieldsType": {
        "description": "FieldsType is the discriminator for the different fields format and version. There is currently only one possible value: \"FieldsV1\"",
        "type": "string"
      },
      "fieldsV1": {
        "description": "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type.",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
          }
        ]
      },
      "manager": {
        "description": "Manager is an identifier of the workflow managing these fields.",
        "type": "string"
      },
      "operation": {
        "description": "Operation is the type of operation which lead to this ManagedFieldsEntry being created. The only valid values for this field are 'Apply' and 'Update'.",
        "type": "string"
      },
      "subresource": {
        "description": "Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource. The value of this field is used to distinguish between managers, even if they share the same name. For example, a status update will be distinct from a regular update using the same manager name. Note that the APIVersion field is not related to the Subresource field and it always corresponds to the version of the main resource.",
        "type": "string"
      },
      "time": {
        "description": "Time is the timestamp of when the ManagedFields entry was added. The timestamp will also be updated if a field is added, the manager changes any of the owned fields value or removes a field. The timestamp does not update when a field is removed from the entry because another manager took it over.",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"
          }
        ]
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
    "description": "ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
    "type": "object",
    "properties": {
      "annotations": {
        "description": "Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata. They are not queryable and should be preserved when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations",
        "type": "object",
        "additionalProperties": {
          "type": "string"
        }
      },
      "creationTimestamp": {
        "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"
          }
        ]
      },
      "deletionGracePeriodSeconds": {
        "description": "Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set. May only be shortened. Read-only.",
        "type": "integer",
        "format": "int64"
      },
      "deletionTimestamp": {
        "description": "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. This field is set by the server when a graceful deletion is requested by the user, and is not directly settable by a client. The resource is expected to be deleted (no longer visible from resource lists, and not reachable by name) after the time in this field, once the finalizers list is empty. As long as the finalizers list contains items, deletion is blocked. Once the deletionTimestamp is set, this value may not be unset or be set further into the future, although it may be shortened or the resource may be deleted prior to this time. For example, a user may request that a pod is deleted in 30 seconds. The Kubelet will react by sending a graceful termination signal to the containers in the pod. After that 30 seconds, the Kubelet will send a hard termination signal (SIGKILL) to the container and after cleanup, remove the pod from the API. In the presence of network partitions, this object may still exist after this timestamp, until an administrator or automated process can determine the resource is fully terminated. If not set, graceful deletion of the object has not been requested.\n\nPopulated by the system when a graceful deletion is requested. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"
          }
        ]
      },
      "finalizers": {
        "description": "Must be empty before the object is deleted from the registry. Each entry is an identifier for the responsible component that will remove the entry from the list. If the deletionTimestamp of the object is non-nil, entries in this list can only be removed. Finalizers may be processed and removed in any order.  Order is NOT enforced because it introduces significant risk of stuck finalizers. finalizers is a shared field, any actor with permission can reorder it. If the finalizer list is processed in order, then this can lead to a situation in which the component responsible for the first finalizer in the list is waiting for a signal (field value, external system, or other) produced by a component responsible for a finalizer later in the list, resulting in a deadlock. Without enforced ordering finalizers are free to order amongst themselves and are not vulnerable to ordering changes in the list.",
        "type": "array",
        "items": {
          "type": "string"
        },
        "x-kubernetes-list-type": "set",
        "x-kubernetes-patch-strategy": "merge"
      },
      "generateName": {
        "description": "GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided. If this field is used, the name returned to the client will be different than the name passed. This value will also be combined with a unique suffix. The provided value has the same validation rules as the Name field, and may be truncated by the length of the suffix required to make the value unique on the server.\n\nIf this field is specified and the generated name exists, the server will return a 409.\n\nApplied only if Name is not specified. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency",
        "type": "string"
      },
      "generation": {
        "description": "A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.",
        "type": "integer",
        "format": "int64"
      },
      "labels": {
        "description": "Map of string keys and values that can be used to organize and categorize (scope and select) objects. May match selectors of replication controllers and services. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels",
        "type": "object",
        "additionalProperties": {
          "type": "string"
        }
      },
      "managedFields": {
        "description": "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow. This is mostly for internal housekeeping, and users typically shouldn't need to set or understand this field. A workflow can be the user's name, a controller's name, or the name of a specific apply path like \"ci-cd\". The set of fields is always in the version that the workflow used when modifying the object.",
        "type": "array",
        "items": {
          "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"
        },
        "x-kubernetes-list-type": "atomic"
      },
      "name": {
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "type": "string"
      },
      "namespace": {
        "description": "Namespace defines the space within which each name must be unique. An empty namespace is equivalent to the \"default\" namespace, but \"default\" is the canonical representation. Not all objects are required to be scoped to a namespace - the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces",
        "type": "string"
      },
      "ownerReferences": {
        "description": "List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected. If this object is managed by a controller, then an entry in this list will point to this controller, with the controller field set to true. There cannot be more than one managing controller.",
        "type": "array",
        "items": {
          "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"
        },
        "x-kubernetes-list-map-keys": [
          "uid"
        ],
        "x-kubernetes-list-type": "map",
        "x-kubernetes-patch-merge-key": "uid",
        "x-kubernetes-patch-strategy": "merge"
      },
      "resourceVersion": {
        "description": "An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. May be used for optimistic concurrency, change detection, and the watch operation on a resource or set of resources. Clients must treat these values as opaque and passed unmodified back to the server. They may only be valid for a particular resource or set of resources.\n\nPopulated by the system. Read-only. Value must be treated as opaque by clients and . More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency",
        "type": "string"
      },
      "selfLink": {
        "description": "Deprecated: selfLink is a legacy read-only field that is no longer populated by the system.",
        "type": "string"
      },
      "uid": {
        "description": "UID is the unique in time and space value for this object. It is typically generated by the server on successful creation of a resource and is not allowed to change on PUT operations.\n\nPopulated by the system. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids",
        "type": "string"
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {
    "description": "OwnerReference contains enough information to let you identify an owning object. An owning object must be in the same namespace as the dependent, or be cluster-scoped, so there is no namespace field.",
    "type": "object",
    "required": [
      "apiVersion",
      "kind",
      "name",
      "uid"
    ],
    "properties": {
      "apiVersion": {
        "description": "API version of the referent.",
        "type": "string",
        "default": ""
      },
      "blockOwnerDeletion": {
        "description": "If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed. See https://kubernetes.io/docs/concepts/architecture/garbage-collection/#foreground-deletion for how the garbage collector interacts with this field and enforces the foreground deletion. Defaults to false. To set this field, a user needs \"delete\" permission of the owner, otherwise 422 (Unprocessable Entity) will be returned.",
        "type": "boolean"
      },
      "controller": {
        "description": "If true, this reference points to the managing controller.",
        "type": "boolean"
      },
      "kind": {
        "description": "Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        "type": "string",
        "default": ""
      },
      "name": {
        "description": "Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "type": "string",
        "default": ""
      },
      "uid": {
        "description": "UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids",
        "type": "string",
        "default": ""
      }
    },
    "x-kubernetes-map-type": "atomic"
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {
    "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
    "type": "object"
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions": {
    "description": "Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.",
    "type": "object",
    "properties": {
      "resourceVersion": {
        "description": "Specifies the target ResourceVersion",
        "type": "string"
      },
      "uid": {
        "description": "Specifies the target UID.",
        "type": "string"
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Status": {
    "description": "Status is a return value for calls that don't return other objects.",
    "type": "object",
    "properties": {
      "apiVersion": {
        "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
        "type": "string"
      },
      "code": {
        "description": "Suggested HTTP return code for this status, 0 if not set.",
        "type": "integer",
        "format": "int32"
      },
      "details": {
        "description": "Extended data associated with the reason.  Each reason may define its own extended details. This field is optional and the data returned is not guaranteed to conform to any schema except that defined by the reason type.",
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails"
          }
        ]
      },
      "kind": {
        "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        "type": "string"
      },
      "message": {
        "description": "A human-readable description of the status of this operation.",
        "type": "string"
      },
      "metadata": {
        "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        "default": {},
        "allOf": [
          {
            "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
          }
        ]
      },
      "reason": {
        "description": "A machine-readable description of why this operation is in the \"Failure\" status. If this value is empty there is no information available. A Reason clarifies an HTTP status code but does not override it.",
        "type": "string"
      },
      "status": {
        "description": "Status of the operation. One of: \"Success\" or \"Failure\". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status",
        "type": "string"
      }
    },
    "x-kubernetes-group-version-kind": [
      {
        "group": "",
        "kind": "Status",
        "version": "v1"
      }
    ]
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause": {
    "description": "StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.",
    "type": "object",
    "properties": {
      "field": {
        "description": "The field of the resource that has caused this error, as named by its JSON serialization. May include dot and postfix notation for nested attributes. Arrays are zero-indexed.  Fields may appear more than once in an array of causes due to fields having multiple errors. Optional.\n\nExamples:\n  \"name\" - the field \"name\" on the current resource\n  \"items[0].name\" - the field \"name\" on the first array entry in \"items\"",
        "type": "string"
      },
      "message": {
        "description": "A human-readable description of the cause of the error.  This field may be presented as-is to a reader.",
        "type": "string"
      },
      "reason": {
        "description": "A machine-readable description of the cause of the error. If this value is empty there is no information available.",
        "type": "string"
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails": {
    "description": "StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response. The Reason field of a Status object defines what attributes will be set. Clients must ignore fields that do not match the defined type of each attribute, and should assume that any attribute may be empty, invalid, or under defined.",
    "type": "object",
    "properties": {
      "causes": {
        "description": "The Causes array includes more details associated with the StatusReason failure. Not all StatusReasons may provide detailed causes.",
        "type": "array",
        "items": {
          "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause"
        },
        "x-kubernetes-list-type": "atomic"
      },
      "group": {
        "description": "The group attribute of the resource associated with the status StatusReason.",
        "type": "string"
      },
      "kind": {
        "description": "The kind attribute of the resource associated with the status StatusReason. On some operations may differ from the requested resource Kind. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
        "type": "string"
      },
      "name": {
        "description": "The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described).",
        "type": "string"
      },
      "retryAfterSeconds": {
        "description": "If specified, the time in seconds before the operation should be retried. Some errors may indicate the client must take an alternate action - for those errors this field may indicate how long to wait before taking the alternate action.",
        "type": "integer",
        "format": "int32"
      },
      "uid": {
        "description": "UID of the resource. (when there is a single resource which can be described). More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids",
        "type": "string"
      }
    }
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {
    "description": "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON.  Wrappers are provided for many of the factory methods that the time package offers.",
    "type": "string",
    "format": "date-time"
  }
}"##;

/// The query and path parameters of the REST operations, with upstream's descriptions.
const PARAMETERS_JSON: &str = r##"{
  "allowWatchBookmarks": {
    "type": "boolean",
    "description": "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."
  },
  "continue": {
    "type": "string",
    "description": "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications."
  },
  "dryRun": {
    "type": "string",
    "description": "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed"
  },
  "fieldManager": {
    "type": "string",
    "description": "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint."
  },
  "fieldSelector": {
    "type": "string",
    "description": "A selector to restrict the list of returned objects by their fields. Defaults to everything."
  },
  "fieldValidation": {
    "type": "string",
    "description": "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered."
  },
  "force": {
    "type": "boolean",
    "description": "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests."
  },
  "gracePeriodSeconds": {
    "type": "integer",
    "description": "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."
  },
  "ignoreStoreReadErrorWithClusterBreakingPotential": {
    "type": "boolean",
    "description": "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it"
  },
  "labelSelector": {
    "type": "string",
    "description": "A selector to restrict the list of returned objects by their labels. Defaults to everything."
  },
  "limit": {
    "type": "integer",
    "description": "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned."
  },
  "namespace": {
    "type": "string",
    "description": "object name and auth scope, such as for teams and projects"
  },
  "orphanDependents": {
    "type": "boolean",
    "description": "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."
  },
  "pretty": {
    "type": "string",
    "description": "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."
  },
  "propagationPolicy": {
    "type": "string",
    "description": "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."
  },
  "resourceVersion": {
    "type": "string",
    "description": "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"
  },
  "resourceVersionMatch": {
    "type": "string",
    "description": "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"
  },
  "sendInitialEvents": {
    "type": "boolean",
    "description": "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise."
  },
  "timeoutSeconds": {
    "type": "integer",
    "description": "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."
  },
  "watch": {
    "type": "boolean",
    "description": "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."
  }
}"##;

/// The `autoscaling/v1` `Scale` models of `/scale` subresources.
const SCALE_SCHEMAS_JSON: &str = r##"{
  "io.k8s.api.autoscaling.v1.Scale": {
    "description": "Scale represents a scaling request for a resource.",
    "type": "object",
    "properties": {
      "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"},
      "kind": {"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"},
      "metadata": {"description": "Standard object metadata; More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata.", "default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
      "spec": {"description": "spec defines the behavior of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status.", "default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.ScaleSpec"}]},
      "status": {"description": "status is the current status of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status. Read-only.", "default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.ScaleStatus"}]}
    },
    "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}]
  },
  "io.k8s.api.autoscaling.v1.ScaleSpec": {
    "description": "ScaleSpec describes the attributes of a scale subresource.",
    "type": "object",
    "properties": {
      "replicas": {"description": "replicas is the desired number of instances for the scaled object.", "type": "integer", "format": "int32"}
    }
  },
  "io.k8s.api.autoscaling.v1.ScaleStatus": {
    "description": "ScaleStatus represents the current status of a scale subresource.",
    "type": "object",
    "required": ["replicas"],
    "properties": {
      "replicas": {"description": "replicas is the actual number of observed instances of the scaled object.", "type": "integer", "format": "int32", "default": 0},
      "selector": {"description": "selector is the label query over pods that should match the replicas count. This is same as the label selector but in the string format to avoid introspection by clients. The string will be in the same format as the query-param syntax. More info about label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels#label-selectors", "type": "string"}
    }
  }
}"##;

fn parse_embedded(what: &str, text: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            tracing::error!(what, "embedded OpenAPI data is not a JSON object");
            Map::new()
        }
        Err(error) => {
            tracing::error!(what, %error, "embedded OpenAPI data does not parse");
            Map::new()
        }
    }
}

static META_SCHEMAS: LazyLock<Map<String, Value>> =
    LazyLock::new(|| parse_embedded("meta/v1 schemas", META_SCHEMAS_JSON));
/// One of the hand-written `meta/v1` models (`DeleteOptions`, `StatusDetails`, ...).
#[cfg(test)]
pub(crate) fn meta_schema(model: &str) -> Option<&'static Value> {
    META_SCHEMAS.get(model)
}

static PARAMETERS: LazyLock<Map<String, Value>> =
    LazyLock::new(|| parse_embedded("parameters", PARAMETERS_JSON));
static SCALE_SCHEMAS: LazyLock<Map<String, Value>> =
    LazyLock::new(|| parse_embedded("scale schemas", SCALE_SCHEMAS_JSON));

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

/// The OpenAPI model name of a kind, as upstream names it: `io.k8s.api.apps.v1.Deployment`,
/// `io.k8s.api.core.v1.Pod`, and for custom resources the reversed group,
/// `org.example.ref.v1.Widget`.
pub fn model_name(group: &str, version: &str, kind: &str, custom: bool) -> String {
    let package = if custom {
        group.split('.').rev().collect::<Vec<_>>().join(".")
    } else {
        match group {
            "" => "io.k8s.api.core".to_string(),
            "apiextensions.k8s.io" => {
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".to_string()
            }
            "apiregistration.k8s.io" => {
                "io.k8s.kube-aggregator.pkg.apis.apiregistration".to_string()
            }
            "internal.apiserver.k8s.io" => "io.k8s.api.apiserverinternal".to_string(),
            g => {
                let short = g.trim_end_matches(".k8s.io");
                format!("io.k8s.api.{}", short.split('.').next().unwrap_or(short))
            }
        }
    };
    format!("{package}.{version}.{kind}")
}

fn info_model(r: &ResourceInfo) -> String {
    model_name(&r.group, &r.version, &r.kind, r.is_custom())
}

fn info_list_model(r: &ResourceInfo) -> String {
    model_name(&r.group, &r.version, &r.list_kind, r.is_custom())
}

/// The path of a group version below `/openapi/v3/`: `api/v1` or `apis/<group>/<version>`.
pub fn v3_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The group and version named by a path below `/openapi/v3/` (the inverse of [`v3_path`]):
/// `api/v1` is `("", "v1")`, `apis/apps/v1` is `("apps", "v1")`.
#[cfg(test)]
pub fn parse_v3_path(path: &str) -> Option<(&str, &str)> {
    let path = path.trim_matches('/');
    let mut parts = path.split('/');
    let result = match (parts.next(), parts.next(), parts.next()) {
        (Some("api"), Some(version), None) => ("", version),
        (Some("apis"), Some(group), Some(version)) => (group, version),
        _ => return None,
    };
    (parts.next().is_none() && !result.1.is_empty()).then_some(result)
}

/// The camel-cased group used in operation ids and tags: `core`, `apps`,
/// `rbacAuthorization` (for `rbac.authorization.k8s.io`), `refExampleOrg`.
fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "core".to_string();
    }
    let mut out = String::new();
    for (i, part) in group
        .trim_end_matches(".k8s.io")
        .split(['.', '-'])
        .filter(|p| !p.is_empty())
        .enumerate()
    {
        if i == 0 {
            out.push_str(part);
        } else {
            out.push_str(&upper_first(part));
        }
    }
    out
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The content hash of a served document, as upstream's OpenAPI handlers compute their `ETag`
/// and the index's `?hash=`: the upper-case hex SHA-512 of the bytes served.
pub fn document_hash(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA512, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// A document as served: its JSON bytes, encoded once, with their hash (the `ETag` and the
/// index's `?hash=`) and the time they were encoded (the `Last-Modified`).
#[derive(Debug, Clone)]
pub struct Served {
    /// The JSON bytes.
    pub bytes: bytes::Bytes,
    /// [`document_hash`] of `bytes`.
    pub hash: String,
    /// When `bytes` were encoded.
    pub modified: std::time::SystemTime,
}

impl Served {
    /// `bytes` as served from now on.
    pub fn new(bytes: impl Into<bytes::Bytes>) -> Self {
        let bytes = bytes.into();
        Self {
            hash: document_hash(&bytes),
            bytes,
            modified: std::time::SystemTime::now(),
        }
    }

    /// `doc` encoded as compact JSON.
    pub fn encode(doc: &Value) -> Self {
        Self::new(doc.to_string().into_bytes())
    }
}

/// Two served documents are the same when their bytes are (whenever they were encoded).
impl PartialEq for Served {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.bytes == other.bytes
    }
}

// ---------------------------------------------------------------------------------------------
// Operations, independent of the OpenAPI version
// ---------------------------------------------------------------------------------------------

struct Param {
    name: String,
    location: &'static str,
    required: bool,
    ty: String,
    description: String,
}

fn query(name: &str) -> Param {
    let known = PARAMETERS.get(name);
    Param {
        name: name.to_string(),
        location: "query",
        required: false,
        ty: known
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string")
            .to_string(),
        description: known
            .and_then(|p| p.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    }
}

fn queries(names: &[&str]) -> Vec<Param> {
    names.iter().map(|n| query(n)).collect()
}

fn path_param(name: &str, description: String) -> Param {
    Param {
        name: name.to_string(),
        location: "path",
        required: true,
        ty: "string".to_string(),
        description,
    }
}

fn namespace_param() -> Param {
    let description = query("namespace").description;
    path_param("namespace", description)
}

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const DELETE_COLLECTION_PARAMS: &[&str] = &[
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];

struct Body {
    types: &'static [&'static str],
    model: String,
    required: bool,
}

struct Response {
    code: &'static str,
    description: &'static str,
    model: Option<String>,
}

fn ok(code: &'static str, model: &str) -> Response {
    let description = match code {
        "200" => "OK",
        "201" => "Created",
        "202" => "Accepted",
        _ => "",
    };
    Response {
        code,
        description,
        model: Some(model.to_string()),
    }
}

fn unauthorized() -> Response {
    Response {
        code: "401",
        description: "Unauthorized",
        model: None,
    }
}

struct Gvk {
    group: String,
    version: String,
    kind: String,
}

struct Operation {
    method: &'static str,
    action: &'static str,
    id: String,
    description: String,
    tag: String,
    params: Vec<Param>,
    body: Option<Body>,
    responses: Vec<Response>,
    gvk: Gvk,
    /// Whether list content types (`;stream=watch`) apply, for Swagger 2.0 `produces`.
    watchable: bool,
}

struct PathItem {
    path: String,
    params: Vec<Param>,
    operations: Vec<Operation>,
}

/// What an operation is about: the resource itself, or its `status` or `scale` subresource.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Main,
    Status,
    Scale,
}

fn resource_paths(r: &ResourceInfo) -> Vec<PathItem> {
    let prefix = if r.group.is_empty() {
        format!("/api/{}", r.version)
    } else {
        format!("/apis/{}/{}", r.group, r.version)
    };
    let group = group_camel(&r.group);
    let tag = format!("{group}_{}", r.version);
    let id_stem = format!("{}{}", upper_first(&group), upper_first(&r.version));
    let scope = if r.namespaced { "Namespaced" } else { "" };
    let kind = &r.kind;
    let model = info_model(r);
    let list_model = info_list_model(r);
    let status_model = format!("{META}.Status");
    let gvk = |kind: &str| Gvk {
        group: r.group.clone(),
        version: r.version.clone(),
        kind: kind.to_string(),
    };
    let op =
        |method, action, id: String, description: String, params, body, responses, gvk| Operation {
            method,
            action,
            id,
            description,
            tag: tag.clone(),
            params,
            body,
            responses,
            gvk,
            watchable: action == "list",
        };
    let list_description = if r.is_custom() {
        format!("list objects of kind {kind}")
    } else {
        format!("list or watch objects of kind {kind}")
    };

    let collection = if r.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", r.resource)
    } else {
        format!("{prefix}/{}", r.resource)
    };
    let scope_params = || {
        let mut params = Vec::new();
        if r.namespaced {
            params.push(namespace_param());
        }
        params
    };
    let mut items = Vec::new();

    // The collection.
    let mut ops = Vec::new();
    if r.allows("list") {
        ops.push(op(
            "get",
            "list",
            format!("list{id_stem}{scope}{kind}"),
            list_description.clone(),
            queries(LIST_PARAMS),
            None,
            vec![ok("200", &list_model), unauthorized()],
            gvk(kind),
        ));
    }
    if r.allows("create") {
        ops.push(op(
            "post",
            "post",
            format!("create{id_stem}{scope}{kind}"),
            format!("create a {kind}"),
            queries(WRITE_PARAMS),
            Some(Body {
                types: BODY_TYPES,
                model: model.clone(),
                required: true,
            }),
            vec![
                ok("200", &model),
                ok("201", &model),
                ok("202", &model),
                unauthorized(),
            ],
            gvk(kind),
        ));
    }
    if r.allows("deletecollection") {
        ops.push(op(
            "delete",
            "deletecollection",
            format!("delete{id_stem}Collection{scope}{kind}"),
            format!("delete collection of {kind}"),
            queries(DELETE_COLLECTION_PARAMS),
            Some(Body {
                types: BODY_TYPES,
                model: format!("{META}.DeleteOptions"),
                required: false,
            }),
            vec![ok("200", &status_model), unauthorized()],
            gvk(kind),
        ));
    }
    if !ops.is_empty() {
        let mut params = scope_params();
        params.push(query("pretty"));
        items.push(PathItem {
            path: collection.clone(),
            params,
            operations: ops,
        });
    }

    // The object and its subresources.
    let mut targets = vec![Target::Main];
    if r.status_subresource {
        targets.push(Target::Status);
    }
    if r.scale.is_some() {
        targets.push(Target::Scale);
    }
    for target in targets {
        let (suffix, what, id_suffix, target_model, target_gvk) = match target {
            Target::Main => ("", String::new(), "", model.clone(), gvk(kind)),
            Target::Status => (
                "/status",
                "status of ".to_string(),
                "Status",
                model.clone(),
                gvk(kind),
            ),
            Target::Scale => (
                "/scale",
                "scale of ".to_string(),
                "Scale",
                "io.k8s.api.autoscaling.v1.Scale".to_string(),
                Gvk {
                    group: "autoscaling".to_string(),
                    version: "v1".to_string(),
                    kind: "Scale".to_string(),
                },
            ),
        };
        let same_gvk = || Gvk {
            group: target_gvk.group.clone(),
            version: target_gvk.version.clone(),
            kind: target_gvk.kind.clone(),
        };
        let mut ops = Vec::new();
        if r.allows("get") {
            ops.push(op(
                "get",
                "get",
                format!("read{id_stem}{scope}{kind}{id_suffix}"),
                format!("read {what}the specified {kind}"),
                queries(&["resourceVersion"]),
                None,
                vec![ok("200", &target_model), unauthorized()],
                same_gvk(),
            ));
        }
        if r.allows("update") {
            ops.push(op(
                "put",
                "put",
                format!("replace{id_stem}{scope}{kind}{id_suffix}"),
                format!("replace {what}the specified {kind}"),
                queries(WRITE_PARAMS),
                Some(Body {
                    types: BODY_TYPES,
                    model: target_model.clone(),
                    required: true,
                }),
                vec![
                    ok("200", &target_model),
                    ok("201", &target_model),
                    unauthorized(),
                ],
                same_gvk(),
            ));
        }
        if target == Target::Main && r.allows("delete") {
            ops.push(op(
                "delete",
                "delete",
                format!("delete{id_stem}{scope}{kind}"),
                format!("delete a {kind}"),
                queries(DELETE_PARAMS),
                Some(Body {
                    types: BODY_TYPES,
                    model: format!("{META}.DeleteOptions"),
                    required: false,
                }),
                vec![
                    ok("200", &status_model),
                    ok("202", &status_model),
                    unauthorized(),
                ],
                same_gvk(),
            ));
        }
        if r.allows("patch") {
            ops.push(op(
                "patch",
                "patch",
                format!("patch{id_stem}{scope}{kind}{id_suffix}"),
                format!("partially update {what}the specified {kind}"),
                queries(PATCH_PARAMS),
                Some(Body {
                    types: if r.is_custom() {
                        PATCH_TYPES
                    } else {
                        BUILTIN_PATCH_TYPES
                    },
                    model: format!("{META}.Patch"),
                    required: true,
                }),
                if r.is_custom() {
                    vec![ok("200", &target_model), unauthorized()]
                } else {
                    vec![
                        ok("200", &target_model),
                        ok("201", &target_model),
                        unauthorized(),
                    ]
                },
                same_gvk(),
            ));
        }
        if ops.is_empty() {
            continue;
        }
        let mut params = vec![path_param(
            "name",
            format!("name of the {}", target_gvk.kind),
        )];
        params.extend(scope_params());
        params.push(query("pretty"));
        items.push(PathItem {
            path: format!("{collection}/{{name}}{suffix}"),
            params,
            operations: ops,
        });
    }

    // Namespaced lists across all namespaces.
    if r.namespaced && r.allows("list") {
        let mut params = queries(LIST_PARAMS);
        params.push(query("pretty"));
        params.sort_by(|a, b| a.name.cmp(&b.name));
        items.push(PathItem {
            path: format!("{prefix}/{}", r.resource),
            params,
            operations: vec![op(
                "get",
                "list",
                format!("list{id_stem}{kind}ForAllNamespaces"),
                list_description,
                Vec::new(),
                None,
                vec![ok("200", &list_model), unauthorized()],
                gvk(kind),
            )],
        });
    }
    items
}

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

fn gvk_list(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "kind": kind, "version": version}])
}

fn standard_properties(properties: &mut Map<String, Value>, metadata_ref: &str, list: bool) {
    properties.insert(
        "apiVersion".into(),
        json!({"description": APIVERSION_DESCRIPTION, "type": "string"}),
    );
    properties.insert(
        "kind".into(),
        json!({"description": KIND_DESCRIPTION, "type": "string"}),
    );
    let description = if list {
        LIST_METADATA_DESCRIPTION
    } else {
        METADATA_DESCRIPTION
    };
    properties.insert(
        "metadata".into(),
        json!({"description": description, "allOf": [{"$ref": format!("{V3_REF}{META}.{metadata_ref}")}]}),
    );
}

/// The v3 schema of a kind: the CRD's schema for custom resources, a permissive object for
/// built-in kinds; either with the standard `apiVersion`/`kind`/`metadata` properties and the
/// `x-kubernetes-group-version-kind` extension.
fn kind_schema(r: &ResourceInfo) -> Value {
    let custom_schema = r
        .custom
        .as_ref()
        .and_then(|c| c.schema.as_deref())
        .and_then(Value::as_object);
    let builtin_schema = (!r.is_custom())
        .then(|| crate::openapi_builtin::schema(&info_model(r)))
        .flatten()
        .and_then(Value::as_object);
    let mut schema = match custom_schema.or(builtin_schema) {
        Some(s) => s.clone(),
        None => {
            let mut s = Map::new();
            if !r.is_custom() {
                s.insert(
                    "description".into(),
                    json!(format!(
                        "{} is a built-in {} kind; its full schema is not published by this server.",
                        r.kind,
                        if r.group.is_empty() { "core".to_string() } else { r.group.clone() }
                    )),
                );
            }
            s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            s
        }
    };
    schema.entry("type").or_insert_with(|| json!("object"));
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema.insert("properties".into(), json!({}));
    }
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        standard_properties(properties, "ObjectMeta", false);
    }
    schema.insert(
        "x-kubernetes-group-version-kind".into(),
        gvk_list(&r.group, &r.version, &r.kind),
    );
    Value::Object(schema)
}

fn list_schema(r: &ResourceInfo) -> Value {
    let mut properties = Map::new();
    standard_properties(&mut properties, "ListMeta", true);
    properties.insert(
        "items".into(),
        json!({
            "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.resource),
            "type": "array",
            "items": {"$ref": format!("{V3_REF}{}", info_model(r))}
        }),
    );
    json!({
        "description": format!("{} is a list of {}", r.list_kind, r.kind),
        "type": "object",
        "required": ["items"],
        "properties": properties,
        "x-kubernetes-group-version-kind": gvk_list(&r.group, &r.version, &r.list_kind),
    })
}

/// The v3 schemas of `resources`, the `meta/v1` models they use (with `DeleteOptions`
/// registered for `delete_options_gvs`) and `Scale` when a resource has that subresource.
fn schemas_for(
    resources: &[&ResourceInfo],
    delete_options_gvs: &[(String, String)],
) -> Map<String, Value> {
    let mut schemas = META_SCHEMAS.clone();
    if let Some(delete_options) = schemas
        .get_mut(&format!("{META}.DeleteOptions"))
        .and_then(Value::as_object_mut)
    {
        let gvks: Vec<Value> = delete_options_gvs
            .iter()
            .map(|(group, version)| json!({"group": group, "kind": "DeleteOptions", "version": version}))
            .collect();
        delete_options.insert("x-kubernetes-group-version-kind".into(), Value::Array(gvks));
    }
    for r in resources {
        if !r.is_custom() {
            // The models a built-in kind refers to (its spec, status, PodSpec, …).
            for (name, schema) in crate::openapi_builtin::closure(&info_model(r)) {
                schemas
                    .entry(name.to_string())
                    .or_insert_with(|| schema.clone());
            }
        }
        schemas.insert(info_model(r), kind_schema(r));
        schemas.insert(info_list_model(r), list_schema(r));
        if r.scale.is_some() {
            for (name, schema) in SCALE_SCHEMAS.iter() {
                schemas.insert(name.clone(), schema.clone());
            }
        }
    }
    schemas
}

// ---------------------------------------------------------------------------------------------
// OpenAPI v3
// ---------------------------------------------------------------------------------------------

fn v3_param(p: &Param) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(p.name));
    m.insert("in".into(), json!(p.location));
    m.insert("description".into(), json!(p.description));
    if p.required {
        m.insert("required".into(), json!(true));
    }
    m.insert("schema".into(), json!({"type": p.ty, "uniqueItems": true}));
    Value::Object(m)
}

fn v3_content(types: &[&str], model: &str) -> Value {
    let schema = json!({"schema": {"$ref": format!("{V3_REF}{model}")}});
    Value::Object(
        types
            .iter()
            .map(|t| (t.to_string(), schema.clone()))
            .collect(),
    )
}

fn v3_operation(op: &Operation) -> Value {
    let mut m = Map::new();
    m.insert("tags".into(), json!([op.tag]));
    m.insert("description".into(), json!(op.description));
    m.insert("operationId".into(), json!(op.id));
    if !op.params.is_empty() {
        m.insert(
            "parameters".into(),
            Value::Array(op.params.iter().map(v3_param).collect()),
        );
    }
    if let Some(body) = &op.body {
        let mut b = Map::new();
        b.insert("content".into(), v3_content(body.types, &body.model));
        if body.required {
            b.insert("required".into(), json!(true));
        }
        m.insert("requestBody".into(), Value::Object(b));
    }
    let mut responses = Map::new();
    for r in &op.responses {
        let mut resp = Map::new();
        resp.insert("description".into(), json!(r.description));
        if let Some(model) = &r.model {
            resp.insert("content".into(), v3_content(BODY_TYPES, model));
        }
        responses.insert(r.code.to_string(), Value::Object(resp));
    }
    m.insert("responses".into(), Value::Object(responses));
    m.insert("x-kubernetes-action".into(), json!(op.action));
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": op.gvk.group, "version": op.gvk.version, "kind": op.gvk.kind}),
    );
    Value::Object(m)
}

fn v3_paths(items: &[PathItem]) -> Map<String, Value> {
    let mut paths = Map::new();
    for item in items {
        let mut entry = Map::new();
        for op in &item.operations {
            entry.insert(op.method.to_string(), v3_operation(op));
        }
        if !item.params.is_empty() {
            entry.insert(
                "parameters".into(),
                Value::Array(item.params.iter().map(v3_param).collect()),
            );
        }
        paths.insert(item.path.clone(), Value::Object(entry));
    }
    paths
}

fn build_v3(resources: &[Arc<ResourceInfo>], group: &str, version: &str) -> Value {
    let refs: Vec<&ResourceInfo> = resources.iter().map(|r| r.as_ref()).collect();
    let items: Vec<PathItem> = refs.iter().flat_map(|r| resource_paths(r)).collect();
    let schemas = schemas_for(&refs, &[(group.to_string(), version.to_string())]);
    let info = if refs.iter().all(|r| r.is_custom()) {
        json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    } else {
        json!({"title": "Kubernetes", "version": format!("v{}", env!("CARGO_PKG_VERSION"))})
    };
    json!({
        "openapi": "3.0.0",
        "info": info,
        "paths": v3_paths(&items),
        "components": {"schemas": schemas},
    })
}

/// A built group version document, valid while the resources it was built from are unchanged.
struct CachedDoc {
    fingerprint: String,
    /// Keeps the CRD schemas named (by address) in the fingerprint alive, so an address cannot
    /// be reused by a different schema while the entry exists.
    _schemas: Vec<Arc<Value>>,
    doc: Arc<Value>,
    served: Arc<Served>,
}

/// The OpenAPI documents one server built, kept on its [`Registry`]. Building and hashing the
/// large documents is costly (notably in debug builds) and kubectl asks for them on most
/// commands, so they are built once per change of the served resources.
#[derive(Default)]
pub struct OpenApiCache {
    /// v3 documents by group version.
    v3: Mutex<HashMap<(String, String), CachedDoc>>,
    /// The v2 document.
    v2: Mutex<Option<CachedV2>>,
}

impl std::fmt::Debug for OpenApiCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OpenApiCache")
    }
}

/// Everything about `resources` a document depends on, and the schemas it names by address.
fn fingerprint(resources: &[Arc<ResourceInfo>]) -> (String, Vec<Arc<Value>>) {
    let mut out = String::new();
    let mut schemas = Vec::new();
    for r in resources {
        let schema = r.custom.as_ref().map(|c| {
            c.schema.as_ref().map(|s| {
                schemas.push(Arc::clone(s));
                Arc::as_ptr(s) as usize
            })
        });
        out.push_str(&format!(
            "{}|{}|{}|{}|{}|{}|{:?}|{}|{}|{:?};",
            r.group,
            r.version,
            r.resource,
            r.kind,
            r.list_kind,
            r.namespaced,
            r.verbs,
            r.status_subresource,
            r.scale.is_some(),
            schema,
        ));
    }
    (out, schemas)
}

/// The OpenAPI 3.0 document of one group version and its served form, built and encoded
/// once per change of its resources. `None` when the server serves nothing there.
fn v3_entry(registry: &Registry, group: &str, version: &str) -> Option<(Arc<Value>, Arc<Served>)> {
    let resources = registry.resources_in(group, version);
    let key = (group.to_string(), version.to_string());
    let mut cache = registry
        .openapi_cache()
        .v3
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if resources.is_empty() {
        cache.remove(&key);
        return None;
    }
    let (fingerprint, schemas) = fingerprint(&resources);
    if let Some(hit) = cache.get(&key).filter(|c| c.fingerprint == fingerprint) {
        return Some((Arc::clone(&hit.doc), Arc::clone(&hit.served)));
    }
    let doc = build_v3(&resources, group, version);
    let served = Arc::new(Served::encode(&doc));
    let doc = Arc::new(doc);
    tracing::debug!(group, version, hash = %served.hash, "built OpenAPI v3 document");
    cache.insert(
        key,
        CachedDoc {
            fingerprint,
            _schemas: schemas,
            doc: Arc::clone(&doc),
            served: Arc::clone(&served),
        },
    );
    Some((doc, served))
}

/// The OpenAPI 3.0 document of one group version and its content hash (as in the index's
/// `?hash=`), shared. `None` when the server serves nothing in that group version.
pub fn v3_group_version_with_hash(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Option<(Arc<Value>, String)> {
    v3_entry(registry, group, version).map(|(doc, served)| (doc, served.hash.clone()))
}

/// The encoded OpenAPI 3.0 document of one group version, as `/openapi/v3/apis/<group>/<version>`
/// (or `/openapi/v3/api/v1` for the core group) serves it: the same bytes until its resources
/// change. `None` when the server serves nothing there.
pub fn v3_group_version_served(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Option<Arc<Served>> {
    v3_entry(registry, group, version).map(|(_, served)| served)
}

/// The OpenAPI 3.0 document of one group version (see [`v3_group_version_served`]).
#[cfg(test)]
pub fn v3_group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    v3_group_version_with_hash(registry, group, version).map(|(doc, _)| (*doc).clone())
}

/// Every group version the registry serves, in discovery order.
fn served_group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            if !registry.resources_in(&group, &version).is_empty()
                && !out.contains(&(group.clone(), version.clone()))
            {
                out.push((group.clone(), version));
            }
        }
    }
    out
}

/// The `serverRelativeURL` of the document at `path` (`apis/apps/v1`) with `hash`, as
/// upstream's index lists it and redirects to.
pub fn v3_url(path: &str, hash: &str) -> String {
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("hash", hash)
        .finish();
    format!("/openapi/v3/{path}?{query}")
}

/// The OpenAPI v3 discovery document (`/openapi/v3`): for every served group version its
/// document's URL, with a `hash` query parameter derived from the document's content.
pub fn v3_index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, version) in served_group_versions(registry) {
        let Some(served) = v3_group_version_served(registry, &group, &version) else {
            continue;
        };
        let path = v3_path(&group, &version);
        let url = v3_url(&path, &served.hash);
        paths.insert(path, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

// ---------------------------------------------------------------------------------------------
// Swagger 2.0
// ---------------------------------------------------------------------------------------------

/// Rewrites a v3 schema into Swagger 2.0 form: `#/definitions/` references, `allOf` wrappers
/// of a single reference replaced by the reference, and keywords 2.0 lacks (`nullable`,
/// `oneOf`, `anyOf`, `not`) dropped. Property names are never touched.
fn schema_to_v2(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::String(r)) = m.get_mut("$ref")
        && let Some(rest) = r.strip_prefix(V3_REF)
    {
        *r = format!("{V2_REF}{rest}");
    }
    let single_ref = match m.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => all
            .first()
            .and_then(Value::as_object)
            .filter(|o| o.len() == 1)
            .and_then(|o| o.get("$ref"))
            .cloned(),
        _ => None,
    };
    if let Some(Value::String(r)) = single_ref {
        m.remove("allOf");
        let r = r
            .strip_prefix(V3_REF)
            .map(|rest| format!("{V2_REF}{rest}"))
            .unwrap_or(r);
        m.insert("$ref".into(), json!(r));
    }
    for key in ["nullable", "oneOf", "anyOf", "not"] {
        m.remove(key);
    }
    if let Some(Value::Object(properties)) = m.get_mut("properties") {
        properties.values_mut().for_each(schema_to_v2);
    }
    for key in ["items", "additionalProperties"] {
        match m.get_mut(key) {
            Some(Value::Array(items)) => items.iter_mut().for_each(schema_to_v2),
            Some(v @ Value::Object(_)) => schema_to_v2(v),
            _ => {}
        }
    }
    if let Some(Value::Array(all)) = m.get_mut("allOf") {
        all.iter_mut().for_each(schema_to_v2);
    }
}

fn v2_param(p: &Param) -> Value {
    let mut m = Map::new();
    m.insert("uniqueItems".into(), json!(true));
    m.insert("type".into(), json!(p.ty));
    m.insert("description".into(), json!(p.description));
    m.insert("name".into(), json!(p.name));
    m.insert("in".into(), json!(p.location));
    if p.required {
        m.insert("required".into(), json!(true));
    }
    Value::Object(m)
}

fn v2_operation(op: &Operation) -> Value {
    let mut m = Map::new();
    m.insert("description".into(), json!(op.description));
    let consumes: Vec<&str> = match &op.body {
        Some(body) if op.method == "patch" => body.types.to_vec(),
        _ => vec!["*/*"],
    };
    m.insert("consumes".into(), json!(consumes));
    let mut produces: Vec<&str> = BODY_TYPES.to_vec();
    if op.watchable {
        produces.push("application/json;stream=watch");
    }
    m.insert("produces".into(), json!(produces));
    m.insert("schemes".into(), json!(["https"]));
    m.insert("tags".into(), json!([op.tag]));
    m.insert("operationId".into(), json!(op.id));
    let mut params = Vec::new();
    if let Some(body) = &op.body {
        params.push(json!({
            "name": "body",
            "in": "body",
            "required": body.required,
            "schema": {"$ref": format!("{V2_REF}{}", body.model)},
        }));
    }
    params.extend(op.params.iter().map(v2_param));
    if !params.is_empty() {
        m.insert("parameters".into(), Value::Array(params));
    }
    let mut responses = Map::new();
    for r in &op.responses {
        let mut resp = Map::new();
        resp.insert("description".into(), json!(r.description));
        if let Some(model) = &r.model {
            resp.insert("schema".into(), json!({"$ref": format!("{V2_REF}{model}")}));
        }
        responses.insert(r.code.to_string(), Value::Object(resp));
    }
    m.insert("responses".into(), Value::Object(responses));
    m.insert("x-kubernetes-action".into(), json!(op.action));
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": op.gvk.group, "version": op.gvk.version, "kind": op.gvk.kind}),
    );
    Value::Object(m)
}

/// A Swagger 2.0 document and its two served forms, each encoded on first use: the JSON bytes
/// (whose hash and time are the `ETag` and `Last-Modified` of both forms, as upstream) and the
/// protobuf encoding.
#[derive(Debug)]
pub struct V2Document {
    /// The document.
    pub doc: Arc<Value>,
    json: std::sync::OnceLock<Arc<Served>>,
    protobuf: std::sync::OnceLock<bytes::Bytes>,
}

impl V2Document {
    /// `doc`, not encoded yet.
    pub fn new(doc: Arc<Value>) -> Self {
        Self {
            doc,
            json: std::sync::OnceLock::new(),
            protobuf: std::sync::OnceLock::new(),
        }
    }

    /// The JSON form.
    pub fn json(&self) -> Arc<Served> {
        Arc::clone(
            self.json
                .get_or_init(|| Arc::new(Served::encode(&self.doc))),
        )
    }

    /// The protobuf form (`application/com.github.proto-openapi.spec.v2.v1.0+protobuf`).
    pub fn protobuf(&self) -> bytes::Bytes {
        self.protobuf
            .get_or_init(|| crate::openapi_proto::encode_v2(&self.doc).into())
            .clone()
    }
}

/// The built Swagger 2.0 document, valid while the served resources are unchanged.
struct CachedV2 {
    fingerprint: String,
    _schemas: Vec<Arc<Value>>,
    document: Arc<V2Document>,
}

/// The Swagger 2.0 document of everything served, with its served forms: built once per
/// change of the served resources.
pub fn v2_document(registry: &Registry) -> Arc<V2Document> {
    let gvs = served_group_versions(registry);
    let resources: Vec<Arc<ResourceInfo>> = gvs
        .iter()
        .flat_map(|(g, v)| registry.resources_in(g, v))
        .collect();
    let (fingerprint, schemas) = fingerprint(&resources);
    // `/openapi/v2` is large and kubectl fetches it on many commands: built once per change
    // of the served resources (a CRD created, changed or removed), like the v3 documents.
    let mut cache = registry
        .openapi_cache()
        .v2
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = cache.as_ref().filter(|c| c.fingerprint == fingerprint) {
        return Arc::clone(&hit.document);
    }
    let document = Arc::new(V2Document::new(Arc::new(build_v2(&gvs, &resources))));
    *cache = Some(CachedV2 {
        fingerprint,
        _schemas: schemas,
        document: Arc::clone(&document),
    });
    document
}

/// The Swagger 2.0 document of everything served (`/openapi/v2`, JSON form): `paths` for
/// every resource and `definitions` as in the v3 documents.
#[cfg(test)]
pub fn v2(registry: &Registry) -> Value {
    (*v2_document(registry).doc).clone()
}

fn build_v2(gvs: &[(String, String)], resources: &[Arc<ResourceInfo>]) -> Value {
    let refs: Vec<&ResourceInfo> = resources.iter().map(|r| r.as_ref()).collect();
    let mut paths = Map::new();
    for item in refs.iter().flat_map(|r| resource_paths(r)) {
        let mut entry = Map::new();
        for op in &item.operations {
            entry.insert(op.method.to_string(), v2_operation(op));
        }
        if !item.params.is_empty() {
            entry.insert(
                "parameters".into(),
                Value::Array(item.params.iter().map(v2_param).collect()),
            );
        }
        paths.insert(item.path, Value::Object(entry));
    }
    let mut definitions = schemas_for(&refs, gvs);
    definitions.values_mut().for_each(schema_to_v2);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v{}", env!("CARGO_PKG_VERSION"))},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header"
            }
        },
        "security": [{"BearerToken": []}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{CustomResourceInfo, NameRule, standard_verbs};

    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["replicas"],
                    "properties": {
                        "color": {"type": "string", "default": "red", "enum": ["red", "blue"]},
                        "replicas": {"type": "integer", "minimum": 1},
                        "not": {"type": "string", "nullable": true}
                    },
                    "x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "at most 10"}]
                },
                "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}
            }
        })
    }

    fn widget(schema: Value) -> ResourceInfo {
        ResourceInfo {
            group: "ref.example.org".into(),
            version: "v1".into(),
            resource: "widgets".into(),
            singular: "widget".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            namespaced: true,
            short_names: vec!["wdg".into()],
            categories: vec![],
            verbs: standard_verbs(),
            status_subresource: true,
            scale: None,
            name_rule: NameRule::Subdomain,
            tracks_generation: true,
            returns_deleted_object: true,
            field_selectors: vec![],
            actions: Vec::new(),
            connecters: Vec::new(),
            upstream_storage_version: None,
            deprecation: None,
            pod_spec: None,
            lists: &[],
            patch_directives: &[],
            printer: crate::kinds::printer::DEFAULT,
            strategy: Arc::new(crate::kinds::custom::CustomResourceStrategy::new(
                None,
                String::new(),
                false,
            )),
            custom: Some(CustomResourceInfo {
                crd_name: "widgets.ref.example.org".into(),
                schema: Some(Arc::new(schema)),
                printer_columns: vec![],
                versions: Default::default(),
                deprecation: None,
            }),
        }
    }

    fn registry() -> Registry {
        let registry = Registry::with_builtins();
        registry.put_crd("widgets.ref.example.org", vec![widget(widget_schema())]);
        registry
    }

    #[test]
    fn embedded_data_parses() {
        assert!(META_SCHEMAS.contains_key(&format!("{META}.ObjectMeta")));
        assert!(META_SCHEMAS.contains_key(&format!("{META}.Status")));
        assert!(PARAMETERS.contains_key("fieldValidation"));
        assert_eq!(SCALE_SCHEMAS.len(), 3);
    }

    #[test]
    fn model_names_follow_upstream() {
        assert_eq!(
            model_name("apps", "v1", "Deployment", false),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(model_name("", "v1", "Pod", false), "io.k8s.api.core.v1.Pod");
        assert_eq!(
            model_name("rbac.authorization.k8s.io", "v1", "Role", false),
            "io.k8s.api.rbac.v1.Role"
        );
        assert_eq!(
            model_name("coordination.k8s.io", "v1", "Lease", false),
            "io.k8s.api.coordination.v1.Lease"
        );
        assert_eq!(
            model_name(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                false
            ),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
        assert_eq!(
            model_name("ref.example.org", "v1", "Widget", true),
            "org.example.ref.v1.Widget"
        );
        assert_eq!(
            group_camel("rbac.authorization.k8s.io"),
            "rbacAuthorization"
        );
        assert_eq!(group_camel("ref.example.org"), "refExampleOrg");
        assert_eq!(group_camel(""), "core");
        assert_eq!(parse_v3_path("apis/apps/v1"), Some(("apps", "v1")));
        assert_eq!(parse_v3_path("/api/v1"), Some(("", "v1")));
        assert_eq!(parse_v3_path("apis/apps"), None);
        assert_eq!(parse_v3_path("api/v1/x"), None);
    }

    /// Mirrors kubectl's `supportsQueryParamV3`: the first PATCH operation of the GVK must
    /// declare the query parameter.
    fn supports_query_param(
        doc: &Value,
        group: &str,
        version: &str,
        kind: &str,
        param: &str,
    ) -> bool {
        let Some(paths) = doc["paths"].as_object() else {
            return false;
        };
        for item in paths.values() {
            let patch = &item["patch"];
            let gvk = &patch["x-kubernetes-group-version-kind"];
            if gvk["group"] != group || gvk["version"] != version || gvk["kind"] != kind {
                continue;
            }
            return patch["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == param && p["in"] == "query");
        }
        false
    }

    #[test]
    fn custom_resource_document_matches_upstream_shape() {
        let registry = registry();
        let doc = v3_group_version(&registry, "ref.example.org", "v1").unwrap_or_default();
        assert_eq!(doc["openapi"], "3.0.0");
        assert_eq!(doc["info"]["title"], "Kubernetes CRD Swagger");
        let paths = doc["paths"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>());
        assert_eq!(
            paths.unwrap_or_default(),
            vec![
                "/apis/ref.example.org/v1/namespaces/{namespace}/widgets",
                "/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}",
                "/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}/status",
                "/apis/ref.example.org/v1/widgets",
            ]
        );
        assert!(supports_query_param(
            &doc,
            "ref.example.org",
            "v1",
            "Widget",
            "fieldValidation"
        ));
        let item = &doc["paths"]["/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}"];
        let patch = &item["patch"];
        assert_eq!(patch["operationId"], "patchRefExampleOrgV1NamespacedWidget");
        assert_eq!(patch["tags"], json!(["refExampleOrg_v1"]));
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        let body_types: Vec<&String> = patch["requestBody"]["content"]
            .as_object()
            .map(|c| c.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            body_types,
            [
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ]
        );
        assert_eq!(
            patch["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/org.example.ref.v1.Widget"
        );
        let path_params: Vec<&str> = item["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(path_params, ["name", "namespace", "pretty"]);
        assert_eq!(item["parameters"][0]["description"], "name of the Widget");
        assert_eq!(item["parameters"][0]["required"], true);
        assert_eq!(
            item["get"]["operationId"],
            "readRefExampleOrgV1NamespacedWidget"
        );
        assert_eq!(
            item["put"]["operationId"],
            "replaceRefExampleOrgV1NamespacedWidget"
        );
        assert_eq!(
            item["delete"]["operationId"],
            "deleteRefExampleOrgV1NamespacedWidget"
        );
        let collection = &doc["paths"]["/apis/ref.example.org/v1/namespaces/{namespace}/widgets"];
        assert_eq!(
            collection["get"]["operationId"],
            "listRefExampleOrgV1NamespacedWidget"
        );
        assert_eq!(collection["post"]["x-kubernetes-action"], "post");
        assert_eq!(
            collection["delete"]["operationId"],
            "deleteRefExampleOrgV1CollectionNamespacedWidget"
        );
        let status =
            &doc["paths"]["/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}/status"];
        assert_eq!(
            status["patch"]["operationId"],
            "patchRefExampleOrgV1NamespacedWidgetStatus"
        );
        assert_eq!(
            status["get"]["description"],
            "read status of the specified Widget"
        );
        let all = &doc["paths"]["/apis/ref.example.org/v1/widgets"]["get"];
        assert_eq!(
            all["operationId"],
            "listRefExampleOrgV1WidgetForAllNamespaces"
        );

        // The CRD schema is embedded, with the standard fields and the GVK extension.
        let schemas = &doc["components"]["schemas"];
        let widget = &schemas["org.example.ref.v1.Widget"];
        assert_eq!(
            widget["properties"]["spec"],
            widget_schema()["properties"]["spec"]
        );
        assert_eq!(
            widget["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(widget["properties"]["apiVersion"]["type"], "string");
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "ref.example.org", "kind": "Widget", "version": "v1"}])
        );
        assert_eq!(
            schemas["org.example.ref.v1.WidgetList"]["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/org.example.ref.v1.Widget"
        );
        // Every reference resolves.
        assert_refs_resolve(&doc, V3_REF, &doc["components"]["schemas"]);
    }

    fn assert_refs_resolve(node: &Value, prefix: &str, schemas: &Value) {
        match node {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let name = r.strip_prefix(prefix).unwrap_or(r);
                    assert!(schemas.get(name).is_some(), "dangling {r}");
                }
                m.values()
                    .for_each(|v| assert_refs_resolve(v, prefix, schemas));
            }
            Value::Array(a) => a
                .iter()
                .for_each(|v| assert_refs_resolve(v, prefix, schemas)),
            _ => {}
        }
    }

    #[test]
    fn builtin_documents() {
        let registry = registry();
        let apps = v3_group_version(&registry, "apps", "v1").unwrap_or_default();
        assert!(supports_query_param(
            &apps,
            "apps",
            "v1",
            "Deployment",
            "fieldValidation"
        ));
        assert!(supports_query_param(
            &apps,
            "apps",
            "v1",
            "StatefulSet",
            "dryRun"
        ));
        let deploy = &apps["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(deploy["type"], "object");
        // The upstream schema with descriptions (for `kubectl explain`), not a permissive one.
        assert!(deploy.get("x-kubernetes-preserve-unknown-fields").is_none());
        assert_eq!(
            deploy["description"],
            "Deployment enables declarative updates for Pods and ReplicaSets."
        );
        let spec = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"];
        assert!(spec["properties"]["replicas"]["description"].is_string());
        assert!(apps["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"].is_object());
        assert_eq!(
            deploy["x-kubernetes-group-version-kind"],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        let item = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        assert_eq!(
            item["patch"]["operationId"],
            "patchAppsV1NamespacedDeployment"
        );
        // Strategic merge patch advertised, with the schemas' merge keys.
        assert!(
            item["patch"]["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
        assert_eq!(
            apps["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
                ["x-kubernetes-patch-merge-key"],
            "name"
        );
        let scale = &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
        assert_eq!(
            scale["patch"]["x-kubernetes-group-version-kind"]["kind"],
            "Scale"
        );
        assert_eq!(
            scale["get"]["operationId"],
            "readAppsV1NamespacedDeploymentScale"
        );
        assert!(apps["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"].is_object());
        assert_refs_resolve(&apps, V3_REF, &apps["components"]["schemas"]);

        let core = v3_group_version(&registry, "", "v1").unwrap_or_default();
        assert_eq!(core["info"]["title"], "Kubernetes");
        assert!(supports_query_param(
            &core,
            "",
            "v1",
            "ConfigMap",
            "fieldValidation"
        ));
        assert!(core["paths"]["/api/v1/namespaces/{name}"]["patch"].is_object());
        assert_eq!(
            core["paths"]["/api/v1/namespaces"]["get"]["operationId"],
            "listCoreV1Namespace"
        );
        assert!(core["paths"]["/api/v1/namespaces"].get("delete").is_none());
        assert_eq!(
            core["paths"]["/api/v1/pods"]["get"]["operationId"],
            "listCoreV1PodForAllNamespaces"
        );
        assert!(v3_group_version(&registry, "nope.example", "v1").is_none());
        assert!(v3_group_version(&registry, "apps", "v2").is_none());
    }

    #[test]
    fn the_document_hash_is_upper_case_sha512() {
        assert_eq!(
            document_hash(b"abc"),
            "DDAF35A193617ABACC417349AE20413112E6FA4E89A97EA20A9EEEE64B55D39A\
             2192992A274FC1A836BA3C23A3FEEBBD454D4423643CE80E2A9AC94FA54CA49F"
        );
    }

    #[test]
    fn index_lists_group_versions_with_content_hashes() {
        let registry = registry();
        let index = v3_index(&registry);
        let paths = &index["paths"];
        for gv in [
            "api/v1",
            "apis/apps/v1",
            "apis/batch/v1",
            "apis/ref.example.org/v1",
        ] {
            let url = paths[gv]["serverRelativeURL"].as_str().unwrap_or_default();
            assert!(
                url.starts_with(&format!("/openapi/v3/{gv}?hash=")),
                "{gv}: {url}"
            );
        }
        let url = |index: &Value, gv: &str| index["paths"][gv]["serverRelativeURL"].clone();
        // The hash is upstream's: SHA-512 of the bytes served, in upper-case hex.
        let served = v3_group_version_served(&registry, "apps", "v1").expect("apps/v1");
        let hash = document_hash(&served.bytes);
        assert_eq!(hash, served.hash);
        assert_eq!(hash.len(), 128);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
        );
        assert_eq!(
            url(&index, "apis/apps/v1"),
            json!(format!("/openapi/v3/apis/apps/v1?hash={hash}"))
        );
        let doc = v3_group_version(&registry, "apps", "v1").unwrap_or_default();
        assert_eq!(
            served.bytes,
            doc.to_string().into_bytes(),
            "the bytes are the document"
        );
        let again = v3_group_version_served(&registry, "apps", "v1").expect("apps/v1");
        assert!(Arc::ptr_eq(&served, &again), "encoded once");

        // Changing a CRD schema changes that group's hash only.
        let mut schema = widget_schema();
        schema["properties"]["spec"]["properties"]["size"] = json!({"type": "string"});
        registry.put_crd("widgets.ref.example.org", vec![widget(schema)]);
        let after = v3_index(&registry);
        assert_ne!(
            url(&index, "apis/ref.example.org/v1"),
            url(&after, "apis/ref.example.org/v1")
        );
        assert_eq!(url(&index, "apis/apps/v1"), url(&after, "apis/apps/v1"));
        assert_eq!(v3_index(&registry), after);

        registry.remove_crd("widgets.ref.example.org");
        assert!(
            v3_index(&registry)["paths"]
                .get("apis/ref.example.org/v1")
                .is_none()
        );
    }

    #[test]
    fn swagger_v2_document() {
        let registry = registry();
        let doc = v2(&registry);
        assert_eq!(doc["swagger"], "2.0");
        let patch = &doc["paths"]["/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}"]
            ["patch"];
        assert!(
            patch["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert_eq!(patch["parameters"][0]["in"], "body");
        assert_eq!(
            patch["consumes"],
            json!([
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ])
        );
        assert_eq!(
            patch["responses"]["200"]["schema"]["$ref"],
            "#/definitions/org.example.ref.v1.Widget"
        );
        let widget = &doc["definitions"]["org.example.ref.v1.Widget"];
        assert_eq!(
            widget["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(widget["properties"]["metadata"].get("allOf").is_none());
        // Property names survive the conversion; v3-only keywords do not.
        assert_eq!(
            widget["properties"]["spec"]["properties"]["not"],
            json!({"type": "string"})
        );
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "ref.example.org", "kind": "Widget", "version": "v1"}])
        );
        assert!(doc["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
        let gvks =
            doc["definitions"][format!("{META}.DeleteOptions")]["x-kubernetes-group-version-kind"]
                .as_array()
                .map(Vec::len)
                .unwrap_or_default();
        assert!(gvks > 5);
        assert_refs_resolve(&doc, V2_REF, &doc["definitions"]);
        assert!(
            doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"]["produces"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p == "application/json;stream=watch")
        );
    }

    #[test]
    fn resources_without_schema_or_verbs() {
        let registry = Registry::with_builtins();
        let mut info = widget(Value::Null);
        if let Some(c) = info.custom.as_mut() {
            c.schema = None;
        }
        info.verbs = vec!["get".into(), "list".into()];
        info.status_subresource = false;
        registry.put_crd("widgets.ref.example.org", vec![info]);
        let doc = v3_group_version(&registry, "ref.example.org", "v1").unwrap_or_default();
        let widget = &doc["components"]["schemas"]["org.example.ref.v1.Widget"];
        assert_eq!(widget["x-kubernetes-preserve-unknown-fields"], true);
        let item = &doc["paths"]["/apis/ref.example.org/v1/namespaces/{namespace}/widgets/{name}"];
        assert!(item.get("patch").is_none() && item["get"].is_object());
        assert!(!supports_query_param(
            &doc,
            "ref.example.org",
            "v1",
            "Widget",
            "fieldValidation"
        ));
    }
}
