//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds.
//!
//! A port of upstream's `k8s.io/apimachinery/pkg/util/strategicpatch` merge (`mergeMap` /
//! `mergeSlice`, server-side options `MergeParallelList` and `IgnoreUnmatchedNulls`), with the
//! struct-tag lookups replaced by a [`MergeStrategy`]:
//!
//! * maps merge recursively; `null` deletes a key;
//! * lists are replaced, unless the strategy says [`ListStrategy::Merge`] (lists of objects
//!   merged by a key) or [`ListStrategy::MergePrimitives`] (set-like lists such as finalizers);
//! * directives: `$patch: replace | delete | merge` in maps and list elements, `$retainKeys`,
//!   `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`.
//!
//! Element order follows upstream exactly: without `$setElementOrder`, elements of the patch
//! that are new to the list are placed before the server-only elements that follow them in the
//! original (so a lone new element lands first, as `kubectl patch` users see upstream); with
//! `$setElementOrder` (what `kubectl apply` sends) the given order wins and server-only
//! elements keep their place relative to it.

use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::kinds::lists::ListRule;
use crate::registry::ResourceInfo;

use super::{decode_json, go_json_kind, rejected_patch};

const DIRECTIVE_MARKER: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

const ERR_BAD_PRIMITIVE_LIST: &str = "invalid patch format of primitive list";
const ERR_BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";
const ERR_BAD_SET_ELEMENT_ORDER: &str = "invalid patch format of setElementOrder list";
const ERR_NO_LIST_OF_LISTS: &str = "lists of lists are not supported";

/// How a list is patched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch's list replaces the original (the default, and what JSON merge patch does).
    Replace,
    /// A list of objects merged element by element, matching elements by the value of `key`
    /// (upstream's `patchStrategy:"merge" patchMergeKey:"<key>"`).
    Merge {
        /// The merge key, e.g. `name` for containers.
        key: String,
    },
    /// A list of primitives merged as an ordered set (upstream's `patchStrategy:"merge"`
    /// without a merge key, e.g. `metadata.finalizers`).
    MergePrimitives,
}

impl ListStrategy {
    /// A [`ListStrategy::Merge`] with the given key.
    pub fn merge(key: &str) -> Self {
        ListStrategy::Merge {
            key: key.to_string(),
        }
    }

    fn is_merge(&self) -> bool {
        !matches!(self, ListStrategy::Replace)
    }

    fn merge_key(&self) -> Option<&str> {
        match self {
            ListStrategy::Merge { key } => Some(key),
            _ => None,
        }
    }
}

/// Where the list merge strategies of a kind come from.
pub trait MergeStrategy {
    /// The strategy of the list at `path`: property names from the document root, array
    /// indices omitted (e.g. `["spec", "template", "spec", "containers"]`, or
    /// `[..., "containers", "env"]` for every container's `env`).
    fn list_strategy(&self, path: &[String]) -> ListStrategy;
}

/// The strategy without schema information: every list is replaced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplaceLists;

impl MergeStrategy for ReplaceLists {
    fn list_strategy(&self, _path: &[String]) -> ListStrategy {
        ListStrategy::Replace
    }
}

/// Upstream's patch strategies of a built-in kind: the merge keys and sets of
/// [`crate::kinds::lists`] (object metadata, the pod spec, `status.conditions` and the lists the
/// kind declares); every other list (`tolerations`, `envFrom`, `args`, ...) is replaced.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinStrategy<'a> {
    info: &'a ResourceInfo,
}

impl<'a> BuiltinStrategy<'a> {
    /// The merge strategy of `info`'s objects.
    pub fn new(info: &'a ResourceInfo) -> Self {
        Self { info }
    }
}

impl MergeStrategy for BuiltinStrategy<'_> {
    fn list_strategy(&self, path: &[String]) -> ListStrategy {
        match crate::kinds::lists::rule(self.info, path) {
            Some(ListRule::Map { patch_key, .. } | ListRule::PatchMap { patch_key }) => {
                ListStrategy::merge(patch_key)
            }
            Some(ListRule::Set) => ListStrategy::MergePrimitives,
            Some(ListRule::ApplyMap { .. } | ListRule::ApplySet | ListRule::Atomic) | None => {
                ListStrategy::Replace
            }
        }
    }
}

/// Why a strategic merge patch failed, classified as upstream's
/// `interpretStrategicMergePatchError` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmpError {
    /// A malformed directive: `400 BadRequest` with this text.
    BadRequest(String),
    /// Lists of lists: upstream's generic `422 Invalid` (the text is not sent).
    Unprocessable(String),
    /// A list item lacks the list's merge key. Upstream answers a 500; this is the client's
    /// mistake, so it is a `400 BadRequest` naming the key and the list.
    MissingMergeKey {
        /// Upstream's text (`map: map[image:x] does not contain declared merge key: name`).
        message: String,
        /// The merge key.
        key: String,
        /// The list's field path (`spec.template.spec.containers`), once known.
        list: Option<String>,
    },
    /// Any other failure of the patch (mixed element types, unknown directive, a
    /// `$setElementOrder` that does not match): upstream answers these as non-Status 500s; they
    /// are the client's mistake, so a `400 BadRequest` with upstream's text.
    Failed(String),
}

impl SmpError {
    /// Names the list a missing merge key was found in (the innermost list wins).
    fn in_list(self, path: &[String]) -> Self {
        match self {
            SmpError::MissingMergeKey {
                message,
                key,
                list: None,
            } => SmpError::MissingMergeKey {
                message,
                key,
                list: Some(path.join(".")),
            },
            other => other,
        }
    }
}

impl std::fmt::Display for SmpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SmpError::BadRequest(m) | SmpError::Unprocessable(m) | SmpError::Failed(m) => {
                f.write_str(m)
            }
            SmpError::MissingMergeKey {
                message,
                key,
                list: Some(list),
            } => write!(
                f,
                "{list}: every item of this list needs its merge key {key:?}: {message}"
            ),
            SmpError::MissingMergeKey { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for SmpError {}

impl From<SmpError> for ApiError {
    fn from(e: SmpError) -> Self {
        match e {
            SmpError::BadRequest(m) => ApiError::bad_request(m),
            SmpError::Unprocessable(_) => rejected_patch(),
            SmpError::Failed(m) => ApiError::bad_request(m),
            missing @ SmpError::MissingMergeKey { .. } => {
                ApiError::bad_request(missing.to_string())
            }
        }
    }
}

/// Decodes a strategic merge patch body and applies it to `original`. Without a strategy every
/// list is replaced. An undecodable or non-object body is a 400 with Go's decoder text; a
/// `null` body changes nothing.
pub fn apply_strategic_merge_patch(
    original: &Value,
    body: &[u8],
    strategy: Option<&dyn MergeStrategy>,
) -> Result<Value, ApiError> {
    let patch = decode_json(body).map_err(ApiError::bad_request)?;
    match &patch {
        Value::Object(_) => {}
        Value::Null => return Ok(original.clone()),
        other => {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_kind(other)
            )));
        }
    }
    let strategy = strategy.unwrap_or(&ReplaceLists);
    Ok(strategic_merge(original, &patch, strategy)?)
}

/// Applies a decoded strategic merge patch (an object) to `original`.
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    strategy: &dyn MergeStrategy,
) -> Result<Value, SmpError> {
    let original = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let patch = match patch {
        Value::Object(m) => m.clone(),
        Value::Null => return Ok(Value::Object(original)),
        other => {
            return Err(SmpError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_json_kind(other)
            )));
        }
    };
    let engine = Engine { strategy };
    let mut path = Vec::new();
    engine
        .merge_map(original, patch, &mut path)
        .map(Value::Object)
}

struct Engine<'a> {
    strategy: &'a dyn MergeStrategy,
}

impl Engine<'_> {
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Map<String, Value>, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            match directive.as_str() {
                Some("replace") => {
                    patch.remove(DIRECTIVE_MARKER);
                    return Ok(strip_map(patch));
                }
                Some("delete") => return Ok(Map::new()),
                // Upstream rejects `$patch: merge` in maps; merging is the default anyway.
                Some("merge") => {
                    patch.remove(DIRECTIVE_MARKER);
                }
                _ => {
                    return Err(SmpError::Failed(format!(
                        "unknown patch type: {} in map: {}",
                        go_fmt(directive),
                        go_fmt_map(&patch)
                    )));
                }
            }
        }

        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch, path)?;

        for (key, patch_value) in patch {
            let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
                (
                    extract_key(&key, DELETE_FROM_PRIMITIVE_LIST, ERR_BAD_PRIMITIVE_LIST)?,
                    true,
                )
            } else {
                (key, false)
            };

            if patch_value.is_null() {
                original.remove(&key);
                continue;
            }

            let Some(original_value) = original.remove(&key) else {
                if let Some(v) = strip(patch_value).filter(|_| !is_delete_list) {
                    original.insert(key, v);
                }
                continue;
            };

            match (original_value, patch_value) {
                (Value::Object(o), Value::Object(p)) => {
                    path.push(key.clone());
                    let merged = self.merge_map(o, p, path);
                    path.pop();
                    original.insert(key, Value::Object(merged?));
                }
                (Value::Array(o), Value::Array(p)) => {
                    path.push(key.clone());
                    let strategy = self.strategy.list_strategy(path);
                    let merged = if strategy.is_merge() || is_delete_list {
                        self.merge_slice(o, p, &strategy, is_delete_list, path)
                            .map(|(merged, _)| merged)
                            .map_err(|e| e.in_list(path))
                    } else {
                        Ok(strip_list(p))
                    };
                    path.pop();
                    original.insert(key, Value::Array(merged?));
                }
                (original_value, patch_value) => {
                    if is_delete_list {
                        // Only lists can be deleted from; anything else stays as it was.
                        original.insert(key, original_value);
                    } else if let Some(v) = strip(patch_value) {
                        original.insert(key, v);
                    }
                }
            }
        }
        Ok(original)
    }

    /// Processes `$setElementOrder/<list>` directives together with their lists (upstream's
    /// `mergePatchIntoOriginal`), removing both from the patch.
    fn merge_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<(), SmpError> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for directive_key in keys {
            let Some(order_value) = patch.remove(&directive_key) else {
                continue;
            };
            let Value::Array(order) = order_value else {
                return Err(SmpError::Failed(bad_arg_type(
                    "[]interface {}",
                    &order_value,
                )));
            };
            let list_key =
                extract_key(&directive_key, SET_ELEMENT_ORDER, ERR_BAD_SET_ELEMENT_ORDER)?;
            let original_list = match original.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(SmpError::Failed(bad_arg_type("[]interface {}", other))),
            };
            let patch_list = match patch.get(&list_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(SmpError::Failed(bad_arg_type("[]interface {}", other))),
            };

            path.push(list_key.clone());
            let result = self
                .order_list(original_list, patch_list, &order, path)
                .map_err(|e| e.in_list(path));
            path.pop();
            if let Some(list) = result? {
                original.insert(list_key.clone(), Value::Array(list));
            }
            patch.remove(&list_key);
        }
        Ok(())
    }

    fn order_list(
        &self,
        original_list: Option<Vec<Value>>,
        patch_list: Option<Vec<Value>>,
        order: &[Value],
        path: &[String],
    ) -> Result<Option<Vec<Value>>, SmpError> {
        let strategy = self.strategy.list_strategy(path);
        let merge_key = strategy.merge_key();
        validate_patch_with_set_order_list(patch_list.as_deref().unwrap_or(&[]), order, merge_key)?;

        let mut server_order = original_list.clone().unwrap_or_default();
        let patch_items_all = patch_list.clone().unwrap_or_default();
        let merged = match (original_list, patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => strip_list(p),
            (Some(o), Some(p)) => {
                if strategy.is_merge() {
                    let mut path = path.to_vec();
                    let (merged, original_view) =
                        self.merge_slice(o, p, &strategy, false, &mut path)?;
                    server_order = original_view;
                    merged
                } else {
                    strip_list(p)
                }
            }
            (None, None) => return Ok(None),
        };
        if server_order.is_empty() && patch_items_all.is_empty() {
            return Ok(Some(merged));
        }
        slice_element_kind(&server_order, &patch_items_all)?;

        let (patch_items, server_only) = partition(merged, order, merge_key)?;
        normalize_element_order(patch_items, server_only, order, &server_order, merge_key).map(Some)
    }

    /// Merges two lists. Returns the merged list and the original list as upstream's caller
    /// observes it afterwards: upstream deletes and appends in place in the original slice's
    /// backing array, so for the `$setElementOrder` pass the "live order" is the kept elements
    /// followed by as many appended elements as were deleted. Reproducing that keeps element
    /// order identical to upstream's when a patch both deletes and adds elements.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        strategy: &ListStrategy,
        is_delete_list: bool,
        path: &mut Vec<String>,
    ) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
        if original.is_empty() && patch.is_empty() {
            return Ok((original, Vec::new()));
        }
        let kind = slice_element_kind(&original, &patch)?;

        if kind != Kind::Object {
            if is_delete_list {
                let kept = original
                    .iter()
                    .filter(|v| !patch.contains(v))
                    .cloned()
                    .collect();
                return Ok((kept, original));
            }
            let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
            for v in original.iter().chain(patch.iter()) {
                if !merged.contains(v) {
                    merged.push(v.clone());
                }
            }
            let (patch_items, server_only) = partition(merged, &patch, None)?;
            let merged =
                normalize_element_order(patch_items, server_only, &patch, &original, None)?;
            return Ok((merged, original));
        }

        let Some(key) = strategy.merge_key() else {
            return Err(SmpError::Failed(format!(
                "cannot merge lists without merge key for {}",
                path.join(".")
            )));
        };
        let input = original.clone();
        let special = merge_slice_with_special_elements(original, patch, key)?;
        let (merged, appended) = self.merge_slice_without_special_elements(
            special.original.clone(),
            &special.patch,
            key,
            path,
        )?;
        let original_view = if special.replaced {
            input
        } else {
            let mut view = special.original.clone();
            view.extend(appended.into_iter().take(special.deleted));
            view
        };
        let (patch_items, server_only) = partition(merged, &special.patch, Some(key))?;
        let merged = normalize_element_order(
            patch_items,
            server_only,
            &special.patch,
            &special.original,
            Some(key),
        )?;
        Ok((merged, original_view))
    }

    fn merge_slice_without_special_elements(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        key: &str,
        path: &mut Vec<String>,
    ) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
        let mut appended = Vec::new();
        for item in patch {
            let Value::Object(item_map) = item else {
                return Err(SmpError::Failed(bad_arg_type(
                    "map[string]interface {}",
                    item,
                )));
            };
            let Some(key_value) = item_map.get(key) else {
                return Err(no_merge_key(item_map, key));
            };
            let found = original
                .iter()
                .position(|e| e.as_object().and_then(|m| m.get(key)) == Some(key_value));
            match found {
                Some(idx) => {
                    let current = std::mem::take(&mut original[idx]);
                    let current = match current {
                        Value::Object(m) => m,
                        _ => Map::new(),
                    };
                    original[idx] =
                        Value::Object(self.merge_map(current, item_map.clone(), path)?);
                }
                None => {
                    if let Some(v) = strip(item.clone()) {
                        original.push(v.clone());
                        appended.push(v);
                    }
                }
            }
        }
        Ok((original, appended))
    }
}

/// The outcome of [`merge_slice_with_special_elements`].
struct SpecialElements {
    /// The original list after deletions (or the replacement list).
    original: Vec<Value>,
    /// The patch elements without directives.
    patch: Vec<Value>,
    /// How many original elements `$patch: delete` removed.
    deleted: usize,
    /// Whether `$patch: replace` was given.
    replaced: bool,
}

/// Handles `$patch` elements of a merged list of objects: deletions are applied to the original,
/// `replace` makes the remaining patch elements the whole list.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<SpecialElements, SmpError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    let mut deleted = 0;
    for item in patch {
        let Value::Object(mut map) = item else {
            return Err(SmpError::Failed(bad_arg_type(
                "map[string]interface {}",
                &item,
            )));
        };
        let Some(directive) = map.get(DIRECTIVE_MARKER) else {
            plain.push(Value::Object(map));
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key_value) = map.get(key) else {
                    return Err(no_merge_key(&map, key));
                };
                let before = original.len();
                original.retain(|e| e.as_object().and_then(|m| m.get(key)) != Some(key_value));
                deleted += before - original.len();
            }
            Some("replace") => replace = true,
            // Upstream answers "merging lists cannot yet be specified in the patch"; an element
            // marked `merge` is merged like an unmarked one here.
            Some("merge") => {
                map.remove(DIRECTIVE_MARKER);
                plain.push(Value::Object(map));
            }
            _ => {
                return Err(SmpError::Failed(format!(
                    "unknown patch type: {} in map: {}",
                    go_fmt(directive),
                    go_fmt_map(&map)
                )));
            }
        }
    }
    if replace {
        return Ok(SpecialElements {
            original: strip_list(plain),
            patch: Vec::new(),
            deleted,
            replaced: true,
        });
    }
    Ok(SpecialElements {
        original,
        patch: plain,
        deleted,
        replaced: false,
    })
}

/// Applies `$retainKeys`: keys of `original` not listed are cleared; every key the patch sets
/// must be listed.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(list) = retain else {
        return Err(SmpError::BadRequest(ERR_BAD_RETAIN_KEYS.to_string()));
    };
    let retained: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained.contains(&k.as_str()) {
            return Err(SmpError::BadRequest(ERR_BAD_RETAIN_KEYS.to_string()));
        }
    }
    original.retain(|k, _| retained.contains(&k.as_str()));
    Ok(())
}

/// `$prefix/<key>` → `<key>`; anything else is the given format error.
fn extract_key(s: &str, prefix: &str, err: &str) -> Result<String, SmpError> {
    match s.split_once('/') {
        Some((p, key)) if p == prefix => Ok(key.to_string()),
        _ => Err(SmpError::BadRequest(err.to_string())),
    }
}

/// Checks that the patch list's elements appear in the `$setElementOrder` list in the same
/// relative order (upstream's `validatePatchWithSetOrderList`).
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), SmpError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let mut non_delete: Vec<&Value> = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if merge_key.is_some() {
            let Value::Object(m) = item else {
                return Err(SmpError::Failed(bad_arg_type(
                    "map[string]interface {}",
                    item,
                )));
            };
            if m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        non_delete.push(item);
    }
    let (mut pi, mut si) = (0, 0);
    while pi < non_delete.len() && si < order.len() {
        if non_delete[pi]
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(non_delete[pi], &order[si], merge_key)? {
            pi += 1;
        }
        si += 1;
    }
    if pi < non_delete.len() && si >= order.len() {
        return Err(SmpError::Failed(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            go_fmt_list(patch_list),
            go_fmt_list(order)
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, key: Option<&str>) -> Result<bool, SmpError> {
    let Some(key) = key else {
        return Ok(left == right);
    };
    let Value::Object(l) = left else {
        return Err(SmpError::Failed(bad_arg_type(
            "map[string]interface {}",
            left,
        )));
    };
    let Value::Object(r) = right else {
        return Err(SmpError::Failed(bad_arg_type(
            "map[string]interface {}",
            right,
        )));
    };
    let Some(lv) = l.get(key) else {
        return Err(no_merge_key(l, key));
    };
    let Some(rv) = r.get(key) else {
        return Err(no_merge_key(r, key));
    };
    Ok(lv == rv)
}

/// Splits `merged` into the elements present in `by` and the server-only rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), SmpError> {
    let mut in_patch = Vec::with_capacity(merged.len());
    let mut server_only = Vec::with_capacity(merged.len());
    for item in merged {
        let present = match merge_key {
            None => by.contains(&item),
            Some(key) => {
                let Value::Object(m) = &item else {
                    return Err(SmpError::Failed(bad_arg_type(
                        "map[string]interface {}",
                        &item,
                    )));
                };
                let Some(key_value) = m.get(key) else {
                    return Err(no_merge_key(m, key));
                };
                by.iter()
                    .any(|b| b.as_object().and_then(|bm| bm.get(key)) == Some(key_value))
            }
        };
        if present {
            in_patch.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((in_patch, server_only))
}

/// Position of `item` in `list`: by merge key value for objects, by value otherwise.
fn index_of(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    match merge_key {
        None => list.iter().position(|v| v == item),
        Some(key) => {
            let wanted = item.as_object().and_then(|m| m.get(key));
            list.iter()
                .position(|v| v.as_object().and_then(|m| m.get(key)) == wanted)
        }
    }
}

/// Sorts the patch elements by the patch order and the server-only ones by the server order,
/// then interleaves them (upstream's `normalizeElementOrder` / `mergeSortedSlice`).
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, SmpError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key)?;

    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_of(server_order, l, merge_key),
                    index_of(server_order, r, merge_key),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(v) = next {
            out.push(v);
        }
    }
    Ok(out)
}

fn normalize_slice_order(
    items: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, SmpError> {
    let mut items = items;
    let mut to_delete = Vec::new();
    if let Some(key) = merge_key {
        for item in items.iter().chain(order.iter()) {
            let Value::Object(m) = item else {
                return Err(SmpError::Failed(bad_arg_type(
                    "map[string]interface {}",
                    item,
                )));
            };
            if !m.contains_key(key) {
                return Err(no_merge_key(m, key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = items
            .into_iter()
            .partition(|v| v.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some("delete"));
        items = keep;
        to_delete = delete;
    }
    let mut keyed: Vec<(usize, Value)> = items
        .into_iter()
        .map(|v| (index_of(order, &v, merge_key).unwrap_or(usize::MAX), v))
        .collect();
    keyed.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    out.extend(to_delete);
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Object,
}

/// The common element kind of the lists (upstream's `sliceElementType`).
fn slice_element_kind(original: &[Value], patch: &[Value]) -> Result<Kind, SmpError> {
    let mut kind = None;
    for v in original.iter().chain(patch.iter()) {
        let k = match v {
            Value::Array(_) => {
                return Err(SmpError::Unprocessable(ERR_NO_LIST_OF_LISTS.to_string()));
            }
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Object(_) => Kind::Object,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(SmpError::Failed(format!(
                    "list element types are not identical: [{} {}]",
                    go_fmt_list(original),
                    go_fmt_list(patch)
                )));
            }
            Some(_) => {}
        }
    }
    kind.ok_or_else(|| SmpError::Failed("no elements in any of the given slices".to_string()))
}

/// A patch value inserted where there is nothing to merge with: drops `null` members and
/// directive keys, drops maps marked `$patch: delete` (and, as upstream, maps with an unknown
/// `$patch`), keeps the content of maps marked `replace` / `merge`.
fn strip(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            let directive = map.get(DIRECTIVE_MARKER).map(Value::as_str);
            if directive.is_some_and(|d| !matches!(d, Some("replace" | "merge"))) {
                return None;
            }
            Some(Value::Object(strip_map(map)))
        }
        Value::Array(items) => Some(Value::Array(strip_list(items))),
        other => Some(other),
    }
}

fn strip_map(map: Map<String, Value>) -> Map<String, Value> {
    map.into_iter()
        .filter(|(k, v)| {
            !v.is_null()
                && k != DIRECTIVE_MARKER
                && k != RETAIN_KEYS
                && !k.starts_with(SET_ELEMENT_ORDER)
                && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        })
        .filter_map(|(k, v)| strip(v).map(|v| (k, v)))
        .collect()
}

fn strip_list(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().filter_map(strip).collect()
}

// --- upstream error texts --------------------------------------------------------------------

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(m: &Map<String, Value>, key: &str) -> SmpError {
    SmpError::MissingMergeKey {
        message: format!(
            "map: {} does not contain declared merge key: {key}",
            go_fmt_map(m)
        ),
        key: key.to_string(),
        list: None,
    }
}

/// `mergepatch.ErrBadArgType`, with Go's type names.
fn bad_arg_type(expected: &str, actual: &Value) -> String {
    let actual = match actual {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    };
    format!("expected a {expected}, but received a {actual}")
}

/// Go's `%v` of a decoded JSON value.
fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (None, Some(u), _) => u.to_string(),
            (None, None, Some(f)) => go_fmt_float(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => go_fmt_list(items),
        Value::Object(m) => go_fmt_map(m),
    }
}

fn go_fmt_list(items: &[Value]) -> String {
    let parts: Vec<String> = items.iter().map(go_fmt).collect();
    format!("[{}]", parts.join(" "))
}

fn go_fmt_map(m: &Map<String, Value>) -> String {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let parts: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{k}:{}", m.get(k).map(go_fmt).unwrap_or_default()))
        .collect();
    format!("map[{}]", parts.join(" "))
}

/// Go's `%v` of a float64 (`%g` with the shortest representation).
fn go_fmt_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return f.to_string();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    f.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(original: Value, patch: Value, strategy: &dyn MergeStrategy) -> Value {
        match strategic_merge(&original, &patch, strategy) {
            Ok(v) => v,
            Err(e) => panic!("patch failed: {e}"),
        }
    }

    /// A strategy for upstream's test type: `mergingList` by `name`, `mergingIntList` as a set.
    struct TestStrategy;
    impl MergeStrategy for TestStrategy {
        fn list_strategy(&self, path: &[String]) -> ListStrategy {
            match path.last().map(String::as_str) {
                Some("mergingList" | "mergeItemPtr") => ListStrategy::merge("name"),
                Some("mergingIntList") => ListStrategy::MergePrimitives,
                _ => ListStrategy::Replace,
            }
        }
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ref", "finalizers": ["a", "b"]},
            "spec": {
                "replicas": 1,
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}
                },
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "nginx",
                                "image": "nginx:1.27",
                                "env": [{"name": "A", "value": "1"}],
                                "ports": [{"containerPort": 80, "protocol": "TCP"}]
                            },
                            {"name": "sidecar", "image": "busybox:1.36"}
                        ],
                        "tolerations": [{"key": "k", "operator": "Exists"}]
                    }
                }
            }
        })
    }

    fn containers(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    fn builtin() -> BuiltinStrategy<'static> {
        BuiltinStrategy::new(crate::kinds::lists::test_info("Deployment"))
    }

    #[test]
    fn change_one_image_keeps_other_containers() {
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37"}]}}}}),
            &builtin(),
        );
        let mut want = deployment();
        want["spec"]["template"]["spec"]["containers"][1]["image"] = json!("busybox:1.37");
        assert_eq!(out, want);
    }

    #[test]
    fn add_env_var_merges_by_name() {
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[
                {"name":"nginx","env":[{"name":"B","value":"2"},{"name":"A","value":"one"}]}
            ]}}}}),
            &builtin(),
        );
        assert_eq!(
            containers(&out)[0]["env"],
            json!([{"name": "B", "value": "2"}, {"name": "A", "value": "one"}])
        );
        assert_eq!(containers(&out)[0]["image"], "nginx:1.27");
        assert_eq!(containers(&out)[1]["name"], "sidecar");

        // A lone new element lands first, as upstream (kubectl patch docs show the same).
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[
                {"name":"nginx","env":[{"name":"B","value":"2"}]}
            ]}}}}),
            &builtin(),
        );
        assert_eq!(
            containers(&out)[0]["env"],
            json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
        );
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"redis","image":"redis"}]}}}}),
            &builtin(),
        );
        let names: Vec<&Value> = containers(&out)
            .as_array()
            .map(|a| a.iter().map(|c| &c["name"]).collect())
            .unwrap_or_default();
        assert_eq!(names, vec!["redis", "nginx", "sidecar"]);
    }

    #[test]
    fn delete_container_with_directive() {
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"nginx","$patch":"delete"}]}}}}),
            &builtin(),
        );
        assert_eq!(
            containers(&out),
            &json!([{"name": "sidecar", "image": "busybox:1.36"}])
        );
    }

    #[test]
    fn kubectl_apply_style_patch() {
        // What `kubectl apply` sends after the user switched to Recreate, changed the sidecar
        // image, added a container before it and dropped the nginx env var.
        let patch = json!({
            "spec": {
                "strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null},
                "template": {"spec": {
                    "$setElementOrder/containers": [{"name": "nginx"}, {"name": "logger"}, {"name": "sidecar"}],
                    "containers": [
                        {"name": "nginx", "env": [{"name": "A", "$patch": "delete"}]},
                        {"name": "logger", "image": "fluentbit:3"},
                        {"name": "sidecar", "image": "busybox:1.37"}
                    ]
                }}
            }
        });
        let out = smp(deployment(), patch, &builtin());
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(
            containers(&out),
            &json!([
                {"name": "nginx", "image": "nginx:1.27", "env": [], "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "logger", "image": "fluentbit:3"},
                {"name": "sidecar", "image": "busybox:1.37"}
            ])
        );
        // Untouched lists are kept; tolerations would have been replaced.
        assert_eq!(
            out["spec"]["template"]["spec"]["tolerations"],
            json!([{"key": "k", "operator": "Exists"}])
        );
    }

    #[test]
    fn set_element_order_reorders_without_content_change() {
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "nginx"}]
            }}}}),
            &builtin(),
        );
        assert_eq!(containers(&out)[0]["name"], "sidecar");
        assert_eq!(containers(&out)[1]["name"], "nginx");
    }

    #[test]
    fn retain_keys_rejects_unlisted_patch_keys() {
        let err = strategic_merge(
            &deployment(),
            &json!({"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{"maxSurge":1}}}}),
            &builtin(),
        )
        .err();
        assert_eq!(
            err,
            Some(SmpError::BadRequest(
                "invalid patch format of retainKeys".into()
            ))
        );
    }

    #[test]
    fn finalizers_and_primitive_deletes() {
        let out = smp(
            deployment(),
            json!({"metadata":{"finalizers":["c","a"]}}),
            &builtin(),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let out = smp(
            deployment(),
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}),
            &builtin(),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        // Deleting from a list that does not exist adds nothing.
        let out = smp(
            json!({"metadata":{}}),
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}),
            &builtin(),
        );
        assert_eq!(out, json!({"metadata":{}}));
        let err = strategic_merge(
            &deployment(),
            &json!({"metadata":{"$deleteFromPrimitiveList":["a"]}}),
            &builtin(),
        )
        .err();
        assert_eq!(
            err,
            Some(SmpError::BadRequest(
                "invalid patch format of primitive list".into()
            ))
        );
    }

    #[test]
    fn replace_and_delete_directives_on_maps_and_lists() {
        let out = smp(
            deployment(),
            json!({"spec":{"strategy":{"$patch":"replace","type":"Recreate"}}}),
            &builtin(),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"only","image":"x"},{"$patch":"replace"}]}}}}),
            &builtin(),
        );
        assert_eq!(containers(&out), &json!([{"name": "only", "image": "x"}]));
        let out = smp(
            deployment(),
            json!({"metadata":{"finalizers":null},"spec":{"template":{"metadata":{"$patch":"delete"}}}}),
            &builtin(),
        );
        assert_eq!(out["spec"]["template"]["metadata"], json!({}));
        assert!(out["metadata"].get("finalizers").is_none());
        // `$patch: merge` is accepted as the default.
        let out = smp(
            deployment(),
            json!({"spec":{"strategy":{"$patch":"merge","type":"Recreate"}}}),
            &builtin(),
        );
        assert_eq!(out["spec"]["strategy"]["type"], "Recreate");
        assert_eq!(out["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    }

    #[test]
    fn without_strategy_lists_are_replaced() {
        let out = smp(
            deployment(),
            json!({"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"x"}]}}}}),
            &ReplaceLists,
        );
        assert_eq!(
            containers(&out),
            &json!([{"name": "sidecar", "image": "x"}])
        );
        let out = apply_strategic_merge_patch(
            &deployment(),
            br#"{"spec":{"template":{"spec":{"tolerations":[]}}}}"#,
            None,
        );
        assert!(out.is_ok_and(|v| v["spec"]["template"]["spec"]["tolerations"] == json!([])));
    }

    #[test]
    fn new_values_are_stripped_of_nulls_and_directives() {
        let out = smp(
            json!({}),
            json!({"spec":{"a":null,"list":[{"x":null,"y":1},{"$patch":"delete","name":"z"}],"$retainKeys":["list"]}}),
            &ReplaceLists,
        );
        assert_eq!(out, json!({"spec":{"list":[{"y":1}]}}));
    }

    #[test]
    fn errors_match_upstream() {
        let err = strategic_merge(
            &deployment(),
            &json!({"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}),
            &builtin(),
        )
        .err();
        assert_eq!(
            err,
            Some(SmpError::MissingMergeKey {
                message: "map: map[image:x] does not contain declared merge key: name".into(),
                key: "name".into(),
                list: Some("spec.template.spec.containers".into()),
            })
        );
        // Upstream answers 500 here; a client's mistake is a 400 naming the key and the list.
        let api: Option<ApiError> = err.map(Into::into);
        assert_eq!(
            api.map(|e| (e.code, e.reason, e.message)),
            Some((
                400,
                "BadRequest",
                "spec.template.spec.containers: every item of this list needs its merge key \"name\": map: map[image:x] does not contain declared merge key: name".into()
            ))
        );
        // The innermost list is named when lists nest.
        let err = strategic_merge(
            &deployment(),
            &json!({"spec":{"template":{"spec":{"containers":[{"name":"nginx","ports":[{"protocol":"TCP"}]}]}}}}),
            &builtin(),
        )
        .err();
        assert!(
            matches!(&err, Some(SmpError::MissingMergeKey { list: Some(l), key, .. }) if l == "spec.template.spec.containers.ports" && key == "containerPort"),
            "{err:?}"
        );

        let err = strategic_merge(
            &json!({"mergingList":[{"name":1}]}),
            &json!({"mergingList":[[1]]}),
            &TestStrategy,
        )
        .err();
        let api: Option<ApiError> = err.map(Into::into);
        assert_eq!(api.map(|e| (e.code, e.reason)), Some((422, "Invalid")));

        let body_err = |body: &[u8]| {
            apply_strategic_merge_patch(&deployment(), body, Some(&builtin()))
                .err()
                .map(|e| (e.code, e.message))
        };
        assert_eq!(
            body_err(b"[]"),
            Some((
                400,
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            ))
        );
        assert_eq!(
            body_err(b"{\"spec\":"),
            Some((400, "unexpected end of JSON input".into()))
        );
        assert_eq!(
            body_err(br#"{"spec":{"strategy":{"$patch":"bogus"}}}"#),
            Some((
                400,
                "unknown patch type: bogus in map: map[$patch:bogus]".into()
            ))
        );
        assert_eq!(
            apply_strategic_merge_patch(&deployment(), b"null", Some(&builtin())).ok(),
            Some(deployment())
        );
    }

    // Cases ported from upstream's strategicpatch tests (server-side application of the
    // two-way patch).

    #[test]
    fn upstream_merge_lists_of_maps() {
        let out = smp(
            json!({"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}),
            json!({
                "$setElementOrder/mergingList":[{"name":4},{"name":1},{"name":2},{"name":3}],
                "mergingList":[{"name":4,"value":4},{"name":3,"value":3}]
            }),
            &TestStrategy,
        );
        assert_eq!(
            out,
            json!({"mergingList":[
                {"name":4,"value":4},
                {"name":1,"other":"a"},
                {"name":2,"value":2,"other":"b"},
                {"name":3,"value":3}
            ]})
        );
    }

    #[test]
    fn upstream_add_map_and_delete_map() {
        let out = smp(
            json!({"mergingList":[{"name":1},{"name":2,"other":"b"},{"name":4,"other":"c"}]}),
            json!({
                "$setElementOrder/mergingList":[{"name":2},{"name":3}],
                "mergingList":[{"name":3},{"name":1,"$patch":"delete"}]
            }),
            &TestStrategy,
        );
        assert_eq!(
            out,
            json!({"mergingList":[{"name":2,"other":"b"},{"name":4,"other":"c"},{"name":3}]})
        );
    }

    #[test]
    fn upstream_set_element_order_errors_and_missing_items() {
        let err = strategic_merge(
            &json!({"mergingList":[{"name":1},{"name":3},{"name":2}]}),
            &json!({
                "$setElementOrder/mergingList":[{"name":1},{"name":2},{"name":3}],
                "mergingList":[{"name":3,"value":3},{"name":1,"value":1}]
            }),
            &TestStrategy,
        )
        .err();
        assert!(err.is_some_and(|e| e.to_string().contains("doesn't match")));

        let out = smp(
            json!({"mergingList":[{"name":1},{"name":3}]}),
            json!({
                "$setElementOrder/mergingList":[{"name":3},{"name":2},{"name":1}],
                "mergingList":[{"name":3,"value":3},{"name":1,"value":1}]
            }),
            &TestStrategy,
        );
        assert_eq!(
            out,
            json!({"mergingList":[{"name":3,"value":3},{"name":1,"value":1}]})
        );
        let out = smp(
            json!({"mergingIntList":[1,3]}),
            json!({"$setElementOrder/mergingIntList":[3,2,1]}),
            &TestStrategy,
        );
        assert_eq!(out, json!({"mergingIntList":[3,1]}));
    }

    #[test]
    fn upstream_delete_and_reorder() {
        let out = smp(
            json!({
                "mergingList":[{"name":"a","value":"a"},{"name":"b","value":"b"}],
                "mergeItemPtr":[{"name":"c","value":"c"},{"name":"d","value":"d"}]
            }),
            json!({
                "$setElementOrder/mergingList":[{"name":"b"}],
                "$setElementOrder/mergeItemPtr":[{"name":"d"},{"name":"c"}],
                "mergingList":[{"$patch":"delete","name":"a"}]
            }),
            &TestStrategy,
        );
        assert_eq!(
            out,
            json!({
                "mergingList":[{"name":"b","value":"b"}],
                "mergeItemPtr":[{"name":"d","value":"d"},{"name":"c","value":"c"}]
            })
        );
    }

    #[test]
    fn upstream_int_lists() {
        let out = smp(
            json!({"mergingIntList":[1,2,3]}),
            json!({"$setElementOrder/mergingIntList":[1,4,2,3],"mergingIntList":[4]}),
            &TestStrategy,
        );
        assert_eq!(out, json!({"mergingIntList":[1,4,2,3]}));
        let out = smp(
            json!({"mergingIntList":[1,2,3]}),
            json!({"$setElementOrder/mergingIntList":[1,3],"$deleteFromPrimitiveList/mergingIntList":[2]}),
            &TestStrategy,
        );
        assert_eq!(out, json!({"mergingIntList":[1,3]}));
        let out = smp(
            json!({"nonMergingIntList":[1,2,3]}),
            json!({"$deleteFromPrimitiveList/nonMergingIntList":[2]}),
            &TestStrategy,
        );
        assert_eq!(out, json!({"nonMergingIntList":[1,3]}));
    }

    #[test]
    fn builtin_strategy_paths() {
        let s = |kind: &str, path: &[&str]| {
            let path: Vec<String> = path.iter().map(|p| p.to_string()).collect();
            BuiltinStrategy::new(crate::kinds::lists::test_info(kind)).list_strategy(&path)
        };
        assert_eq!(
            s("Pod", &["spec", "containers"]),
            ListStrategy::merge("name")
        );
        assert_eq!(
            s("Pod", &["spec", "containers", "ports"]),
            ListStrategy::merge("containerPort")
        );
        assert_eq!(
            s("Pod", &["spec", "initContainers", "volumeMounts"]),
            ListStrategy::merge("mountPath")
        );
        assert_eq!(s("Pod", &["spec", "tolerations"]), ListStrategy::Replace);
        assert_eq!(
            s("ServiceAccount", &["secrets"]),
            ListStrategy::merge("name")
        );
        assert_eq!(
            s("ServiceAccount", &["imagePullSecrets"]),
            ListStrategy::Replace
        );
        assert_eq!(
            s("Pod", &["spec", "containers", "envFrom"]),
            ListStrategy::Replace
        );
        assert_eq!(
            s("Pod", &["status", "conditions"]),
            ListStrategy::merge("type")
        );
        assert_eq!(
            s(
                "CronJob",
                &["spec", "jobTemplate", "spec", "template", "spec", "volumes"]
            ),
            ListStrategy::merge("name")
        );
        assert_eq!(
            s("StatefulSet", &["spec", "template", "spec", "hostAliases"]),
            ListStrategy::merge("ip")
        );
        assert_eq!(
            s(
                "DaemonSet",
                &["spec", "template", "spec", "topologySpreadConstraints"]
            ),
            ListStrategy::merge("topologyKey")
        );
        assert_eq!(
            s("Job", &["spec", "template", "metadata", "finalizers"]),
            ListStrategy::MergePrimitives
        );
        assert_eq!(
            s("Service", &["spec", "ports"]),
            ListStrategy::merge("port")
        );
        assert_eq!(
            s("ConfigMap", &["metadata", "ownerReferences"]),
            ListStrategy::merge("uid")
        );
        assert_eq!(
            s("ConfigMap", &["metadata", "managedFields"]),
            ListStrategy::Replace
        );
        assert_eq!(
            s("Deployment", &["spec", "template", "spec", "args"]),
            ListStrategy::Replace
        );
        assert_eq!(
            s("Deployment", &["status", "conditions"]),
            ListStrategy::merge("type")
        );
        assert_eq!(
            s("PodTemplate", &["template", "spec", "containers", "env"]),
            ListStrategy::merge("name")
        );
        assert_eq!(
            s("Node", &["status", "addresses"]),
            ListStrategy::merge("type")
        );
        assert_eq!(
            s("Namespace", &["spec", "finalizers"]),
            ListStrategy::Replace
        );
    }

    #[test]
    fn service_ports_and_pod_conditions() {
        let svc =
            json!({"kind":"Service","spec":{"ports":[{"port":80,"protocol":"TCP"},{"port":443}]}});
        let out = smp(
            svc,
            json!({"spec":{"ports":[{"port":443,"name":"https"}]}}),
            &BuiltinStrategy::new(crate::kinds::lists::test_info("Service")),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port":80,"protocol":"TCP"},{"port":443,"name":"https"}])
        );
        let pod = json!({"kind":"Pod","status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Initialized","status":"True"}]}});
        let out = smp(
            pod,
            json!({"status":{"conditions":[{"type":"Ready","status":"True"}]}}),
            &BuiltinStrategy::new(crate::kinds::lists::test_info("Pod")),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}])
        );
    }

    #[test]
    fn go_formatting() {
        assert_eq!(
            go_fmt(&json!({"b":[1,"x"],"a":null})),
            "map[a:<nil> b:[1 x]]"
        );
        assert_eq!(go_fmt_float(2.5), "2.5");
        assert_eq!(go_fmt_float(1_000_000.0), "1e+06");
        assert_eq!(go_fmt_float(123_456.0), "123456");
        assert_eq!(go_fmt_float(0.00001), "1e-05");
        assert_eq!(
            bad_arg_type("[]interface {}", &json!("x")),
            "expected a []interface {}, but received a string"
        );
    }
}
